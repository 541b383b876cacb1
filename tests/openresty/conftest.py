"""Fixtures of the openresty suite: per test a throwaway redis-server (tests/conftest.py) and
nginx instances made by ``make_nginx(...)`` (nginx.py), all stopped by pid afterwards; their
error logs are printed when a test fails."""

import os
import re
import subprocess
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "interop"))

from nginx import Nginx  # noqa: E402

# The locations every test app has (app.lua); a test adds its own.
LOCATIONS = """
    location /hold { content_by_lua_block { require("app").hold() } }
    location /cycle { content_by_lua_block { require("app").cycle() } }
    location /stats { content_by_lua_block { require("app").stats() } }
    location ~ ^/(sequence|critical|many|gc|leak_error|api|afresh|settle|stray|watch_loss)$ {
      content_by_lua_block { require("app")[ngx.var[1]]() }
    }
    location ~ ^/(reacquire|handover|fencing|named|lost_retry|ops|hand_off|release_token)$ {
      content_by_lua_block { require("app")[ngx.var[1]]() }
    }
    location ~ ^/(inspect|latch|unsupported)$ {
      content_by_lua_block { require("app")[ngx.var[1]]() }
    }
    location ~ ^/(semaphore|sem_wait|keep|permits|multi|redlock|wire_family)$ {
      content_by_lua_block { require("app_family")[ngx.var[1]]() }
    }
"""


def lost(name, reason):
    """The error line of a hold the test makes Redis lose (a real problem, said at error level)."""
    return rf'redlease: lock "{re.escape(name)}" lost while held: {reason}'


# nginx's own lines for a Redis the test stops or stalls (lua_socket_log_errors on)
REFUSED = r"connect\(\) failed \(111: Connection refused\)"
RESET = r"recv\(\) failed \(104: Connection reset by peer\)"
READ_TIMED_OUT = r"lua tcp socket read timed out"
SUB_LOST = r"redlease: subscriber connection: .*; waiters resubscribe once Redis answers"


def init_worker(watchdog=1.5, code="", options=""):
    """options: more fields of the client's connect options (Lua table syntax)."""
    return (f'  init_worker_by_lua_block {{ require("app").init("{{redis}}", '
            f'{{ watchdog_timeout = {watchdog}, {options} }}) {code} }}\n')


@pytest.fixture(scope="module")
def certs(tmp_path_factory):
    """The certificates of tests/tls/make-certs (test_tls*.py), made once per module."""
    path = tmp_path_factory.mktemp("certs")
    subprocess.run([os.path.join(HERE, "..", "tls", "make-certs"), str(path)], check=True)
    return path


@pytest.fixture
def make_nginx(server, request):
    """make_nginx(workers=1, watchdog=1.5, http="", locations="", main="", start=True,
    init_worker_code="", options="", errors=()). options: more connect options of the app's
    client (Lua table fields). errors: regular expressions of the error-level lines the
    test expects (a lost hold it provokes, Redis it stops); any other [error], [alert], [crit]
    or [emerg] line in the whole log, from start to stop, fails the test."""
    made = []

    def make(workers=1, watchdog=1.5, http="", locations="", main="", start=True, url=None,
             init_worker_code="", options="", errors=()):
        ng = Nginx(url or server.url,
                   http_block=init_worker(watchdog, init_worker_code, options) + http,
                   server_block=LOCATIONS + locations, workers=workers, main_block=main)
        ng.expected_errors = [re.compile(e) for e in errors]
        made.append(ng)
        return ng.start() if start else ng

    yield make
    failed = getattr(request.node, "rep_call", None)
    unexpected = []
    for ng in made:
        ng.stop()  # what the workers log on their way out counts too
        extra = [line for line in ng.errors()
                 if not any(e.search(line) for e in ng.expected_errors)]
        unexpected += extra
        if extra or (failed is not None and failed.failed):
            print(f"--- nginx error log ({ng.dir}) ---\n{ng.log()[-20000:]}")
        ng.close()
    if unexpected:
        pytest.fail("unexpected lines in the nginx error log:\n" + "\n".join(unexpected[:20]),
                    pytrace=False)


@pytest.hookimpl(hookwrapper=True, tryfirst=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    rep = outcome.get_result()
    setattr(item, "rep_" + rep.when, rep)


def fields(body: str) -> dict:
    """The key=value lines of an app answer."""
    out = {}
    for line in body.splitlines():
        if "=" in line:
            k, v = line.split("=", 1)
            out[k] = v
    return out
