# The documentation site: MkDocs with Material, built strictly from docs/ (mkdocs.yml) into
# build/site, with the Python API reference from the package's docstrings and stubs
# (mkdocstrings) and the Lua API reference from the rock's sources (tools/docs/lua_api.py).
# The tools, pinned in tools/docs/requirements.txt, come from PyPI into build/docs-venv.
#   make docs        build/site (open build/site/index.html)
#   make test-docs   the site builds with no warning, its references match the package and the
#                    rock, and a broken link, anchor or reference fails it (tests/docs)
SUITES += docs

DOCS_VENV := $(B)/docs-venv

.PHONY: docs test-docs

$(DOCS_VENV)/.ok: tools/docs/requirements.txt
	rm -rf $(DOCS_VENV) && python3 -m venv $(DOCS_VENV)
	$(DOCS_VENV)/bin/pip install --quiet --disable-pip-version-check -r tools/docs/requirements.txt
	@touch $@

docs: $(DOCS_VENV)/.ok
	NO_MKDOCS_2_WARNING=1 $(DOCS_VENV)/bin/mkdocs build --strict --quiet
	@echo "the site: $(B)/site/index.html"

test-docs: python-install $(DOCS_VENV)/.ok $(B)/lua-lua5.4/.built
	@mkdir -p build/results
	cd tests/docs && REDLEASE_RESULTS=$(CURDIR)/build/results/docs.txt \
	  $(CURDIR)/$(PY) -m pytest -q -p no:cacheprovider
