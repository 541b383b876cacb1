"""The error log at nginx's default settings (lua_socket_log_errors on, which the whole suite
keeps: conftest.py fails any test whose log has an error line it did not expect): waits that
last many subscriber slices write nothing at error level; Redis going away while requests wait
is said once by the subscriber, not once per slice."""

import threading
import time

from conftest import REFUSED, RESET, SUB_LOST, fields
from testkit import wait_for


def in_background(ng, path, out):
    t = threading.Thread(target=lambda: out.update(fields(ng.get(path, 60)[1])))
    t.start()
    return t


def test_waits_log_no_error_at_the_defaults(server, raw, make_nginx):
    ng = make_nginx(workers=2)
    with open(f"{ng.dir}/conf/nginx.conf") as f:
        assert "lua_socket_log_errors" not in f.read()  # nginx's default: on
    holder, waiters, late = {}, [{} for _ in range(6)], {}
    th = in_background(ng, "/hold?name=quiet&secs=3.5", holder)
    assert wait_for(lambda: raw("EXISTS", "quiet") == 1, 5)
    threads = [in_background(ng, "/hold?name=quiet&timeout=30", w) for w in waiters]
    threads.append(in_background(ng, "/hold?name=quiet&timeout=1.5", late))  # gives up
    for t in [th] + threads:
        t.join(60)
    assert holder["released"] == "true"
    assert all(w["acquired"] == "true" for w in waiters), waiters
    assert late["acquired"] == "false", late
    # the C rock's words: how long it waited
    assert late["err"] == ('timeout: lock "quiet" is held by another owner; '
                           "not acquired within 1.500 s"), late
    time.sleep(1.5)  # the subscribers idle on their connections meanwhile
    assert ng.errors() == []


def test_redis_down_while_waiting_is_logged_once(server, raw, make_nginx):
    # nginx logs each failed connect itself (the subscriber retries with back-off up to 1 s)
    ng = make_nginx(errors=[SUB_LOST, REFUSED, RESET])
    raw("HSET", "outage", "someone-else:1", 1)  # held by another owner for longer than the test
    raw("PEXPIRE", "outage", 60000)
    waiter = {}
    tw = in_background(ng, "/hold?name=outage&timeout=20", waiter)
    assert wait_for(lambda: raw("PUBSUB", "NUMSUB", "redisson_lock__channel:{outage}")[1] == 1, 5)
    time.sleep(2.5)  # a quiet wait of more than two slices first
    assert ng.errors() == []
    server.stop()
    time.sleep(2.5)
    server.start()  # empty: the lock is free
    tw.join(30)
    assert waiter["acquired"] == "true", waiter
    assert "subscriber connection back" in ng.log()
    errors = ng.errors()
    assert len([e for e in errors if "subscriber connection" in e]) == 1, errors
    assert not [e for e in errors if "timed out" in e], errors
    # the retries: one line each, with back-off, not one per slice
    assert len(errors) < 12, errors
