# The safety harness (tests/safety): real partitions (nftables), pauses, Redis stalls, failovers,
# reshards, a clock jump and latency against client processes doing locked work and fenced
# writes to PostgreSQL, on one Redis, Sentinel and a Redis Cluster; checks overlaps, lost
# increments and availability; client processes in Python, in Lua (the rock under lua5.4,
# built by mk/lua.mk's rule) and, with one Redis, in nginx (the rock's OpenResty backend). `make safety` runs the full schedule (about 75 minutes on 2
# cores) and writes docs/safety.md; `make test-safety` is the short form (a few minutes), a
# suite of `make test`. Both need root (nftables); scripts/install-deps installs nftables,
# PostgreSQL and libfaketime; the clock jump runs Valkey (scripts/fetch-servers valkey8).
SUITES += safety
SAFETY_SEEDS ?=

.PHONY: safety test-safety
safety: deps python-install $(B)/lua-lua5.4/.built
	$(PY) tests/safety/run.py --full $(foreach s,$(SAFETY_SEEDS),--seed $(s)) --out $(B)/safety \
	  --page docs/safety.md --img docs/img

test-safety: python-install $(B)/lua-lua5.4/.built
	@mkdir -p build/results
	cd tests/safety && REDLEASE_RESULTS=$(CURDIR)/build/results/safety.txt \
	  $(CURDIR)/$(PY) -m pytest -q -p no:cacheprovider
