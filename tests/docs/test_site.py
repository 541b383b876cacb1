"""The documentation site (mkdocs.yml, `make docs`): it builds from docs/ with no warning, its API
references hold what the package and the rock really have, and a broken link, a missing anchor,
a link out of docs/, an unresolved API reference or a page left out of the nav each fail the
build (a copy of the sources with one of them put in)."""

import importlib
import inspect
import os
import re
import shutil
import subprocess
import sys

import pytest

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "tools", "docs"))
import c_docstrings  # noqa: E402
import lua_api  # noqa: E402

MKDOCS = os.path.join(ROOT, "build", "docs-venv", "bin", "mkdocs")
LUA_TREE = os.path.join(ROOT, "build", "lua-lua5.4")
# What the build reads: its config, the pages, and the sources of the two API references.
SOURCES = ["mkdocs.yml", "docs", "tools/docs", "python/redlease", "csrc/python",
           "luarocks/redlease"]


def start_build(root, site):
    env = dict(os.environ, NO_MKDOCS_2_WARNING="1")
    return subprocess.Popen([MKDOCS, "build", "--strict", "-f", os.path.join(root, "mkdocs.yml"),
                             "-d", str(site)], cwd=root, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


def text_of(path):
    with open(path) as f:
        page = re.sub(r"<[^>]+>", " ", f.read())
    return re.sub(r"\s+", " ", page.replace("&lt;", "<").replace("&gt;", ">")
                  .replace("&amp;", "&").replace("&quot;", '"').replace("&#39;", "'"))


def copy_with(tmp_path, page=None, added=""):
    """A copy of what the site is built from, with `added` appended to docs/<page>."""
    root = tmp_path / "src"
    for rel in SOURCES:
        src, dst = os.path.join(ROOT, rel), root / rel
        if os.path.isdir(src):
            shutil.copytree(src, dst, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            dst.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy(src, dst)
    if page:
        with open(root / "docs" / page, "a") as f:
            f.write("\n" + added + "\n")
    return root


# Each puts one thing in a copy of the sources, which must then fail the build naming it.
BROKEN = {
    "broken link": ("semantics.md", "See [the rules](no-such-page.md).", "no-such-page.md"),
    "missing anchor": ("semantics.md", "See [renewal](deployments.md#no-such-section).",
                       "no-such-section"),
    "link out of docs": ("lua.md", "See [the runner](../tests/lua/run).", "../tests/lua/run"),
    "unresolved API reference": ("api/python.md", "See [redlease.NoSuchLock][].",
                                 "redlease.NoSuchLock"),
    "page left out of nav": ("left-out.md", "# A page mkdocs.yml does not list", "left-out.md"),
}


@pytest.fixture(scope="module")
def builds(tmp_path_factory):
    """{case: (exit status, stderr, site)}: the unbroken copy ("") and each of BROKEN, built
    side by side (each build is a process of its own)."""
    started = {}
    for case in [""] + list(BROKEN):
        tmp = tmp_path_factory.mktemp("docs")
        page, added, _ = BROKEN.get(case, (None, "", ""))
        started[case] = (start_build(copy_with(tmp, page, added), tmp / "site"), tmp / "site")
    done = {}
    for case, (proc, out) in started.items():
        _, err = proc.communicate(timeout=300)
        done[case] = (proc.returncode, err, out)
    return done


@pytest.fixture(scope="module")
def site(builds):
    """The site, built from an unbroken copy: the copy the tests below break builds as it is,
    so that they fail for what they put in."""
    status, err, out = builds[""]
    assert status == 0, err
    assert "WARNING" not in err, err
    return out


def test_every_page_is_built(site):
    pages = sorted(os.path.relpath(os.path.join(d, f), os.path.join(ROOT, "docs"))
                   for d, _, files in os.walk(os.path.join(ROOT, "docs"))
                   for f in files if f.endswith(".md"))
    assert "index.md" in pages and "api/python.md" in pages and "api/lua.md" in pages
    for page in pages:
        assert os.path.isfile(site / page.replace(".md", ".html")), page


def test_the_python_reference_has_the_docstrings_and_the_stubs(site):
    page = text_of(site / "api" / "python.html")
    for name in ("redlease.Client", "redlease.Lock", "redlease.asyncio", "redlease.fencing",
                 "redlease.testing", "redlease.prometheus", "FencedWriter", "LockLostError"):
        assert name in page, name
    # redlease.Lock is C: its signatures come from _core.pyi, its docstrings from csrc/python
    assert "max_hold:Optional[float]=..." in page.replace(" ", "")  # the stub's keyword
    assert "lease:Optional[float]=None" in page.replace(" ", "")  # its default, from the C
    assert "Takes one hold for the calling thread (reentrant)." in page
    assert "The calling thread's holds of this lock as this client knows them" in page


def test_the_c_docstrings_read_are_the_ones_help_shows():
    """What the reference reads from csrc/python is the compiled module's own __doc__, for every
    type, method and attribute, and no public member that has a docstring is missed."""
    import redlease._core as core

    docs = c_docstrings.read_sources()
    for cls, members in docs.items():
        owner = core if cls == "" else getattr(core, cls)
        for name, doc in members.items():
            target = owner.__dict__[name] if name else owner
            # CPython leaves a text signature with a return annotation in __doc__
            assert (c_docstrings.without_signature(doc) ==
                    c_docstrings.without_signature(target.__doc__)), f"{cls}.{name}"
    classes = [v for k, v in vars(core).items() if isinstance(v, type) and not k.startswith("_")]
    assert {"Client", "Lock", "Semaphore", "MultiLock"} <= {c.__name__ for c in classes}
    for cls in classes:
        for name, value in vars(cls).items():
            if not name.startswith("_") and getattr(value, "__doc__", None):
                assert name in docs.get(cls.__name__, {}), f"{cls.__name__}.{name}"


PUBLIC_MODULES = ["redlease", "redlease.asyncio", "redlease.fencing", "redlease.testing",
                  "redlease.prometheus"]


def test_every_public_function_and_property_has_a_docstring():
    """The reference shows a docstring for each: a public function, class, method or property
    of the modules it documents (as installed) without one fails, naming it."""
    missing = []
    for name in PUBLIC_MODULES:
        module = importlib.import_module(name)
        for attr in getattr(module, "__all__", None) or [n for n in vars(module)
                                                         if not n.startswith("_")]:
            obj = getattr(module, attr)
            if not str(getattr(obj, "__module__", "")).startswith("redlease"):
                continue  # typing's and the standard library's
            if not (obj.__doc__ or "").strip():
                missing.append(f"{name}.{attr}")
            for member, value in (vars(obj).items() if inspect.isclass(obj) else ()):
                if member.startswith("_") or inspect.ismemberdescriptor(value):
                    continue  # __slots__ fields: the class's docstring names them
                if callable(value) or inspect.isdatadescriptor(value) or isinstance(
                        value, (staticmethod, classmethod)):
                    if not (getattr(value, "__doc__", None) or "").strip():
                        missing.append(f"{name}.{attr}.{member}")
    assert missing == []


def test_the_lua_reference_has_every_function_of_the_sources(site):
    page = text_of(site / "api" / "lua.html")
    for table in lua_api.reference():
        assert table.functions, table.name
        for fn in table.functions:
            assert fn.call in page, fn.call
            assert fn.doc, f"{fn.source}: {fn.call} has no comment above it"


LIST_EXPORTS = """
local redlease = require "redlease"
local client = assert(redlease.connect("redis://127.0.0.1:1")) -- connects on first use only
local semaphore = require "redlease.semaphore"
local tables = {
  redlease = redlease, Client = getmetatable(client), Lock = require "redlease.lock",
  Guard = require "redlease.guard", MultiLock = require "redlease.multilock",
  Semaphore = semaphore.Semaphore, PermitSemaphore = semaphore.PermitSemaphore,
  Latch = require "redlease.latch",
}
for name, t in pairs(tables) do
  for key, value in pairs(t) do
    local module_field = name == "redlease" and (key == "_VERSION" or key:sub(1, 1) ~= "_")
    local method = type(value) == "function" and key:sub(1, 1) ~= "_" and key ~= "new"
    if module_field or (name ~= "redlease" and method) then print(name .. " " .. key) end
  end
end
"""


def test_the_lua_reference_lists_what_the_rock_exports():
    """The built rock's public functions (make lua-rocks), each table's, against the reference:
    a function the sources' reader missed, or one it invented, fails."""
    share, lib = f"{LUA_TREE}/share/lua/5.4", f"{LUA_TREE}/lib/lua/5.4"
    env = dict(os.environ, LUA_PATH=f"{share}/?.lua;{share}/?/init.lua;;",
               LUA_CPATH=f"{lib}/?.so;;")
    run = subprocess.run(["lua5.4", "-e", LIST_EXPORTS], env=env, capture_output=True,
                         text=True, timeout=60)
    assert run.returncode == 0, run.stderr
    exported = {}
    for line in run.stdout.splitlines():
        table, key = line.split()
        exported.setdefault(table, set()).add(key)
    # Permits, a semaphore's guard, is reached only by an acquire that took permits
    documented = {t.name: {f.name for f in t.functions} for t in lua_api.reference()
                  if t.name != "Permits"}
    assert exported == documented


@pytest.mark.parametrize("case", list(BROKEN))
def test_a_broken_link_or_reference_fails_the_build(site, builds, case):
    page, added, named = BROKEN[case]
    status, err, _ = builds[case]
    assert status != 0, f"the build passed with {added!r} in docs/{page}"
    assert named in err, err

