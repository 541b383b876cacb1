"""The sdist of `make sdist`: only what a build needs, and `pip install` builds from it with the
system's hiredis when pkg-config finds one, with hiredis compiled in from PyPI's hiredis sdist
when not, and stops with one line saying what to install when neither is possible."""

import os
import subprocess
import tarfile

from pkgkit import ROOT, clean_env, rl_version

SDIST = os.path.join(ROOT, "dist", f"redlease-{rl_version()}.tar.gz")


def without_system_hiredis(tmp_path):
    """pkg-config as on a machine with OpenSSL's development files and no hiredis ones."""
    pc = tmp_path / "pkgconfig"
    pc.mkdir()
    system = subprocess.run(["pkg-config", "--variable", "pcfiledir", "openssl"], check=True,
                            capture_output=True, text=True).stdout.strip()
    for name in ("openssl.pc", "libssl.pc", "libcrypto.pc"):
        os.symlink(os.path.join(system, name), pc / name)
    assert subprocess.run(["pkg-config", "--exists", "hiredis"],
                          env=clean_env(PKG_CONFIG_LIBDIR=str(pc))).returncode != 0
    return clean_env(PKG_CONFIG_LIBDIR=str(pc))


def test_sdist_holds_the_sources_and_no_build_products():
    with tarfile.open(SDIST) as tar:
        names = [n.split("/", 1)[1] for n in tar.getnames() if "/" in n]
    top = f"redlease-{rl_version()}"
    assert all(not n.startswith(("build/", "dist/", "tests/", "csrc/lua/")) for n in names), names
    assert not [n for n in names if n.endswith((".o", ".so", ".a", ".pyc"))]
    expected = {"setup.py", "pyproject.toml", "README.md", "CHANGELOG.md", "LICENSE",
                "tools/hiredis_source.py", "include/redlease.h", "python/redlease/py.typed"}
    for folder in ("csrc/core", "csrc/python"):
        expected |= {f"{folder}/{f}" for f in os.listdir(os.path.join(ROOT, folder))}
    assert expected <= set(names), sorted(expected - set(names))
    assert not [n for n in names if "hiredis/" in n], "no hiredis source travels in the sdist"
    assert top in SDIST


def test_sdist_is_made_without_system_hiredis(tmp_path):
    """Making the sdist compiles nothing, so it needs no hiredis (setup.py looks for it only
    when the extension is built)."""
    build = os.path.join(ROOT, "build", "pkg-tools", "bin", "python")
    result = subprocess.run([build, "-m", "build", "--sdist", "--outdir", str(tmp_path / "out"),
                             ROOT], capture_output=True, text=True,
                            env=without_system_hiredis(tmp_path))
    assert result.returncode == 0, result.stdout + result.stderr
    assert os.listdir(tmp_path / "out") == [os.path.basename(SDIST)]


def test_sdist_builds_with_system_hiredis(venv, server):
    env = venv()
    result = env.pip_install("--no-deps", SDIST)
    assert result.returncode == 0, result.stdout + result.stderr
    report = env.smoke(server.url)
    assert report["version"] == rl_version() and report["excluded"]
    hiredis = [m for m in report["mapped"] if "libhiredis" in m]
    assert hiredis and all(m.startswith("/usr/") for m in hiredis), report["mapped"]


def test_sdist_builds_without_system_hiredis(venv, server, tmp_path):
    env = venv()
    result = env.pip_install("--no-deps", "--no-cache-dir", SDIST,
                             env=without_system_hiredis(tmp_path))
    assert result.returncode == 0, result.stdout + result.stderr
    report = env.smoke(server.url)
    assert report["version"] == rl_version() and report["excluded"] and report["tls"]
    assert [m for m in report["mapped"] if "hiredis" in m] == []


def test_sdist_without_hiredis_or_its_source_says_what_to_install(venv, tmp_path):
    env = venv()
    build_env = without_system_hiredis(tmp_path)
    build_env["REDLEASE_HIREDIS_SDIST"] = str(tmp_path / "absent.tar.gz")  # offline
    result = env.pip_install("--no-deps", "--no-cache-dir", SDIST, env=build_env)
    assert result.returncode != 0
    lines = [line.strip() for line in (result.stdout + result.stderr).splitlines()
             if "redlease: no system hiredis" in line]
    assert len(lines) == 1, result.stdout + result.stderr
    assert "install libhiredis-dev" in lines[0] and "REDLEASE_HIREDIS_SDIST" in lines[0]
    assert subprocess.run([env.python, "-c", "import redlease"], cwd=env.dir).returncode != 0
