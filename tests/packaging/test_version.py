"""One version, RL_VERSION in include/redlease.h: the Python package's metadata and
__version__, the Lua rock's _VERSION (each interpreter's build), the OpenResty backend's (its
generated scripts.lua), the release rockspec's name and the changelog's latest release all
say it, and no other file spells it."""

import importlib.metadata
import os
import re
import subprocess

from pkgkit import ROOT, clean_env, rl_version, run

import redlease

# files that may spell the version: its one home, the changelog, the OpenResty backend's
# generated scripts.lua (checked against its generator by the openresty suite) and the benchmark
# page, which records the version it measured
MAY_SPELL_IT = {"include/redlease.h", "CHANGELOG.md", "luarocks/redlease/resty/scripts.lua",
                "docs/benchmarks.md"}


def test_version_is_semver():
    assert re.fullmatch(r"\d+\.\d+\.\d+", rl_version())


def test_python_package_says_it():
    assert redlease.__version__ == rl_version()
    assert importlib.metadata.version("redlease") == rl_version()


def test_lua_rock_says_it_under_each_interpreter():
    for interpreter, abi in (("lua5.4", "5.4"), ("luajit", "5.1")):
        tree = os.path.join(ROOT, "build", f"lua-{interpreter}")
        share = f"{tree}/share/lua/{abi}"
        env = clean_env(LUA_PATH=f"{share}/?.lua;{share}/?/init.lua;;",
                        LUA_CPATH=f"{tree}/lib/lua/{abi}/?.so;;")
        result = run([interpreter, "-e", 'io.write(require("redlease")._VERSION)'], env=env)
        assert result.returncode == 0, result.stderr
        assert result.stdout == rl_version(), interpreter


def test_openresty_backend_says_it():
    with open(os.path.join(ROOT, "luarocks", "redlease", "resty", "scripts.lua")) as f:
        assert f'\n  _VERSION = "{rl_version()}",' in f.read()
    with open(os.path.join(ROOT, "luarocks", "redlease", "resty", "init.lua")) as f:
        init = f.read()
    assert 'local generated = require "redlease.resty.scripts"' in init
    assert "_VERSION = generated._VERSION" in init


def test_release_rockspec_is_named_after_it():
    assert os.path.isfile(os.path.join(ROOT, "dist", "rock", f"redlease-{rl_version()}-1.rockspec"))


def test_changelog_latest_release_is_it():
    with open(os.path.join(ROOT, "CHANGELOG.md")) as f:
        text = f.read()
    releases = re.findall(r"^## \[([^\]]+)\]", text, re.M)
    assert releases[:2] == ["Unreleased", rl_version()], releases
    assert re.search(rf"^## \[{re.escape(rl_version())}\] - \d{{4}}-\d{{2}}-\d{{2}}$", text, re.M)


def test_no_other_file_spells_it():
    # redlease's version, not another package's pin that happens to match (`name==0.1.0`)
    pattern = r"(?<![\d.=])" + re.escape(rl_version()) + r"(?![\d.])"
    found = subprocess.run(["git", "grep", "-lP", pattern], cwd=ROOT, capture_output=True,
                           text=True).stdout.split()
    assert set(found) - MAY_SPELL_IT == set(), found
    assert "include/redlease.h" in found
