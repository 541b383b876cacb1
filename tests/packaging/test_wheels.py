"""The wheels of `make wheel`: one manylinux_2_28 x86_64 wheel per CPython (cross-built with zig,
scripts/build-xwheels); each installs into a fresh virtualenv and takes a lock with
LD_LIBRARY_PATH unset, plain and over a verified rediss:// connection, with hiredis and OpenSSL
inside its extension (neither loaded from anywhere); auditwheel finds no external library and
confirms the tag (glibc 2.28's symbol versions at most)."""

import glob
import os
import re
import zipfile

import pytest
from pkgkit import ROOT, python_tag, pythons, rl_version, run

AUDITWHEEL = os.path.join(ROOT, "build", "pkg-tools", "bin", "auditwheel")
PLATFORM = "manylinux_2_28_x86_64"


def wheel_for(tag):
    found = glob.glob(os.path.join(ROOT, "dist", f"redlease-{rl_version()}-{tag}-{tag}-*.whl"))
    assert len(found) == 1, f"make wheel made no single {tag} wheel: {found}"
    return found[0]


def test_a_manylinux_2_28_wheel_for_every_python():
    for python in pythons():
        assert os.path.basename(wheel_for(python_tag(python))).endswith(f"-{PLATFORM}.whl")


def check_report(report, env):
    assert report["version"] == rl_version()
    assert (report["held"], report["excluded"], report["free_after"]) == (True, True, True)
    assert report["core"].startswith(env.dir) and report["tls"] is True
    # hiredis and OpenSSL are inside _core.so: no libhiredis, libssl or libcrypto is loaded
    assert [m for m in report["mapped"] if re.search(r"hiredis|libssl|libcrypto", m)] == []


@pytest.mark.parametrize("python", pythons(), ids=python_tag)
def test_wheel_locks_plain_and_over_tls_without_system_libraries(python, venv, tls_server):
    plain, secure, certs = tls_server
    env = venv(python)
    result = env.pip_install("--no-index", "--no-deps", wheel_for(python_tag(python)))
    assert result.returncode == 0, result.stderr
    check_report(env.smoke(plain), env)
    check_report(env.smoke(secure, str(certs / "ca.crt")), env)


def test_wheel_contents():
    with zipfile.ZipFile(wheel_for(python_tag(pythons()[0]))) as z:
        names = z.namelist()
    assert any(n.startswith("redlease/_core.") and n.endswith(".so") for n in names)
    assert {"redlease/py.typed", "redlease/_core.pyi", "redlease/__init__.py"} <= set(names)
    assert [n for n in names if ".libs/" in n] == []  # nothing grafted in: all of it is linked


@pytest.mark.parametrize("python", pythons(), ids=python_tag)
def test_extension_needs_only_libc_and_exports_only_its_own(python, tmp_path):
    """The compiled-in hiredis and OpenSSL are hidden: they can neither clash with nor be replaced
    by another copy in the process (the core's rl_* stay visible: tools read the script
    catalogue)."""
    with zipfile.ZipFile(wheel_for(python_tag(python))) as z:
        so = [n for n in z.namelist() if n.startswith("redlease/_core.")][0]
        path = z.extract(so, tmp_path)
    needed = set(re.findall(r"\(NEEDED\)\s+Shared library: \[([^\]]+)\]",
                            run(["readelf", "-d", path]).stdout))
    assert needed and needed <= {"libc.so.6", "libm.so.6", "libpthread.so.0", "libdl.so.2",
                                 "librt.so.1", "ld-linux-x86-64.so.2"}, needed
    symbols = [line.split()[-1] for line in
               run(["nm", "-D", "--defined-only", path]).stdout.splitlines()]
    assert "PyInit__core" in symbols and "rl_script_name" in symbols
    foreign = ("redis", "sds", "hi_", "SSL_", "EVP_", "OPENSSL_", "CRYPTO_", "BIO_", "X509")
    assert [s for s in symbols if s.startswith(foreign)] == []
    # glibc symbol versions within the tag's baseline, 2.28
    versions = {tuple(map(int, v.split("."))) for v in
                re.findall(r"GLIBC_(\d+\.\d+(?:\.\d+)?)", run(["objdump", "-T", path]).stdout)}
    assert versions and max(versions) <= (2, 28), sorted(versions)


def test_auditwheel_confirms_the_tag_and_finds_no_external_library():
    for python in pythons():
        result = run([AUDITWHEEL, "show", wheel_for(python_tag(python))])
        assert result.returncode == 0, result.stderr
        verdict = " ".join(result.stdout.split())
        found = re.search(r'platform tag: "manylinux_(\d+)_(\d+)_x86_64"', verdict)
        assert found and (int(found.group(1)), int(found.group(2))) <= (2, 28), verdict
        assert "external shared libraries" not in verdict, verdict
