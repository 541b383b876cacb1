# Lint, as suites of `make test`: clang-format (a check against .clang-format), ruff and
# mypy --strict for Python (from PyPI into build/venv, the `lint` extra; configured in
# pyproject.toml), luacheck for Lua (Debian's lua-check; .luacheckrc). Each counts the files it
# checked (scripts/lint-count): a file with no finding passes, a file with findings fails.
SUITES += clang-format ruff mypy luacheck

# The C files clang-format checks: those already formatted. The others join the list once
# reformatted (`clang-format -i FILE`); in the end it is every C file of csrc, tests/c, bench/c
# and examples/c.
LINT_C_FILES := \
  bench/c/bench_limits.c bench/c/bench_parallel.c \
  csrc/core/clock.c csrc/core/clock.h csrc/core/error.h csrc/core/events.h csrc/core/fork.h \
  csrc/core/names.h csrc/core/pool.h csrc/core/random.h csrc/core/replicas.h \
  csrc/core/sigpipe.c csrc/core/sigpipe.h csrc/core/subscriber.h csrc/core/threads.c \
  csrc/core/threads.h csrc/core/url.h csrc/core/watchdog.h \
  csrc/lua/binding.h csrc/lua/compat.h \
  tests/c/test_conn.c tests/c/test_lock.c
LINT_PY_FILES := setup.py scripts/lint-count $(shell find python tests bench examples -name '*.py' | sort)
LINT_MYPY_FILES := $(wildcard python/redlease/*.py python/redlease/*.pyi)
LINT_LUA_FILES := $(shell find luarocks tests bench examples -name '*.lua' | sort)

.PHONY: lint test-clang-format test-ruff test-mypy test-luacheck
lint: test-clang-format test-ruff test-mypy test-luacheck

test-clang-format: deps
	@scripts/lint-count build/results/clang-format.txt $(LINT_C_FILES) -- \
	  clang-format --dry-run --Werror $(LINT_C_FILES)

test-ruff: python-install
	@scripts/lint-count build/results/ruff.txt $(LINT_PY_FILES) -- \
	  $(VENV)/bin/ruff check --output-format concise $(LINT_PY_FILES)

test-mypy: python-install
	@scripts/lint-count build/results/mypy.txt $(LINT_MYPY_FILES) -- $(VENV)/bin/mypy

test-luacheck: deps
	@scripts/lint-count build/results/luacheck.txt $(LINT_LUA_FILES) -- \
	  luacheck --formatter plain --codes $(LINT_LUA_FILES)
