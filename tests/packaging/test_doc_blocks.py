"""Every fenced code block of README.md and docs/ either runs here, or says why it does not
(tests/packaging/docblocks.py has the rules): Python blocks and `>>>` sessions with the venv's
redlease, Lua blocks with lua5.4 and the rock of `make lua-rocks`, `<!-- run -->` shell blocks
with bash from the repository's root; each against its own throwaway redis-server. A failure
names the doc's file and line (tracebacks and Lua errors point into the doc itself)."""

import os
import subprocess
import sys
import textwrap

import pytest
from docblocks import blocks, with_server
from pkgkit import ROOT, clean_env

DOCS = ["README.md"] + sorted(f"docs/{f}" for f in os.listdir(os.path.join(ROOT, "docs"))
                              if f.endswith(".md"))
ALL = [b for doc in DOCS for b in blocks(ROOT, doc)]
RUNNABLE = [b for b in ALL if b.run]
LUA_TREE = os.path.join(ROOT, "build", "lua-lua5.4")
TIMEOUT = 60

# Runs a file as if it were the doc: its tracebacks name the doc and the doc's line.
# A block with a top-level `await` or `async with` runs on asyncio's loop.
PY_DRIVER = textwrap.dedent("""
    import ast, asyncio, inspect, sys
    path, doc = sys.argv[1], sys.argv[2]
    sys.argv = [doc]
    code = compile(open(path).read(), doc, "exec", flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT)
    result = eval(code, {"__name__": "__main__"})
    if inspect.iscoroutine(result):
        asyncio.run(result)
""")
PYCON_DRIVER = textwrap.dedent("""
    import doctest, sys
    path, before, doc, line = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
    globs = {"__name__": "__main__"}
    exec(open(before).read(), globs)
    test = doctest.DocTestParser().get_doctest(open(path).read(), globs, doc, doc, line)
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    runner.run(test)
    sys.exit(1 if runner.failures else 0)
""")
LUA_DRIVER = 'local f = assert(io.open(arg[1])); assert(load(f:read("a"), "@" .. arg[2]))()'


def padded(block, port):
    """The block's code on the doc's own lines, its `before` lines just above it."""
    before = with_server("\n".join(block.before), port)
    top = block.line - 1 - len(block.before)
    return "\n" * max(top, 0) + before + "\n" + with_server(block.code, port), before


def run(block, args, tmp_path, env=None):
    result = subprocess.run(args, cwd=tmp_path if block.lang != "sh" else ROOT,
                            env=env or clean_env(), capture_output=True, text=True,
                            timeout=TIMEOUT)
    assert result.returncode == 0, (
        f"{block.where}: this {block.lang} block failed (exit {result.returncode}):\n"
        f"{result.stdout}{result.stderr}")


def lua_env():
    share, lib = f"{LUA_TREE}/share/lua/5.4", f"{LUA_TREE}/lib/lua/5.4"
    return clean_env(LUA_PATH=f"{share}/?.lua;{share}/?/init.lua;;", LUA_CPATH=f"{lib}/?.so;;")


@pytest.mark.parametrize("block", RUNNABLE, ids=lambda b: b.where)
def test_the_block_runs(block, server, tmp_path):
    code, before = padded(block, server.port)
    path = tmp_path / "block"
    path.write_text(code)
    if block.lang == "python":
        run(block, [sys.executable, "-c", PY_DRIVER, str(path), block.doc], tmp_path)
    elif block.lang == "pycon":
        (tmp_path / "before").write_text(before)
        path.write_text(with_server(block.code, server.port))
        run(block, [sys.executable, "-c", PYCON_DRIVER, str(path), str(tmp_path / "before"),
                    block.doc, str(block.line)], tmp_path)
    elif block.lang == "lua":
        (tmp_path / "driver.lua").write_text(LUA_DRIVER)
        run(block, ["lua5.4", str(tmp_path / "driver.lua"), str(path), block.doc], tmp_path,
            lua_env())
    else:
        run(block, ["bash", "-euo", "pipefail", str(path)], tmp_path, sh_env(tmp_path))


def sh_env(tmp_path):
    """A user's shell whose installs stay in tmp_path: pip is the venv's (PATH), and luarocks's
    only tree is tmp_path/rocks (as root its default is the system's)."""
    config = tmp_path / "luarocks-config.lua"
    config.write_text(f'rocks_trees = {{ {{ name = "system", root = "{tmp_path}/rocks" }} }}\n')
    return clean_env(HOME=str(tmp_path), LUAROCKS_CONFIG=str(config),
                     PATH=f"{os.path.dirname(sys.executable)}:{os.environ['PATH']}")


def test_every_block_runs_or_says_why_not():
    assert [f"{b.where}: {b.problem}" for b in ALL if b.problem] == []


def test_the_rules_of_the_marks(tmp_path):
    doc = tmp_path / "x.md"
    doc.write_text("```python\nx = 1\n```\n\n<!-- not run: it is a sketch -->\n```python\n...\n"
                   "```\n\n```sh\nls\n```\n\n<!-- run -->\n<!-- before: cd / -->\n```sh\nls\n"
                   "```\n\n```\nplain\n```\n\n<!-- not run -->\n```c\n```\n\n```text\nout\n```\n")
    found = blocks(str(tmp_path), "x.md")
    assert [(b.line, b.run, b.problem is None) for b in found] == [
        (1, True, True), (6, False, True), (10, False, False), (16, True, True),
        (20, False, False), (25, False, False), (28, False, True)]
    assert found[1].why_not == "it is a sketch" and found[3].before == ["cd /"]
    assert with_server('Client("redis://127.0.0.1:6379/0")', 5) == 'Client("redis://127.0.0.1:5/0")'
    assert with_server("redis://127.0.0.1:63790", 5) == "redis://127.0.0.1:63790"


def test_a_failing_block_names_its_doc_and_line(server, tmp_path):
    (tmp_path / "bad.md").write_text("# x\n\n```python\nimport redlease\nraise SystemExit(3)\n"
                                     "```\n\n```lua\nlocal x = nil\nerror('boom')\n```\n\n"
                                     "```pycon\n>>> 1 + 1\n3\n```\n\n"
                                     "<!-- run -->\n```sh\nfalse\n```\n")
    py, lua, pycon, sh = blocks(str(tmp_path), "bad.md")
    for block in (py, lua, pycon, sh):
        with pytest.raises(AssertionError) as failed:
            test_the_block_runs(block, server, tmp_path)
        assert f"bad.md:{block.line}: this {block.lang} block failed" in str(failed.value)
    with pytest.raises(AssertionError, match=r"bad\.md:10: boom"):
        test_the_block_runs(lua, server, tmp_path)
    with pytest.raises(AssertionError, match=r'File "bad\.md", line 14'):
        test_the_block_runs(pycon, server, tmp_path)
