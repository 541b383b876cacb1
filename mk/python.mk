# The Python package: built into a virtualenv under build/, tested with pytest, and the demo.
VENV := $(B)/venv
PY := $(VENV)/bin/python
SUITES += python

.PHONY: python-install python-runtime python-examples test-python demo-python demo-async demo-web
$(VENV)/bin/python:
	python3 -m venv $(VENV)

# Always reinstalls (pip rebuilds only what changed is not reliable for C sources); with the
# project's warning flags (-Wall -Wextra -Werror).
# `make test` installs once before its suites and sets REDLEASE_INSTALLED for them.
# python-install: with the test, lint and safety extras (pytest, mypy, ruff, gevent, uvloop, ...),
# for the suites; python-runtime: the package alone (what a user installs), for the demos.
python-install: $(VENV)/bin/python
ifndef REDLEASE_INSTALLED
	REDLEASE_STRICT=1 $(VENV)/bin/pip install --quiet --disable-pip-version-check ".[test,lint,safety]"
endif
python-runtime: $(VENV)/bin/python
	REDLEASE_STRICT=1 $(VENV)/bin/pip install --quiet --disable-pip-version-check .
# python-examples: with the `examples` extra (Starlette, uvicorn, httpx, Celery), for demo-web.
python-examples: $(VENV)/bin/python
	REDLEASE_STRICT=1 $(VENV)/bin/pip install --quiet --disable-pip-version-check ".[examples]"

# The binding compiled against the public header only: the compiler refuses any include of the
# core's internals (setup.py compiles core and binding together, so it cannot tell).
PY_INCLUDE = $(shell $(PY) -c 'import sysconfig; print(sysconfig.get_paths()["include"])')
$(B)/python-strict.ok: $(wildcard csrc/python/*.c csrc/python/*.h) include/redlease.h | $(VENV)/bin/python
	@mkdir -p $(B)/python-strict
	for f in csrc/python/*.c; do $(CC) $(PUBLIC_CFLAGS) -Wno-cast-function-type -I$(PY_INCLUDE) \
	  -c $$f -o $(B)/python-strict/$$(basename $$f .c).o || exit 1; done
	@touch $@

test-python: python-install $(B)/python-strict.ok
	@mkdir -p build/results
	cd tests/python && REDLEASE_RESULTS=$(CURDIR)/build/results/python.txt \
	  $(CURDIR)/$(PY) -m pytest -q -p no:cacheprovider $(PY_JOBS)

demo-python: python-runtime
	$(PY) examples/python/jobs_demo.py

# The asyncio example: a worker pool sharing jobs through redlease.asyncio locks.
demo-async: deps-demo python-runtime
	$(PY) examples/python/async_jobs.py

# A Starlette endpoint guarded by redlease.asyncio (client.locked): one rebuild per tenant at a
# time, served by uvicorn, asked by concurrent httpx requests; a throwaway redis-server unless
# REDIS_URL is set (tests/python/test_examples.py runs it the same way).
demo-web: deps-demo python-examples
	scripts/with-redis $(PY) examples/python/web_guard.py
