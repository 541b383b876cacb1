"""The rock's release (make rock-src): a versioned rockspec whose source is the archive beside
it, and a .src.rock; both build offline (no network reachable) into a fresh tree, without
writing anything into the checkout, and the built rock takes a lock."""

import os
import shutil
import subprocess

import pytest
from pkgkit import ROOT, clean_env, rl_version, run

ROCK_DIR = os.path.join(ROOT, "dist", "rock")
SMOKE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "smoke_lock.lua")
# every proxy a closed local port: a download attempt fails instead of reaching the network
OFFLINE = {k: "http://127.0.0.1:9" for k in ("http_proxy", "https_proxy", "HTTP_PROXY",
                                                 "HTTPS_PROXY", "ftp_proxy", "all_proxy")}


def checkout_state():
    return subprocess.run(["git", "status", "--porcelain", "--ignored", "--", ".", ":!build",
                           ":!dist"], cwd=ROOT, check=True, capture_output=True, text=True).stdout


def luarocks(tree, *args, cwd):
    result = run(["luarocks", "--lua-version", "5.4", "--tree", str(tree), *args], cwd=cwd,
                 env=clean_env(**OFFLINE))
    assert result.returncode == 0, result.stdout + result.stderr
    return result


def lock_with(tree, url):
    share, lib = os.path.join(tree, "share", "lua", "5.4"), os.path.join(tree, "lib", "lua", "5.4")
    env = clean_env(LUA_PATH=f"{share}/?.lua;{share}/?/init.lua;;", LUA_CPATH=f"{lib}/?.so;;")
    result = run(["lua5.4", SMOKE, url], env=env, cwd=str(tree))
    assert result.returncode == 0, result.stdout + result.stderr
    return result.stdout.split()


@pytest.fixture
def release(tmp_path):
    """A copy of dist/rock, as a user downloads it."""
    copy = tmp_path / "release"
    shutil.copytree(ROCK_DIR, copy)
    return copy


def test_release_rockspec_is_versioned_and_names_the_archive():
    version = rl_version()
    assert sorted(os.listdir(ROCK_DIR)) == [f"redlease-{version}-1.rockspec",
                                            f"redlease-{version}-1.src.rock",
                                            f"redlease-{version}.tar.gz"]
    with open(os.path.join(ROCK_DIR, f"redlease-{version}-1.rockspec")) as f:
        text = f.read()
    assert f'\nversion = "{version}-1"\n' in text
    assert f'url = "redlease-{version}.tar.gz"' in text and "example.invalid" not in text
    result = run(["luarocks", "lint", os.path.join(ROCK_DIR, f"redlease-{version}-1.rockspec")])
    assert result.returncode == 0, result.stdout + result.stderr


def test_scm_rockspec_lists_every_file_of_the_tree():
    result = run([os.path.join(ROOT, "scripts", "gen-rockspec"), "--check"])
    assert result.returncode == 0, result.stderr


def test_src_rock_builds_offline_and_locks(release, tmp_path, server):
    before = checkout_state()
    luarocks(tmp_path / "tree", "build", f"redlease-{rl_version()}-1.src.rock", cwd=release)
    assert lock_with(tmp_path / "tree", server.url) == [rl_version(), "excluded", "released"]
    assert checkout_state() == before


def test_rockspec_builds_offline_from_the_archive(release, tmp_path, server):
    before = checkout_state()
    luarocks(tmp_path / "tree", "build", f"redlease-{rl_version()}-1.rockspec", cwd=release)
    assert lock_with(tmp_path / "tree", server.url) == [rl_version(), "excluded", "released"]
    assert checkout_state() == before


def test_rockspec_without_its_archive_fails_offline(release, tmp_path):
    """The build above used the archive, not the network or the checkout."""
    os.remove(release / f"redlease-{rl_version()}.tar.gz")
    result = run(["luarocks", "--lua-version", "5.4", "--tree", str(tmp_path / "tree"), "build",
                  f"redlease-{rl_version()}-1.rockspec"], cwd=release, env=clean_env(**OFFLINE))
    assert result.returncode != 0, result.stdout
    assert f"redlease-{rl_version()}.tar.gz" in result.stderr, result.stderr
