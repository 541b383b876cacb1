"""The release folder of `make release` (scripts/release): the sdist, a wheel per CPython, the
rockspec and the src.rock, with their SHA256SUMS; its check installs each into a fresh venv or
luarocks tree and finds the version, and fails on a file changed after collection."""

import glob
import os
import shutil

import pytest
from pkgkit import ROOT, python_tag, pythons, rl_version, run

RELEASE = os.path.join(ROOT, "dist", f"release-{rl_version()}")
SCRIPT = os.path.join(ROOT, "scripts", "release")
TOOLS = os.path.join(ROOT, "build", "pkg-tools")


def check(folder, version=None):
    return run([SCRIPT, "check", version or rl_version(), str(folder), TOOLS], cwd=ROOT)


@pytest.fixture
def copy(tmp_path):
    dest = tmp_path / "release"
    shutil.copytree(RELEASE, dest)
    return dest


def test_the_folder_holds_each_artefact_and_its_checksum():
    v = rl_version()
    wheels = sorted(os.path.basename(w) for w in glob.glob(os.path.join(RELEASE, "*.whl")))
    assert sorted(w.split("-")[2] for w in wheels) == sorted(python_tag(p) for p in pythons())
    assert sorted(os.listdir(RELEASE)) == sorted(
        ["SHA256SUMS", f"redlease-{v}.tar.gz", f"redlease-{v}-1.rockspec",
         f"redlease-{v}-1.src.rock", *wheels])
    with open(os.path.join(RELEASE, "SHA256SUMS")) as f:
        listed = sorted(line.split()[1] for line in f)
    assert listed == sorted(n for n in os.listdir(RELEASE) if n != "SHA256SUMS")
    for name in wheels + [f"redlease-{v}.tar.gz"]:
        with open(os.path.join(RELEASE, name), "rb") as a, \
                open(os.path.join(ROOT, "dist", name), "rb") as b:
            assert a.read() == b.read(), f"{name} differs from dist/{name}"


def test_the_check_installs_each_artefact(copy):
    result = check(copy)
    assert result.returncode == 0, result.stdout + result.stderr
    v = rl_version()
    for line in ([f"{os.path.basename(w)}: installs and imports"
                  for w in glob.glob(os.path.join(copy, "*.whl"))]
                 + [f"redlease-{v}.tar.gz: builds, installs and imports",
                    f"redlease-{v}-1.src.rock: builds offline and requires; rockspec lints"]):
        assert f"release: {line}" in result.stdout, result.stdout


def test_the_check_fails_on_a_file_changed_after_collection(copy):
    wheel = glob.glob(os.path.join(copy, "*.whl"))[0]
    with open(wheel, "ab") as f:
        f.write(b"\0")
    result = check(copy)
    assert result.returncode != 0
    assert "FAILED: checksums" in result.stderr, result.stdout + result.stderr


def test_the_check_fails_when_the_version_is_not_the_one_built(copy):
    result = check(copy, version="9.9.9")
    assert result.returncode != 0
    assert "FAILED: importing" in result.stderr, result.stdout + result.stderr
