# The Python package: built into a virtualenv under build/, tested with pytest, and the demo.
VENV := $(B)/venv
PY := $(VENV)/bin/python
SUITES += python

.PHONY: python-install test-python demo-python
$(VENV)/bin/python:
	python3 -m venv $(VENV)

# Always reinstalls (pip rebuilds only what changed is not reliable for C sources); with the
# project's warning flags (-Wall -Wextra -Werror).
python-install: $(VENV)/bin/python
	REDLEASE_STRICT=1 $(VENV)/bin/pip install --quiet --disable-pip-version-check ".[test,lint]"

test-python: python-install
	@mkdir -p build/results
	cd tests/python && REDLEASE_RESULTS=$(CURDIR)/build/results/python.txt \
	  $(CURDIR)/$(PY) -m pytest -q -p no:cacheprovider

demo-python: python-install
	$(PY) examples/python/jobs_demo.py
