"""What the docs name exists: every repository path that a Markdown file of the repository
names in backticks or links to (from the root, or from the file's own folder; `*` globs and
`<version>`-style placeholders allowed), and the wire contract they cite is docs/protocol.md."""

import glob
import os
import re
import subprocess

from pkgkit import ROOT

TOP = ("csrc", "include", "python", "luarocks", "tests", "examples", "bench", "docs", "scripts",
       "mk", "tools", "dist")
TOP_FILES = ("Makefile", "setup.py", "pyproject.toml", "README.md", "CHANGELOG.md", "LICENSE",
             "MANIFEST.in")
NAMED = re.compile(r"`([^`\s]+)`|\]\(([^)\s#]+)")
BUILT = ("dist/",)  # made by make targets, not committed


def markdown_files():
    out = subprocess.run(["git", "ls-files", "*.md"], cwd=ROOT, check=True, capture_output=True,
                         text=True).stdout.split()
    return [f for f in out if os.path.isfile(os.path.join(ROOT, f))]


def named_paths(doc):
    with open(os.path.join(ROOT, doc)) as f:
        text = f.read()
    for m in NAMED.finditer(text):
        path = re.sub(r":\d+$", "", (m.group(1) or m.group(2)).rstrip(".,;:"))
        if "://" in path or path.startswith(BUILT):
            continue
        if (path.split("/")[0] in TOP and "/" in path) or path in TOP_FILES:
            yield text.count("\n", 0, m.start()) + 1, path


def exists(doc, path):
    path, _, test = path.partition("::")  # a pytest node id: the file, and the test in it
    pattern = re.sub(r"<[^>]+>|\{[^}]*\}", "*", path)
    found = [f for base in ("", os.path.dirname(doc))
             for f in glob.glob(os.path.join(ROOT, base, pattern))]
    if not test:
        return bool(found)
    return any(f"def {test.split('[')[0]}(" in open(f).read() for f in found if os.path.isfile(f))


def test_every_path_the_docs_name_exists():
    missing = [f"{doc}:{line}: {path}" for doc in markdown_files()
               for line, path in named_paths(doc) if not exists(doc, path)]
    assert missing == []


def test_the_checker_sees_a_missing_path():
    assert exists("README.md", "include/redlease.h")
    assert not exists("README.md", "csrc/core/redlease.h")  # where the header used to be
    assert exists("README.md", "tests/packaging/test_docs.py::test_the_checker_sees_a_missing_path")
    assert not exists("README.md", "tests/packaging/test_docs.py::test_that_does_not_exist")
    assert ("README.md" in markdown_files() and
            any(p == "include/redlease.h" for _, p in named_paths("README.md")))


def test_the_wire_contract_cited_is_the_one_in_the_repository():
    cited = subprocess.run(["git", "grep", "-il", "protocol.md"], cwd=ROOT, capture_output=True,
                           text=True).stdout.split()
    assert cited and os.path.isfile(os.path.join(ROOT, "docs", "protocol.md"))
    for f in cited:
        with open(os.path.join(ROOT, f)) as fh:
            for name in re.findall(r"[\w./-]*protocol\.md", fh.read(), re.I):
                assert name in ("docs/protocol.md", "protocol.md") or name.endswith(
                    "/docs/protocol.md"), f"{f} cites {name}"
