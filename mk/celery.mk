# redlease.celery: real Celery workers on a Redis broker that the tests start, one killed with
# SIGKILL mid-task; about 30 s. The folder is tests/celery_workers, not tests/celery: tests/ is
# on the suites' import path, where a folder named celery would stand for Celery itself.
SUITES += celery

.PHONY: test-celery
test-celery: python-install
	@mkdir -p build/results
	cd tests/celery_workers && REDLEASE_RESULTS=$(CURDIR)/build/results/celery.txt \
	  $(CURDIR)/$(PY) -m pytest -q -p no:cacheprovider
