"""Shared by the pytest suites (tests/python, tests/faults, tests/interop): a throwaway server per
test, a raw client on it, redlease clients on it, and the closing line `N passed, N failed` that
`make test` adds up (written to $REDLEASE_RESULTS as well)."""

import os

import pytest

import redlease
from redlease.testing import RedisServer
from testkit import LostRecorder, Raw


@pytest.fixture
def server():
    # DEBUG SLEEP stalls the server for tests of lost replies.
    with RedisServer(extra_args=["--enable-debug-command", "yes"]) as s:
        yield s


@pytest.fixture
def raw(server):
    r = Raw(server.url)
    yield r
    r.close()


@pytest.fixture
def clients():
    """redlease clients on any URL with any options; all closed after the test."""
    made = []

    def make(url, **options):
        c = redlease.Client(url, **options)
        made.append(c)
        return c

    yield make
    for c in made:
        c.close()


@pytest.fixture
def make_client(server, clients):
    """As clients, on the test's server unless given another URL."""
    return lambda url=None, **options: clients(url or server.url, **options)


@pytest.fixture
def lost():
    """An on_lost recorder (testkit.LostRecorder)."""
    return LostRecorder()


def pytest_terminal_summary(terminalreporter):
    stats = terminalreporter.stats
    passed = len(stats.get("passed", []))
    failed = len(stats.get("failed", [])) + len(stats.get("error", []))
    skipped = len(stats.get("skipped", []))
    for report in stats.get("skipped", []):
        terminalreporter.write_line(f"skipped: {report.nodeid}: {report.longrepr[2]}")
    line = f"{passed} passed, {failed} failed" + (f", {skipped} skipped" if skipped else "")
    terminalreporter.write_line(line)
    out = os.environ.get("REDLEASE_RESULTS")
    if out:
        with open(out, "w") as f:
            f.write(line + "\n")
