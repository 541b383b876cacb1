"""nginx -s reload while a request holds a lock and another waits: both finish normally in the
old worker (which renews until the holder releases), the new workers lock at once, nothing is
logged in a loop. A reload cut short by worker_shutdown_timeout ends the old requests, whose
holds are then released; a worker killed outright leaves its holds to expire by their lease."""

import os
import signal
import threading
import time

from conftest import fields
from testkit import wait_for


def background(ng, path, out):
    def run():
        try:
            out.update(fields(ng.get(path, 60)[1]))
        except OSError as e:  # the request was cut short
            out["error"] = repr(e)
    t = threading.Thread(target=run)
    t.start()
    return t


def old_workers_gone(ng, old):
    return not set(old) & set(ng.worker_pids())


def test_reload_while_holding_and_waiting(server, raw, make_nginx):
    ng = make_nginx(workers=2, watchdog=1.5)
    old = ng.worker_pids()
    holder, waiter = {}, {}
    th = background(ng, "/hold?name=reload&secs=3.5", holder)
    assert wait_for(lambda: raw("EXISTS", "reload") == 1, 5)
    tw = background(ng, "/hold?name=reload&timeout=20", waiter)
    time.sleep(0.3)
    log_at = len(ng.log())
    ng.reload()
    assert wait_for(lambda: len(set(ng.worker_pids()) - set(old)) == 2, 10)
    # the new workers lock normally meanwhile (another name)
    assert fields(ng.get("/cycle?name=fresh")[1])["ok"] == "true"
    th.join(30)
    tw.join(30)
    assert holder["released"] == "true" and holder["lost"] == "false", holder  # renewed to the end
    assert waiter["acquired"] == "true" and float(waiter["got"]) >= float(holder["left"]), waiter
    assert wait_for(lambda: old_workers_gone(ng, old), 15), "the old workers exit once done"
    assert fields(ng.get("/cycle?name=reload")[1])["ok"] == "true"
    assert ng.errors(log_at) == []
    assert "renewal of" not in ng.log()[log_at:]


def test_reload_cut_short_releases_the_cut_requests_holds(server, raw, make_nginx):
    # worker_shutdown_timeout ends the old worker's requests: their holds are then holds of
    # ended requests, which the exiting worker's watchdog releases before it exits
    ng = make_nginx(workers=1, watchdog=5.0, main="worker_shutdown_timeout 1s;")
    old = ng.worker_pids()
    holder = {}
    background(ng, "/hold?name=cut&secs=30", holder)
    assert wait_for(lambda: raw("EXISTS", "cut") == 1, 5)
    log_at = len(ng.log())
    ng.reload()
    t0 = time.monotonic()
    assert wait_for(lambda: old_workers_gone(ng, old), 10), "worker_shutdown_timeout ends it"
    assert raw("EXISTS", "cut") == 0  # released, well before its 5 s lease
    assert time.monotonic() - t0 < 5.0
    assert 'lock "cut" was still held (1 hold(s))' in ng.log()[log_at:]
    assert fields(ng.get("/hold?name=cut&timeout=0")[1])["acquired"] == "true"
    assert [line for line in ng.errors(log_at) if "redlease" in line] == []


def test_worker_killed_its_holds_expire_by_their_lease(server, raw, make_nginx):
    ng = make_nginx(workers=1, watchdog=2.0, errors=[r"worker process \d+ exited on signal 9"])
    holder = {}
    background(ng, "/hold?name=killed&secs=30", holder)
    assert wait_for(lambda: raw("EXISTS", "killed") == 1, 5)
    (pid,) = ng.worker_pids()
    os.kill(pid, signal.SIGKILL)  # nothing runs in that worker any more
    t0 = time.monotonic()
    assert wait_for(lambda: raw("EXISTS", "killed") == 0, 5)
    expired = time.monotonic() - t0
    assert 0.3 < expired < 2.0 + 0.5, expired  # by its lease, not before
    assert wait_for(lambda: ng.worker_pids() not in ([], [pid]), 5)  # the master starts another
    assert fields(ng.get("/hold?name=killed&timeout=0")[1])["acquired"] == "true"


def test_first_hold_of_an_exiting_worker_is_renewed(server, raw, make_nginx):
    # the worker never held a lock before the reload: its first hold, taken while it exits
    # (where nginx refuses new recurring timers), is renewed all the same
    ng = make_nginx(workers=1, watchdog=1.5)
    raw("HSET", "late", "someone-else:1", 1)
    raw("PEXPIRE", "late", 1000)
    waiter = {}
    tw = background(ng, "/hold?name=late&timeout=20&secs=2.5", waiter)
    assert wait_for(lambda: raw("PUBSUB", "NUMSUB", "redisson_lock__channel:{late}")[1] == 1, 5)
    old = ng.worker_pids()
    ng.reload()
    tw.join(30)
    assert waiter["acquired"] == "true", waiter
    assert waiter["lost"] == "false" and waiter["released"] == "true", waiter  # past its lease
    # its hold released, the exiting worker ends by itself (its timers and sockets with it)
    assert wait_for(lambda: old_workers_gone(ng, old), 15)
