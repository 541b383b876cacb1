# The Cluster suite (tests/cluster): a 3-master/3-replica Redis Cluster started by the tests on
# free loopback ports (redlease.testing.RedisCluster; scripts/redis-cluster starts one by hand):
# routing, waits, the watchdog per node, slot migration, failover, bad input.
SUITES += cluster

.PHONY: test-cluster
test-cluster: python-install
	@mkdir -p build/results
	cd tests/cluster && REDLEASE_RESULTS=$(CURDIR)/build/results/cluster.txt \
	  $(CURDIR)/$(PY) -m pytest -q -p no:cacheprovider $(PY_JOBS)
