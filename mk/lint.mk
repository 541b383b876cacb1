# Lint, as suites of `make test`: clang-format (a check against .clang-format), ruff and
# mypy --strict for Python (from PyPI into build/venv, the `lint` extra; configured in
# pyproject.toml), luacheck for Lua (Debian's lua-check; .luacheckrc). Each counts the files it
# checked (scripts/lint-count): a file with no finding passes, a file with findings fails.
SUITES += clang-format ruff mypy luacheck

# The C files clang-format checks: every C file of csrc, tests/c, bench/c, examples/c and tools
# (the Redis scripts' texts, in csrc/core/kinds/*.c and watchdog.c, are kept as Lua lines, between
# clang-format off/on).
LINT_C_FILES := $(sort $(wildcard csrc/*/*.[ch] csrc/core/*/*.[ch] tests/c/*.[ch] bench/c/*.[ch] examples/c/*.[ch] \
                  tools/*.[ch]))
LINT_PY_FILES := setup.py scripts/lint-count $(shell find python tests bench examples tools -name '*.py' | sort)
LINT_MYPY_FILES := $(wildcard python/redlease/*.py python/redlease/*.pyi python/redlease/cli/*.py)
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
