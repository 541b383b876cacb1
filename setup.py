"""Builds redlease._core: the C core (csrc/core) and the CPython binding (csrc/python) in one
extension. Metadata is in pyproject.toml; the version is RL_VERSION in include/redlease.h.

hiredis (the core uses only its reply parser) comes, per REDLEASE_HIREDIS:
  auto     (default) the system's, when pkg-config finds it; else as `bundled`
  system   the system's, or stop with one line saying what to install
  bundled  compiled in from the C sources of PyPI's hiredis sdist, fetched while building
           (tools/hiredis_source.py; `make wheel` uses this, so a wheel needs no system hiredis)
Nothing is resolved before build_ext runs, so an sdist builds on any machine.
"""

import glob
import os
import re
import shlex
import subprocess
import sys

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "tools"))
import hiredis_source  # noqa: E402  (tools/, shipped in the sdist)

# The core's rooms (docs/internals.md, "Layout"): the flat centre and each folder under it; its
# files include each other by bare name, as the Makefile and the rockspec build them.
CORE_DIRS = ["csrc/core"] + sorted(d.rstrip("/") for d in glob.glob("csrc/core/*/"))

MISSING = ("redlease: no system hiredis (pkg-config hiredis) and {why}; install libhiredis-dev "
           "(Debian/Ubuntu) or hiredis (Homebrew), or set REDLEASE_HIREDIS_SDIST to "
           f"hiredis-{hiredis_source.VERSION}.tar.gz from PyPI")


def version():
    with open(os.path.join(HERE, "include", "redlease.h")) as f:
        return re.search(r'#define RL_VERSION "([^"]+)"', f.read()).group(1)


def pkg_config(*args, package):
    try:
        out = subprocess.run(["pkg-config", *args, package], check=True,
                             capture_output=True, text=True).stdout
    except (OSError, subprocess.CalledProcessError):
        return None
    return shlex.split(out)


def openssl_flags(build_temp):
    """TLS (rediss://) on the system's OpenSSL when pkg-config finds it; else a build without TLS,
    where rediss:// answers "unsupported". REDLEASE_TLS=0 leaves it out on purpose.
    REDLEASE_OPENSSL=PREFIX links a static OpenSSL (scripts/build-openssl) into the extension
    instead, with a version script that exports only the module's entry point and the core's rl_*:
    the cross-built wheels need no system OpenSSL, and their copy neither clashes with nor binds
    to another OpenSSL in the process (Python's ssl module's)."""
    if os.environ.get("REDLEASE_TLS") == "0":
        return [], []
    static = os.environ.get("REDLEASE_OPENSSL")
    if static:
        libs = [os.path.join(static, "lib", f"lib{name}.a") for name in ("ssl", "crypto")]
        missing = [p for p in libs if not os.path.isfile(p)]
        if missing:
            sys.exit(f"redlease: REDLEASE_OPENSSL={static}: no {missing[0]}")
        exports = os.path.join(build_temp, "exports.map")
        os.makedirs(build_temp, exist_ok=True)
        with open(exports, "w") as f:
            f.write("{ global: PyInit__core; rl_*; local: *; };\n")
        # RL_BUNDLED_OPENSSL: this OpenSSL knows no system's CA paths (transport/tls_roots.c)
        return (["-DRL_WITH_TLS", "-DRL_BUNDLED_OPENSSL", f"-I{os.path.join(static, 'include')}"],
                [*libs, f"-Wl,--version-script={exports}"])
    cflags = pkg_config("--cflags", package="openssl")
    libs = pkg_config("--libs", package="openssl")
    if cflags is None or libs is None:
        return [], []
    return ["-DRL_WITH_TLS", *cflags], libs


class BuildCore(build_ext):
    """Resolves hiredis and OpenSSL when the extension is built (never for an sdist)."""

    def build_extension(self, ext):
        mode = os.environ.get("REDLEASE_HIREDIS", "auto")
        if mode not in ("auto", "system", "bundled"):
            sys.exit(f"redlease: REDLEASE_HIREDIS={mode}: expected auto, system or bundled")
        cflags = libs = None
        if mode != "bundled":
            cflags, libs = pkg_config("--cflags", package="hiredis"), pkg_config(
                "--libs", package="hiredis")
        if cflags is None or libs is None:
            if mode == "system":
                sys.exit(MISSING.format(why="REDLEASE_HIREDIS=system"))
            cflags, libs = self.bundled_hiredis(ext), []
        tls_cflags, tls_libs = openssl_flags(self.build_temp)
        ext.extra_compile_args += [*cflags, *tls_cflags]
        ext.extra_link_args += [*libs, *tls_libs]
        super().build_extension(ext)

    def bundled_hiredis(self, ext):
        """Compiles hiredis's sources into objects linked into the extension, their symbols
        hidden, so that another hiredis in the process can neither clash nor interpose."""
        try:
            include = hiredis_source.unpack(os.path.join(self.build_temp, "hiredis-src"))
        except hiredis_source.Unavailable as e:
            sys.exit(MISSING.format(why=e))
        objects = self.compiler.compile(
            hiredis_source.reader_sources(include), output_dir=self.build_temp,
            extra_postargs=["-O2", "-fvisibility=hidden", "-w"])
        ext.extra_objects += objects
        return [f"-I{include}"]


extra_compile_args = ["-std=c11", "-D_GNU_SOURCE", "-pthread"]
if os.environ.get("REDLEASE_STRICT"):  # make test: the project's warning flags
    extra_compile_args += ["-Wall", "-Wextra", "-Werror", "-Wshadow",
                           "-Wno-cast-function-type"]

setup(
    version=version(),
    # build products under build/python, beside the Makefile's own build trees
    options={"build": {"build_base": "build/python"}},
    cmdclass={"build_ext": BuildCore},
    ext_modules=[
        Extension(
            "redlease._core",
            sources=sorted(glob.glob("csrc/core/**/*.c", recursive=True))
            + sorted(glob.glob("csrc/python/*.c")),
            include_dirs=["include", *CORE_DIRS, "csrc/python"],
            depends=(glob.glob("include/*.h") + glob.glob("csrc/core/**/*.h", recursive=True)
                     + glob.glob("csrc/python/*.h")),
            extra_compile_args=extra_compile_args,
            extra_link_args=["-pthread"],
        )
    ],
)
