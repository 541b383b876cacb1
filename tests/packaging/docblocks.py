"""The fenced code blocks of the repository's Markdown, and what each is marked to be.

A block runs by its info string: `python` (a script), `pycon` (a `>>>` session, its output
compared as doctest does, `...` matching anything), `lua` (lua5.4 with the built rock). Any other
block is run only when an HTML comment right above it says `<!-- run -->` (`sh`: bash, from the
repository's root); `text` (formats, output, trees) and `console` (transcripts) never run.
Whatever else does not run says why: `<!-- not run: REASON -->`. `<!-- before: CODE -->` (one
line) runs CODE first, in the same program: the context a fragment assumes (a client, a lock).
The server a block talks to is a throwaway one: every `redis://127.0.0.1:6379` in it is that
server's address."""

import os
import re
from dataclasses import dataclass, field
from typing import List, Optional

FENCE = re.compile(r"^(\s*)(`{3,})(\S*)\s*$")
MARKER = re.compile(r"^\s*<!--\s*(not run|run|before)\s*(?::\s*(.*?))?\s*-->\s*$")
RUN_BY_DEFAULT = ("python", "pycon", "lua")
NEVER_RUN = {"text": "formats, output and file trees, not code",
             "console": "a terminal transcript: a command and what it printed"}
DEFAULT_URL = re.compile(r"redis://127\.0\.0\.1:6379(?![0-9])")


@dataclass
class Block:
    doc: str
    line: int  # of the opening fence, 1-based
    lang: str
    code: str
    run: bool = False
    why_not: Optional[str] = None  # the reason it does not run
    before: List[str] = field(default_factory=list)
    problem: Optional[str] = None  # a block not marked as it must be

    @property
    def where(self):
        return f"{self.doc}:{self.line}"


def blocks(root, doc):
    with open(os.path.join(root, doc)) as f:
        lines = f.read().split("\n")
    found, i = [], 0
    while i < len(lines):
        m = FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        indent, fence, lang = m.groups()
        j = i + 1
        while j < len(lines) and not re.match(rf"^\s*{fence}\s*$", lines[j]):
            j += 1
        body = [ln[len(indent):] if ln.startswith(indent) else ln.lstrip() for ln in lines[i + 1:j]]
        block = Block(doc, i + 1, lang, "\n".join(body) + "\n")
        marks, k = [], i - 1
        while k >= 0 and MARKER.match(lines[k]):
            marks.insert(0, MARKER.match(lines[k]).groups())
            k -= 1
        classify(block, marks)
        found.append(block)
        i = j + 1
    return found


def classify(block, marks):
    kinds = {kind for kind, _ in marks}
    block.before = [arg for kind, arg in marks if kind == "before"]
    not_run = [arg for kind, arg in marks if kind == "not run"]
    if not_run:
        block.why_not = not_run[0]
        if not block.why_not:
            block.problem = "`<!-- not run -->` without a reason"
        return
    if block.lang in NEVER_RUN:
        block.why_not = NEVER_RUN[block.lang]
        if "run" in kinds or block.before:
            block.problem = f"a `{block.lang}` block cannot run"
        return
    if block.lang in RUN_BY_DEFAULT or ("run" in kinds and block.lang == "sh"):
        block.run = True
        return
    block.problem = (f"a `{block.lang or 'plain'}` block: mark it `<!-- run -->` (sh), "
                     "`<!-- not run: REASON -->`, or give it an info string that says what it is")


def with_server(code, port):
    return DEFAULT_URL.sub(f"redis://127.0.0.1:{port}", code)
