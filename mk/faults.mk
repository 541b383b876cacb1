# Fault injection (tests/faults): outages, restarts and lost replies between clients and Redis,
# through the proxy in tests/faults/proxy.py.
SUITES += faults

.PHONY: test-faults
test-faults: python-install
	@mkdir -p build/results
	cd tests/faults && REDLEASE_RESULTS=$(CURDIR)/build/results/faults.txt \
	  $(CURDIR)/$(PY) -m pytest -q -p no:cacheprovider
