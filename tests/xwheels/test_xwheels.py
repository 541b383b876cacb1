"""The wheels of `make wheels-all` (scripts/build-xwheels, in dist/wheels-all), one per platform
and CPython 3.9-3.13, each checked for its tag and contents and, where an interpreter of its kind
runs here, installed into a fresh environment and run against a real server, plain and over TLS
(rediss://, verified):
  manylinux_2_28_x86_64   every CPython of this machine, each in a fresh virtualenv (glibc 2.36),
                          and Debian 11's CPython 3.9 on its glibc 2.31 (scripts/bullseye-root)
  manylinux_2_28_aarch64  an arm64 CPython of each version under qemu-user: Debian's 3.11 and
                          3.13, Maven Central's (org.bytedeco:cpython) 3.9, 3.10, 3.12
                          (scripts/arm64-cpython)
  musllinux_1_2_x86_64    CPythons 3.9, 3.11 and 3.13 built here with Debian's musl-gcc from
                          Debian's sources (scripts/musl-python); no Debian release ships 3.10
                          or 3.12, so those two wheels are checked (tag, libraries, symbols) only
Each wheel carries hiredis and OpenSSL inside its extension: nothing but libc is needed."""

import glob
import json
import os
import re
import sys
import zipfile

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "packaging"))
from pkgkit import ROOT, SMOKE, clean_env, python_tag, pythons, rl_version, run, tls_redis  # noqa: E402

OUT = os.path.join(ROOT, "dist", "wheels-all")
AUDITWHEEL = os.path.join(ROOT, "build", "pkg-tools", "bin", "auditwheel")
OLD_ROOT = os.path.join(ROOT, "build", "xwheel", "bullseye-root")  # scripts/bullseye-root
MUSL_MINORS = ("3.9", "3.11", "3.13")  # the musl CPythons scripts/musl-python builds
# platform: (CPython tags built, the newest libc the tag allows, ELF machine, libraries allowed)
GLIBC = {"libc.so.6", "libm.so.6", "libpthread.so.0", "libdl.so.2", "librt.so.1"}
PLATFORMS = {
    "manylinux_2_28_x86_64": (None, ("manylinux", 2, 28), "X86-64",
                              GLIBC | {"ld-linux-x86-64.so.2"}),
    "manylinux_2_28_aarch64": (None, ("manylinux", 2, 28), "AArch64",
                               GLIBC | {"ld-linux-aarch64.so.1"}),
    "musllinux_1_2_x86_64": (None, ("musllinux", 1, 2), "X86-64",
                             {"libc.musl-x86_64.so.1"}),
}


def tags_for(platform):
    return PLATFORMS[platform][0] or sorted(python_tag(p) for p in pythons())


def minor_of(tag):
    return f"{tag[2]}.{tag[3:]}"


def wheel(platform, tag):
    found = glob.glob(os.path.join(OUT, f"redlease-{rl_version()}-{tag}-{tag}-{platform}.whl"))
    assert len(found) == 1, f"make wheels-all made no single {tag} {platform} wheel: {found}"
    return found[0]


ALL = [(p, t) for p in PLATFORMS for t in tags_for(p)]
IDS = [f"{p}-{t}" for p, t in ALL]


@pytest.fixture(scope="module")
def tls(tmp_path_factory):
    """A server with a plain port and a TLS one; yields (plain URL, rediss:// URL, CA file)."""
    certs = tmp_path_factory.mktemp("certs")
    with tls_redis(certs) as (plain, rediss):
        yield plain, rediss, str(certs / "ca.crt")


@pytest.mark.parametrize("platform,tag", ALL, ids=IDS)
def test_auditwheel_confirms_the_tag_and_finds_no_external_library(platform, tag):
    result = run([AUDITWHEEL, "show", wheel(platform, tag)])
    assert result.returncode == 0, result.stderr
    verdict = " ".join(result.stdout.split())
    found = re.search(r'platform tag: "(manylinux|musllinux)_(\d+)_(\d+)_', verdict)
    assert found, verdict
    family, major, minor = found.group(1), int(found.group(2)), int(found.group(3))
    newest = PLATFORMS[platform][1]
    assert family == newest[0] and (major, minor) <= newest[1:], verdict
    assert "external shared libraries are required" not in verdict, verdict


