"""Semaphores, permit-expirable semaphores, multi-locks and RedLock in the backend, with the
rock's answers (tests/lua/family_spec.lua): each sequence runs in one request of a real nginx.
Waits sleep on the worker's subscriber and wake as Redisson's SemaphorePubSub does (a message of
n free permits lets up to n waiters try); permits belong to the request that took them and come
back when it ends; the same script calls on the wire as the C rock."""

import subprocess
import threading
import time

from conftest import fields
from kit import Listener
from luapeer import LUA, lua_env
from redlease.testing import RedisServer
from test_wire import Captured
from testkit import wait_for


def test_semaphore_as_the_rock(server, raw, make_nginx):
    f = fields(make_nginx().get("/semaphore?name=exports")[1])
    waited = float(f.pop("waited"))
    assert 0.25 <= waited < 3, waited
    assert f == {
        "shown": 'redlease.semaphore "exports"', "set": "true", "set_again": "false",
        "after_acquire": "1", "held": "2",
        "busy": 'timeout: semaphore "exports": 2 permit(s) not free now',
        "released": "true", "released_again": "true", "after_release": "3",
        "not_owned": 'not_owned: semaphore "exports": cannot release 1 permit(s), this context '
                     "holds 0",
        "drained": "2", "held_drained": "2", "with": "3", "held_end": "0",
        "missing": 'timeout: semaphore "exports:none" has no permits (it does not exist): set '
                   "them with try_set_permits or add_permits",
        "gave_up": 'timeout: semaphore "exports:none" has no permits (it does not exist): set '
                   "them with try_set_permits or add_permits",
        "bad_permits": "bad argument 'permits' to 'acquire' (whole number from 0 expected, got "
                       "-1)",
        "bad_release": "true", "bad_name": "true"}, f
    assert raw("GET", "exports") == b"2"


def evalsha_calls(raw):
    for line in raw("INFO", "commandstats").decode().splitlines():
        if line.startswith("cmdstat_evalsha:"):
            return int(line.split("calls=")[1].split(",")[0])
    return 0


def test_a_release_of_one_permit_lets_one_waiter_try(server, raw, make_nginx):
    """Three requests' waiters, one subscription; Redisson's release of one permit publishes the
    new count (1): one waiter tries and gets it, the other two sleep on (no try, no poll)."""
    ng = make_nginx()
    raw("SET", "pool", "0")
    result = {}
    t = threading.Thread(target=lambda: result.update(
        fields(ng.get("/sem_wait?name=pool&n=3&timeout=2&hold=3")[1])))
    t.start()
    assert wait_for(lambda: raw("PUBSUB", "NUMSUB", "redisson_sc:{pool}")[1] == 1, 5)
    time.sleep(0.3)  # each waiter tried once more after the subscription
    before = evalsha_calls(raw)
    released_at = time.time()
    raw("EVAL", "redis.call('publish', KEYS[2], redis.call('incrby', KEYS[1], 1))", "2", "pool",
        "redisson_sc:{pool}")
    time.sleep(0.5)
    assert evalsha_calls(raw) - before == 1  # the woken waiter's acquire, nobody else's
    t.join(15)
    assert result["got"] == "1", result
    assert float(result["at"]) - released_at < 0.4, result
    assert raw("GET", "pool") == b"1"


def test_permits_of_an_ended_request_come_back(server, raw, make_nginx):
    ng = make_nginx()
    raw("SET", "kept", "2")
    raw("SET", "kept:p", "2")
    f = fields(ng.get("/keep?name=kept")[1])
    assert raw("GET", "kept") == b"0" or raw("GET", "kept") == b"2"
    assert wait_for(lambda: raw("GET", "kept") == b"2" and raw("GET", "kept:p") == b"2"
                    and raw("ZCARD", "{kept:p}:timeout") == 0, 5)
    log = ng.log()
    assert 'semaphore "kept" was still held (2 hold(s))' in log
    assert f'semaphore "kept:p" permit "{f["a"]}" was still held (1 hold(s))' in log


def test_permit_semaphore_as_the_rock(server, raw, make_nginx):
    f = fields(make_nginx(watchdog=0.6).get("/permits?name=workers&sleep=1.5")[1])
    took = float(f.pop("took"))
    assert 0.25 <= took < 3, took
    id_ = f.pop("id")
    assert len(id_) == 32 and int(id_, 16) >= 0
    expired = f.pop("expired_release")
    assert expired.startswith("not_owned: "), expired
    assert f == {
        "shown": 'redlease.permit_semaphore "workers"', "set": "true", "available": "1",
        "update": "true", "release": "true",
        "release_again": f'not_owned: semaphore "workers" has no permit {id_} (never acquired, '
                         "already released, or expired and taken back)",
        "with": "33", "busy": 'timeout: semaphore "workers:crash": 1 permit(s) not free now',
        "lost": "false", "still_busy": 'timeout: semaphore "workers:renewed": 1 permit(s) not '
                                       "free now",
        "renewed_release": "true",
        "bad_opts": "bad argument 'lease' to 'acquire' (a lease in seconds, or watchdog = true, "
                    "expected (one of them))",
        "bad_id": "argument: a permit id is 32 hex digits",
        "unknown": 'not_owned: semaphore "workers" has no permit ' + "0" * 32 + " (never "
                   "acquired, already released, or expired and taken back)",
        "bad_lease": "true"}, f
    assert raw("GET", "workers") == b"2" and raw("ZCARD", "{workers}:timeout") == 0


