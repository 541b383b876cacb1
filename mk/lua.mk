# The Lua rock: built with luarocks from luarocks/redlease-scm-1.rockspec into one tree per
# interpreter (build/lua-lua5.4, build/lua-luajit; never the system), tested with busted under
# both. The binding is also compiled once with the project's warning flags.
SUITES += lua

# luajit is OpenResty's LuaJIT 2.1 (Debian luajit2, libluajit2-5.1-dev): the one nginx's Lua module
# runs, so that both can be installed on one machine (scripts/install-deps).
LUA_INTERPRETERS := lua5.4 luajit
LUA_ABI_lua5.4 := 5.4
LUA_ABI_luajit := 5.1
LUA_INCDIR_lua5.4 := /usr/include/lua5.4
LUA_INCDIR_luajit := /usr/include/luajit-2.1
LUA_SOURCES := $(CORE_SRC) $(CORE_HDR) $(wildcard csrc/lua/*.c csrc/lua/*.h include/*.h \
                 luarocks/*.rockspec luarocks/redlease/*.lua luarocks/redlease/resty/*.lua)

.PHONY: lua-rocks lua-strict lua-valgrind test-lua bench-lua demo-lua

# `luarocks make` runs in a copy of the sources, so that its objects stay out of the worktree
# and the two builds cannot mix.
$(B)/lua-%/.built: $(LUA_SOURCES)
	@rm -rf $(B)/lua-src-$* $(B)/lua-$* && mkdir -p $(B)/lua-src-$*
	@cp -r csrc include luarocks $(B)/lua-src-$*/
	cd $(B)/lua-src-$* && luarocks --lua-version $(LUA_ABI_$*) --tree $(CURDIR)/$(B)/lua-$* \
	  make luarocks/redlease-scm-1.rockspec LUA_INCDIR=$(LUA_INCDIR_$*) >build.log 2>&1 \
	  || { cat build.log; exit 1; }
	@touch $@

lua-rocks: $(foreach i,$(LUA_INTERPRETERS),$(B)/lua-$(i)/.built)

# -Wall -Wextra -Werror against each interpreter's headers (luarocks uses its default flags).
$(B)/lua-strict/%.ok: $(wildcard csrc/lua/*.c csrc/lua/*.h) include/redlease.h
	@mkdir -p $(dir $@)
	for f in csrc/lua/*.c; do $(CC) $(WARN) -O2 -fPIC -Iinclude $(HIREDIS_CFLAGS) \
	  -I$(LUA_INCDIR_$*) -c $$f -o $(B)/lua-strict/$*-$$(basename $$f .c).o || exit 1; done
	@touch $@

lua-strict: $(foreach i,$(LUA_INTERPRETERS),$(B)/lua-strict/$(i).ok)

test-lua: deps lua-strict lua-rocks
	tests/lua/run $(LUA_INTERPRETERS)

# The lua5.4 suite with the interpreter under valgrind (leaks and memory errors fail it);
# not part of `make test` (it takes a minute), so its count goes to build/lua-valgrind.txt.
lua-valgrind: deps lua-rocks
	LUA_RESULTS=$(CURDIR)/$(B)/lua-valgrind.txt LUA_WRAPPER="valgrind -q --leak-check=full \
	  --errors-for-leak-kinds=definite,indirect --error-exitcode=99 \
	  --log-file=$(CURDIR)/$(B)/lua-valgrind.log" tests/lua/run lua5.4
	@cat $(B)/lua-valgrind.log; test ! -s $(B)/lua-valgrind.log

# Lua acquire+release cycles/s next to the core's own figures, same server.
bench-lua: deps lua-rocks $(B)/bench_core
	scripts/with-redis bench/lua/run $(LUA_INTERPRETERS)

# The cron-style example: several "hosts" race for the same job; one runs it at a time.
demo-lua: deps lua-rocks
	scripts/with-redis examples/lua/run-demo