def extension(platform, tag, into):
    with zipfile.ZipFile(wheel(platform, tag)) as z:
        names = z.namelist()
        so = [n for n in names if n.startswith("redlease/_core.") and n.endswith(".so")]
        assert len(so) == 1, names
        assert not [n for n in names if ".libs/" in n], names  # nothing grafted in
        return z.extract(so[0], into)


@pytest.mark.parametrize("platform,tag", ALL, ids=IDS)
def test_extension_needs_only_libc_and_hides_openssl_and_hiredis(platform, tag, tmp_path):
    path = extension(platform, tag, tmp_path)
    machine = PLATFORMS[platform][2]
    assert re.search(rf"Machine:.*\b{machine}\n", run(["readelf", "-h", path]).stdout)
    needed = set(re.findall(r"\(NEEDED\)\s+Shared library: \[([^\]]+)\]",
                            run(["readelf", "-d", path]).stdout))
    assert needed and needed <= PLATFORMS[platform][3], needed
    exported = [line.split()[-1] for line in
                run(["nm", "-D", "--defined-only", path]).stdout.splitlines()]
    assert "PyInit__core" in exported and "rl_script_name" in exported
    hidden = ("SSL_", "EVP_", "OPENSSL_", "CRYPTO_", "BIO_", "X509", "redis", "sds", "hi_")
    assert [s for s in exported if s.startswith(hidden)] == []


def check_report(report, prefix):
    assert report["version"] == rl_version()
    assert (report["held"], report["excluded"], report["free_after"]) == (True, True, True)
    assert report["tls"] is True and report["core"].startswith(prefix)
    # hiredis and OpenSSL are inside _core.so: neither is loaded from anywhere
    assert [m for m in report["mapped"] if re.search(r"hiredis|libssl|libcrypto", m)] == []


@pytest.mark.parametrize("python", pythons(), ids=python_tag)
def test_x86_64_glibc_wheel_locks_plain_and_over_tls(python, venv, tls):
    plain, secure, ca = tls
    env = venv(python)
    result = env.pip_install("--no-index", "--no-deps",
                             wheel("manylinux_2_28_x86_64", python_tag(python)))
    assert result.returncode == 0, result.stderr
    check_report(env.smoke(plain), env.dir)
    check_report(env.smoke(secure, ca), env.dir)


def install_into(site, platform, python_version, tag):
    """pip, here, installs the wheel into another interpreter's site-packages for its platform."""
    result = run([sys.executable, "-m", "pip", "install", "--disable-pip-version-check",
                  "--no-index", "--no-deps", "--only-binary=:all:", "--target", site,
                  "--platform", platform, "--python-version", python_version,
                  "--implementation", "cp", "--abi", tag, wheel(platform, tag)])
    assert result.returncode == 0, result.stderr


def test_x86_64_wheel_locks_plain_and_over_tls_on_glibc_2_31(tmp_path, tls):
    """Debian 11's CPython 3.9, run by Debian 11's own loader on its glibc 2.31: a system older
    than this machine's, as old as one runs here."""
    plain, secure, ca = tls
    libs = [os.path.join(OLD_ROOT, d, "x86_64-linux-gnu") for d in ("lib", "usr/lib")]
    loader = [os.path.join(OLD_ROOT, "lib", "x86_64-linux-gnu", "ld-2.31.so"),
              "--library-path", ":".join(libs)]
    venv = str(tmp_path / "old-venv")
    made = run([*loader, os.path.join(OLD_ROOT, "usr", "bin", "python3.9"), "-m", "venv",
                "--copies", "--without-pip", venv])
    assert made.returncode == 0, made.stderr
    python = os.path.join(venv, "bin", "python3.9")
    glibc = run([*loader, python, "-c", "import os; print(os.confstr('CS_GNU_LIBC_VERSION'))"])
    assert glibc.stdout.strip() == "glibc 2.31", glibc.stdout + glibc.stderr
    install_into(os.path.join(venv, "lib", "python3.9", "site-packages"),
                 "manylinux_2_28_x86_64", "3.9", "cp39")
    for args in ([plain], [secure, ca]):
        smoke = run([*loader, python, SMOKE, *args], cwd=venv)
        assert smoke.returncode == 0, smoke.stdout + smoke.stderr
        check_report(json.loads(smoke.stdout), venv)