def test_multi_lock_as_the_rock(server, raw, make_nginx):
    f = fields(make_nginx().get("/multi?name=m")[1])
    waited, lease = float(f.pop("waited")), float(f.pop("wa_lease"))
    assert 0.3 <= waited < 8, waited
    assert 7 < lease <= 8, lease
    assert f.pop("busy").startswith("timeout: multi-lock not acquired: 3 of 3 lock(s) needed; "
                                    'last failure: timeout: lock "m:b" is held by another owner')
    assert f == {
        "shown": "redlease.multi_lock of 3 locks", "held_none": "0", "none_left": "true",
        "held": "3", "excluded": 'timeout: lock "m:a" is held by another owner',
        "released": "true", "with": "done",
        "not_owned": "not_owned: the multi-lock is not held by this context",
        "w_released": "true", "bad_empty": "true",
        "bad_arg": "bad argument #2 to 'multi_lock' (lock expected, got string)",
        "bad_twice": "true", "bad_lease": "true"}, f
    assert raw("KEYS", "m:*") == []


def test_red_lock_needs_a_majority(server, make_nginx):
    ng = make_nginx(errors=[r"connect\(\) failed \(111: Connection refused\)"])
    servers = [RedisServer().__enter__() for _ in range(2)]
    try:
        urls = ",".join([server.url] + [s.url for s in servers])
        servers[1].__exit__(None, None, None)  # one of three down: a majority is left
        f = fields(ng.get("/redlock?urls=" + urls)[1])
        assert f == {"shown": "redlease.red_lock of 3 locks", "acquired": "true", "held": "2",
                     "released": "true"}, f
        servers[0].__exit__(None, None, None)  # two down: no majority
        f = fields(ng.get("/redlock?urls=" + urls)[1])
        assert f["acquired"] == "false" and f["held"] == "0", f
        assert f["err"].startswith("timeout: RedLock not acquired: 2 of 3 lock(s) needed"), f
    finally:
        for s in servers:
            s.__exit__(None, None, None)


ROCK_SEQUENCE = """
local redlease = require "redlease"
local c = assert(redlease.connect(arg[1], { watchdog_timeout = 1.5 }))
local name = arg[2]
local sem = c:semaphore(name)
assert(sem:try_set_permits(3))
local g = assert(sem:acquire { permits = 2 })
assert(g:release())
assert(sem:drain_permits() == 3)
assert(sem:release(3))
assert(sem:add_permits(1))
assert(sem:available_permits() == 4)
local ps = c:permit_expirable_semaphore(name .. ":p")
assert(ps:try_set_permits(2))
local id = assert(ps:acquire { lease = 5 })
assert(ps:update_lease_time(id, 10))
assert(ps:release(id))
assert(ps:available_permits() == 2)
local multi = c:multi_lock(c:lock(name .. ":a"), c:lock(name .. ":b"))
local mg = assert(multi:acquire { lease = 5, timeout = 1 })
assert(mg:release())
c:close()
"""


def normal(calls):
    """Script calls with the values that differ per run made alike: permit ids (16 raw bytes,
    the member of the timeout ZSET's commands) and dates from Redis's clock."""
    out = []
    for call in calls:
        call = tuple("<date>" if a.isdigit() and len(a) >= 12 else a for a in call)
        if call[0] in ("zadd", "zscore", "zrem") and call[1].endswith(":timeout"):
            call = call[:-1] + ("<permit>",)
        out.append(call)
    return out


def test_same_script_calls_as_the_c_rock(server, raw, make_nginx):
    ng = make_nginx()
    monitor = Listener(server.url, "MONITOR")
    try:
        monitor.mark("start")
        subprocess.run([LUA, "-", server.url, "fam"], input=ROCK_SEQUENCE.encode(),
                       env=lua_env(), check=True, timeout=30)
        monitor.mark("c")
        raw("FLUSHALL")
        monitor.mark("flushed")
        assert fields(ng.get("/wire_family?name=fam")[1]) == {"ok": "true"}
        monitor.mark("resty")
        c = Captured(monitor.between("start", "c"), b"fam")
        r = Captured(monitor.between("flushed", "resty"), b"fam")
        assert normal(r.calls) == normal(c.calls) and len(c.calls) > 20
        assert r.others == c.others
    finally:
        monitor.close()
