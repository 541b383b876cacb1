"""The Lua API reference of the docs site, read from the rock's own Lua sources.

The rock's public objects are the tables its modules pass to methods.wrap (luarocks/redlease/
methods.lua wraps their public methods: names not starting with "_", and not `new`), and the
module table `redlease` of luarocks/redlease/init.lua. Each public function is documented by the
`--` comment just above it; functions defined one after another with no blank line between them
share the comment above the first. tests/docs/test_site.py checks this list against the
functions the built rock really has, so the reference cannot drift from it."""

import html
import os
import re
from dataclasses import dataclass, field

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
ROCK = os.path.join(ROOT, "luarocks", "redlease")
MODULE = "redlease"

WRAP = re.compile(r'^methods\.wrap\((\w+),\s*"(\w+)"', re.M)
DEFINE = re.compile(r"^function\s+(\w+)([.:])(\w+)\s*\(([^)]*)\)")
ASSIGN = re.compile(r"^(\w+)\.(\w+)\s*=\s*(.+)$")
TABLE = re.compile(r"^local\s+(\w+)\s*=\s*\{")


@dataclass
class Function:
    name: str
    call: str  # how a program calls it: "lock:acquire(opts)"
    doc: str
    source: str  # "luarocks/redlease/lock.lua:29"


@dataclass
class Table:
    name: str  # the table in the source: "Lock"
    word: str  # what the docs call its objects: "lock"
    doc: str
    source: str
    functions: list = field(default_factory=list)


def public(name):
    """What methods.wrap wraps; and Lua's own convention for a module's version, _VERSION."""
    return (not name.startswith("_") and name != "new") or re.match(r"^_[A-Z]+$", name) is not None


def defined_params(folder, value):
    """The parameters of `function <value>(...)` in a Lua file of folder; None if none."""
    if not re.match(r"^\w+\.\w+$", value):
        return None
    for f in sorted(os.listdir(folder)):
        if f.endswith(".lua"):
            with open(os.path.join(folder, f)) as fh:
                m = re.search(r"^function\s+" + re.escape(value) + r"\s*\(([^)]*)\)", fh.read(),
                              re.M)
            if m:
                return m.group(1)
    return None


def comment_text(lines):
    return " ".join(re.sub(r"^--\s?", "", line).strip() for line in lines).strip()


def read_file(path):
    """{table name: [doc, [(name, "." or ":", parameters, doc, source, assigned)]]}, and the
    file's leading comment."""
    with open(path) as f:
        lines = f.read().split("\n")
    rel = os.path.relpath(path, ROOT)
    head = []
    for line in lines:
        if not line.startswith("--"):
            break
        head.append(line)
    tables, comment, shared, previous_ended = {}, [], "", False
    for i, line in enumerate(lines):
        if line.startswith("--"):
            comment.append(line)
            continue
        m = TABLE.match(line)
        if m:
            tables.setdefault(m.group(1), [comment_text(comment), []])
        defined = DEFINE.match(line)
        assigned = ASSIGN.match(line) if not defined else None
        if defined or assigned:
            if comment:
                shared = comment_text(comment)
            elif not previous_ended:
                shared = ""
            if defined:
                table, sep, name, params = defined.groups()
            else:  # Lock.with = with.lock: the parameters of the function it names
                (table, name, value), sep = assigned.groups(), "."
                params = defined_params(os.path.dirname(path), value.strip())
            tables.setdefault(table, ["", []])[1].append(
                (name, sep, params, shared, f"{rel}:{i + 1}", bool(assigned)))
        previous_ended = bool(line.strip()) and (
            bool(defined and re.search(r"\bend\s*$", line)) or line.startswith("end")
            or bool(assigned))
        comment = []
    return tables, comment_text(head)


def call_of(word, name, sep, params, method):
    if params is None:
        return f"{word}:{name}(...)" if method else f"{word}.{name}"
    args = [p.strip() for p in params.split(",") if p.strip()]
    if sep == "." and method and args:
        args = args[1:]  # Client.multi_lock(_, ...): called with a colon all the same
    return f"{word}{':' if method else '.'}{name}({', '.join(args)})"


def reference(root=ROCK):
    """The module table first, then each wrapped table: the lock's files first, then the rest."""
    out = []
    first = ["init.lua", "lock.lua", "guard.lua", "multilock.lua", "semaphore.lua", "latch.lua"]
    files = sorted(f for f in os.listdir(root) if f.endswith(".lua") and f not in first)
    for f in [f for f in first if os.path.exists(os.path.join(root, f))] + files:
        path = os.path.join(root, f)
        with open(path) as fh:
            wrapped = WRAP.findall(fh.read())
        tables, head = read_file(path)
        rel = os.path.relpath(path, ROOT)
        if f == "init.lua" and MODULE in tables:
            doc, found = tables[MODULE]
            module = Table(MODULE, MODULE, doc or head, rel)
            for name, sep, params, text, source, is_field in found:
                if public(name):  # a field (redlease.logger = ...) or a function
                    call = f"{MODULE}.{name}" if is_field else call_of(MODULE, name, sep, params,
                                                                         False)
                    module.functions.append(Function(name, call, text, source))
            out.append(module)
        for table, word in wrapped:
            doc, found = tables.get(table, ["", []])
            entry = Table(table, word, doc or (head if len(wrapped) == 1 else ""), rel)
            for name, sep, params, text, source, _ in found:
                if public(name) and not name.startswith("__"):
                    entry.functions.append(
                        Function(name, call_of(word, name, sep, params, True), text, source))
            out.append(entry)
    return out


def escape(text):
    """Prose from a Lua comment, safe in Markdown: no HTML, no emphasis (`code` kept as is)."""
    parts = re.split(r"(`[^`]*`)", text)
    return "".join(p if p.startswith("`") else
                   html.escape(p, quote=False).replace("*", r"\*").replace("|", r"\|")
                   for p in parts)


def markdown(tables):
    out = []
    for t in tables:
        out += [f"## {t.name}", "", f"`{t.source}`" + (f": {escape(t.doc)}" if t.doc else ""), ""]
        for fn in t.functions:
            out += [f"### `{fn.call}` {{ #{t.name.lower()}-{fn.name} }}", "",
                    escape(fn.doc) if fn.doc else "", "", f"<small>`{fn.source}`</small>", ""]
    return "\n".join(out)