MUSL_TAGS = [t for t in tags_for("musllinux_1_2_x86_64") if minor_of(t) in MUSL_MINORS]


@pytest.mark.parametrize("tag", MUSL_TAGS)
def test_musl_wheel_locks_plain_and_over_tls_on_a_musl_cpython(tag, tmp_path, tls):
    plain, secure, ca = tls
    minor = minor_of(tag)
    musl_python = run([os.path.join(ROOT, "scripts", "musl-python"), minor]).stdout.strip()
    assert os.path.isfile(musl_python), f"scripts/musl-python {minor} gave {musl_python!r}"
    venv = str(tmp_path / "musl-venv")
    made = run([musl_python, "-m", "venv", "--without-pip", venv])
    assert made.returncode == 0, made.stderr
    python = os.path.join(venv, "bin", f"python{minor}")
    install_into(os.path.join(venv, "lib", f"python{minor}", "site-packages"),
                 "musllinux_1_2_x86_64", minor, tag)
    for args in ([plain], [secure, ca]):
        smoke = run([python, SMOKE, *args], cwd=venv)
        assert smoke.returncode == 0, smoke.stdout + smoke.stderr
        report = json.loads(smoke.stdout)
        check_report(report, venv)
        # the process is musl's: its loader is mapped and glibc is not
        assert [m for m in report["mapped"] if "musl" in m], report["mapped"]
        assert [m for m in report["mapped"] if "libc.so.6" in m] == [], report["mapped"]


def arm64_cpython(minor):
    """scripts/arm64-cpython's answer: python, include, ld_prefix, lib_path."""
    out = run([os.path.join(ROOT, "scripts", "arm64-cpython"), minor])
    assert out.returncode == 0, out.stderr
    return dict(line.split("=", 1) for line in out.stdout.splitlines())


def qemu(cpython, *args):
    extra = {"LD_LIBRARY_PATH": cpython["lib_path"]} if cpython["lib_path"] else {}
    return run(["qemu-aarch64-static", *args],
               env=clean_env(QEMU_LD_PREFIX=cpython["ld_prefix"], **extra))


@pytest.mark.parametrize("tag", tags_for("manylinux_2_28_aarch64"))
def test_aarch64_wheel_locks_plain_and_over_tls_under_qemu(tag, tmp_path, tls):
    """A fresh virtualenv of an arm64 CPython of the wheel's version (run by qemu-user, on an
    arm64 glibc); pip, here, installs the wheel into it for that platform."""
    plain, secure, ca = tls
    minor = minor_of(tag)
    cpython = arm64_cpython(minor)
    venv = str(tmp_path / "arm64-venv")
    made = qemu(cpython, cpython["python"], "-m", "venv", "--copies", "--without-pip", venv)
    assert made.returncode == 0, made.stderr
    python = os.path.join(venv, "bin", f"python{minor}")
    machine = qemu(cpython, python, "-c",
                   "import platform, sys; print(platform.machine(), sys.version_info[:2])")
    expect = f"aarch64 {tuple(map(int, minor.split('.')))}"
    assert machine.stdout.strip() == expect, machine.stdout + machine.stderr
    install_into(os.path.join(venv, "lib", f"python{minor}", "site-packages"),
                 "manylinux_2_28_aarch64", minor, tag)
    for args in ([plain], [secure, ca]):
        smoke = qemu(cpython, python, SMOKE, *args)
        assert smoke.returncode == 0, smoke.stdout + smoke.stderr
        check_report(json.loads(smoke.stdout), venv)
