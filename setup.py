"""Builds redlease._core: the C core (csrc/core) and the CPython binding (csrc/python), linked
against the system hiredis found with pkg-config. Metadata is in pyproject.toml."""

import glob
import os
import shlex
import subprocess
import sys

from setuptools import Extension, setup

HIREDIS_MISSING = ("redlease: hiredis headers not found; install libhiredis-dev "
                   "(Debian/Ubuntu: apt-get install libhiredis-dev pkg-config)")


def pkg_config(*args, package="hiredis"):
    try:
        out = subprocess.run(["pkg-config", *args, package], check=True,
                             capture_output=True, text=True).stdout
    except (OSError, subprocess.CalledProcessError):
        return None
    return shlex.split(out)


def hiredis_flags():
    cflags, libs = pkg_config("--cflags"), pkg_config("--libs")
    if cflags is None or libs is None:
        # No pkg-config file: fall back to the usual location, or stop with one clear line.
        if not os.path.exists("/usr/include/hiredis/hiredis.h"):
            sys.exit(HIREDIS_MISSING)
        return ["-I/usr/include/hiredis"], ["-lhiredis"]
    include_dirs = [f[2:] for f in cflags if f.startswith("-I")] or ["/usr/include"]
    if not any(os.path.exists(os.path.join(d, "hiredis.h")) or
               os.path.exists(os.path.join(d, "hiredis", "hiredis.h")) for d in include_dirs):
        sys.exit(HIREDIS_MISSING)
    return cflags, libs


def openssl_flags():
    """TLS (rediss://) on the system's OpenSSL when pkg-config finds it; else a build without TLS,
    where rediss:// answers "unsupported". REDLEASE_TLS=0 leaves it out on purpose."""
    if os.environ.get("REDLEASE_TLS") == "0":
        return [], []
    cflags = pkg_config("--cflags", package="openssl")
    libs = pkg_config("--libs", package="openssl")
    if cflags is None or libs is None:
        return [], []
    return ["-DRL_WITH_TLS", *cflags], libs


cflags, libs = hiredis_flags()
tls_cflags, tls_libs = openssl_flags()
extra_compile_args = ["-std=c11", "-D_GNU_SOURCE", "-pthread", *cflags, *tls_cflags]
if os.environ.get("REDLEASE_STRICT"):  # make test: the project's warning flags
    extra_compile_args += ["-Wall", "-Wextra", "-Werror", "-Wshadow",
                           "-Wno-cast-function-type"]

# Build products go under build/python, beside the Makefile's own build trees.
os.makedirs("build/python", exist_ok=True)
setup(
    options={"build": {"build_base": "build/python"}, "egg_info": {"egg_base": "build/python"}},
    ext_modules=[
        Extension(
            "redlease._core",
            sources=sorted(glob.glob("csrc/core/*.c")) + sorted(glob.glob("csrc/python/*.c")),
            include_dirs=["include", "csrc/core", "csrc/python"],
            depends=(glob.glob("include/*.h") + glob.glob("csrc/core/*.h")
                     + glob.glob("csrc/python/*.h")),
            extra_compile_args=extra_compile_args,
            extra_link_args=["-pthread", *libs, *tls_libs],
        )
    ],
)
