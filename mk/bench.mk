# Benchmarks (bench/): every measure of docs/benchmarks.md against one throwaway redis-server,
# then the page and its plots. Peers (redis-py, python-redis-lock, pottery) and matplotlib are
# installed into the build's virtualenv for the benchmark only; they are not dependencies of
# redlease. `make bench-smoke` runs the same harness with tiny sizes (under a minute), writes to
# build/bench-smoke (never docs/), and is a suite of `make test`; no timing is asserted.
SUITES += bench-smoke

BENCH_PEERS := redis python-redis-lock pottery matplotlib aioredlock
BENCH_BINS := $(B)/bench_core $(B)/bench_limits $(B)/bench_watchdog $(B)/bench_parallel \
  $(B)/bench_bare.so $(B)/cycle_loop $(B)/bench-before/cycle_loop $(B)/callgrind_ops

.PHONY: bench bench-smoke test-bench-smoke bench-deps bench-redisson

# The bare hiredis loop (the limit of measure 1) is linked into bench_core and bench_limits, and
# built as a shared object that the Python benchmarks load with ctypes.
BARE_LOOP := bench/c/bare_loop.c bench/c/bare_loop.h

$(B)/bench_core: bench/c/bench_core.c $(BARE_LOOP) $(B)/plain/librlcore.a
	$(CC) $(PUBLIC_CFLAGS) -Ibench/c -o $@ $(filter %.c %.a,$^) $(LIBS)

$(B)/bench_limits: bench/c/bench_limits.c $(BARE_LOOP) $(B)/plain/librlcore.a
	$(CC) $(PUBLIC_CFLAGS) -Ibench/c -o $@ $(filter %.c %.a,$^) $(LIBS)

$(B)/bench_bare.so: $(BARE_LOOP) $(B)/plain/librlcore.a
	$(CC) $(PUBLIC_CFLAGS) -shared -o $@ $(filter %.c %.a,$^) $(LIBS)

$(B)/bench_parallel: bench/c/bench_parallel.c $(B)/plain/librlcore.a
	$(CC) $(PUBLIC_CFLAGS) -o $@ $^ $(LIBS)

$(B)/bench_watchdog: bench/c/bench_watchdog.c $(B)/plain/librlcore.a
	$(CC) $(PUBLIC_CFLAGS) -o $@ $^ $(LIBS)

# The operations of the instruction-count guard (mk/callgrind.mk), also a step of the page.
$(B)/callgrind_ops: bench/c/callgrind_ops.c $(B)/plain/librlcore.a
	$(CC) $(PUBLIC_CFLAGS) -o $@ $^ $(LIBS)

# The profile of measure 1 (bench/python/perf_cycles.py): the cycle loop against this core, and against the
# core of BENCH_BEFORE, the commit of the benchmark page that named the per-cycle costs (the
# unlock latch's DEL in a write of its own, a dozen signal-mask system calls per cycle), taken
# from this clone's history with git archive and built in build/bench-before (its build's output
# in build.log, shown when it fails).
BENCH_BEFORE ?= 73642ac
$(B)/cycle_loop: bench/c/cycle_loop.c $(B)/plain/librlcore.a
	$(CC) $(PUBLIC_CFLAGS) -o $@ $^ $(LIBS)

$(B)/bench-before/cycle_loop: bench/c/cycle_loop.c
	@rm -rf $(B)/bench-before && mkdir -p $(B)/bench-before/src
	@if git rev-parse --short $(BENCH_BEFORE) >$(B)/bench-before/rev 2>/dev/null; then \
	  git archive $(BENCH_BEFORE) | tar -x -C $(B)/bench-before/src && \
	  $(MAKE) -C $(B)/bench-before/src build/plain/librlcore.a >$(B)/bench-before/build.log 2>&1 \
	    || { cat $(B)/bench-before/build.log; exit 1; }; \
	  $(CC) $(WARN) $(CFLAGS) -pthread -I$(B)/bench-before/src/csrc/core $(HIREDIS_CFLAGS) \
	    -o $@ $< $(B)/bench-before/src/build/plain/librlcore.a $(HIREDIS_LIBS) -pthread; \
	else echo "bench: $(BENCH_BEFORE) is not in this checkout's history: no \"before\" rows"; \
	  rm -f $(B)/bench-before/rev; fi

# Redisson's rows: the Java program bench/redisson (Bench.java, its own Maven project), built into
# build/bench-redisson (the jar, its dependencies in lib/; Maven's output in build.log, shown when
# the build fails) and run by bench/redisson/run; set BENCH_REDISSON= (empty) to leave those rows
# out.
BENCH_REDISSON ?= $(CURDIR)/bench/redisson/run
export BENCH_REDISSON
REDISSON_JAR := $(B)/bench-redisson/redlease-bench-redisson.jar
REDISSON_SOURCES := bench/redisson/pom.xml $(shell find bench/redisson/src -name '*.java')

$(REDISSON_JAR): $(REDISSON_SOURCES)
	@rm -rf $(B)/bench-redisson && mkdir -p $(B)/bench-redisson
	mvn -q -B -f bench/redisson/pom.xml -Dbench.out=$(CURDIR)/$(B)/bench-redisson package \
	  >$(B)/bench-redisson/build.log 2>&1 || { cat $(B)/bench-redisson/build.log; exit 1; }

bench-redisson: $(REDISSON_JAR)

bench-deps: deps python-install lua-rocks $(BENCH_BINS) $(if $(BENCH_REDISSON),bench-redisson)
	$(VENV)/bin/pip install --quiet --disable-pip-version-check $(BENCH_PEERS)

bench: bench-deps
	$(PY) bench/run.py --out $(B)/bench --page docs/benchmarks.md --img docs/img

bench-smoke: bench-deps
	$(PY) bench/run.py --smoke --out $(B)/bench-smoke --results $(B)/results/bench-smoke.txt

test-bench-smoke: bench-smoke

# The operator's tools (docs/operations.md): client.scan over 50,000 keys holding 100 locks, the
# `redlease scan` command end to end, client.inspect. One JSON line, also in build/bench.
.PHONY: bench-ops
bench-ops: python-install
	@mkdir -p $(B)/bench
	$(PY) bench/python/operations.py | tee $(B)/bench/operations.json
