"""The wheels of `make wheel`: one per CPython; each installs into a fresh virtualenv and takes a
lock with LD_LIBRARY_PATH unset, with hiredis compiled in (no libhiredis mapped) and the OpenSSL
that travels in the wheel; auditwheel finds no external library beyond the manylinux policy."""

import glob
import os
import zipfile

import pytest
from pkgkit import ROOT, python_tag, pythons, rl_version, run

AUDITWHEEL = os.path.join(ROOT, "build", "pkg-tools", "bin", "auditwheel")


def wheel_for(tag):
    found = glob.glob(os.path.join(ROOT, "dist", f"redlease-{rl_version()}-{tag}-{tag}-*.whl"))
    assert len(found) == 1, f"make wheel made no single {tag} wheel: {found}"
    return found[0]


def test_a_manylinux_wheel_for_every_python():
    for python in pythons():
        assert "-manylinux_" in os.path.basename(wheel_for(python_tag(python)))


@pytest.mark.parametrize("python", pythons(), ids=python_tag)
def test_wheel_installs_and_locks_without_system_hiredis(python, venv, server):
    env = venv(python)
    result = env.pip_install("--no-index", "--no-deps", wheel_for(python_tag(python)))
    assert result.returncode == 0, result.stderr
    report = env.smoke(server.url)
    assert report["version"] == rl_version()
    assert (report["held"], report["excluded"], report["free_after"]) == (True, True, True)
    assert report["core"].startswith(env.dir)
    # hiredis is inside _core.so: no libhiredis of any origin is loaded
    assert [m for m in report["mapped"] if "hiredis" in m] == []
    # OpenSSL is the wheel's copy (redlease.libs), and TLS is built in
    ssl = [m for m in report["mapped"] if os.path.basename(m).startswith("libssl")]
    assert ssl and all("/redlease.libs/" in m and m.startswith(env.dir) for m in ssl), ssl
    assert report["tls"] is True


def test_wheel_contents():
    with zipfile.ZipFile(wheel_for(python_tag(pythons()[0]))) as z:
        names = z.namelist()
    assert any(n.startswith("redlease/_core.") and n.endswith(".so") for n in names)
    assert {"redlease/py.typed", "redlease/_core.pyi", "redlease/__init__.py"} <= set(names)
    libs = sorted(os.path.basename(n) for n in names
                  if n.startswith("redlease.libs/") and not n.endswith("/"))
    assert [lib.split("-")[0] for lib in libs] == ["libcrypto", "libssl"], libs


def test_extension_exports_no_hiredis_symbol(tmp_path):
    """The compiled-in hiredis is hidden: it can neither clash with nor be replaced by another
    hiredis in the process (the core's rl_* stay visible: tools read the script catalogue)."""
    with zipfile.ZipFile(wheel_for(python_tag(pythons()[0]))) as z:
        so = [n for n in z.namelist() if n.startswith("redlease/_core.")][0]
        path = z.extract(so, tmp_path)
    symbols = [line.split()[-1] for line in run(["nm", "-D", path]).stdout.splitlines()]
    assert "PyInit__core" in symbols and "rl_script_name" in symbols
    assert [s for s in symbols if s.startswith(("redis", "sds", "hi_"))] == []


def test_auditwheel_finds_no_external_library():
    for python in pythons():
        result = run([AUDITWHEEL, "show", wheel_for(python_tag(python))])
        assert result.returncode == 0, result.stderr
        verdict = " ".join(result.stdout.split())
        assert 'is consistent with the following platform tag: "manylinux_' in verdict
        assert "external shared libraries" not in verdict, verdict


def test_auditwheel_would_see_system_libraries_in_an_unrepaired_wheel():
    """What the repair changed: the wheel as built links the system's OpenSSL (libssl.so.3, not
    a copy renamed libssl-<hash>) and is only linux_x86_64."""
    raw = glob.glob(os.path.join(ROOT, "build", "wheels", "raw", "*.whl"))
    assert raw
    result = run([AUDITWHEEL, "show", raw[0]])
    verdict = " ".join(result.stdout.split())
    assert 'platform tag: "linux_x86_64"' in verdict and " libssl.so.3 " in verdict, verdict
