# The Sentinel suite (tests/sentinel): a master, a replica and three sentinels started by the
# tests on free loopback ports; planned failovers, a killed master, errors. `make bench-failover`
# measures failovers (bench/failover.py).
SUITES += sentinel

.PHONY: test-sentinel bench-failover
test-sentinel: python-install
	@mkdir -p build/results
	cd tests/sentinel && REDLEASE_RESULTS=$(CURDIR)/build/results/sentinel.txt \
	  $(CURDIR)/$(PY) -m pytest -q -p no:cacheprovider $(PY_JOBS)

bench-failover: deps python-install
	$(PY) bench/failover.py
