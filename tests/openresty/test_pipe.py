"""The worker's shared connection (resty/pipe.lua): the calls of all of a worker's requests go
over one pipelined connection to one Redis; a connection Redis closes is replaced before the next
call; a call Redis does not answer fails alone; clients made per request (past the worker's
limit of pipes) take the direct path and still work."""

import re
import threading
import time

from conftest import fields
from testkit import wait_for


def connections_received(raw) -> int:
    info = raw("INFO", "stats").decode()
    return int(re.search(r"total_connections_received:(\d+)", info).group(1))


def hammer(ng, path, requests, threads):
    answers, lock = [], threading.Lock()

    def run(n):
        for _ in range(n):
            a = fields(ng.get(path)[1])
            with lock:
                answers.append(a)

    ts = [threading.Thread(target=run, args=(requests // threads,)) for _ in range(threads)]
    for t in ts:
        t.start()
    for t in ts:
        t.join(60)
    return answers


def test_a_worker_s_requests_share_one_connection(server, raw, make_nginx):
    ng = make_nginx()
    assert fields(ng.get("/cycle?name=warm")[1])["ok"] == "true"
    before = connections_received(raw)
    # 16 requests at a time, each with its own lock name: with a connection per call, as the
    # direct path has, nginx's pool would open up to 16
    answers = hammer(ng, "/cycle?name=shared", 400, 16)
    assert len(answers) == 400 and all(a["ok"] == "true" for a in answers), answers[:3]
    made = connections_received(raw) - before
    # the shared one was open already, and every call (latch flushes included) goes over it;
    # one more is tolerated for a connection Redis might drop meanwhile
    assert made <= 1, made
    clients = [c for c in raw("CLIENT", "LIST").decode().splitlines() if "name=redlease:" in c]
    assert len(clients) <= 2, clients
    assert fields(ng.get("/stats")[1])["shared_connection"] == "true"


def test_a_connection_redis_closes_is_replaced(server, raw, make_nginx):
    ng = make_nginx()
    assert fields(ng.get("/cycle?name=kill")[1])["ok"] == "true"
    killed = raw("CLIENT", "KILL", "TYPE", "normal", "SKIPME", "yes")
    assert killed >= 1
    # the reader sees the close at once: the next acquire (which is never sent twice) goes out
    # on a new connection, not on the dead one
    for _ in range(3):
        assert fields(ng.get("/hold?name=kill")[1])["acquired"] == "true"


def test_a_call_redis_does_not_answer_fails_alone_and_the_connection_comes_back(
        server, raw, make_nginx):
    # command_timeout shortened so that the test does not wait the default 5 s; the default
    # takes the same path (test_lost_acquire.py stalls Redis under it)
    ng = make_nginx(options="command_timeout = 0.5",
                    errors=[r"lua tcp socket read timed out", r"recv\(\) failed"])
    assert fields(ng.get("/cycle?name=stall")[1])["ok"] == "true"
    raw("CLIENT", "PAUSE", "1500", "ALL")
    t0 = time.monotonic()
    stalled = fields(ng.get("/hold?name=stalled&timeout=0")[1])
    took = time.monotonic() - t0
    assert stalled["acquired"] == "false" and "no answer" in stalled["err"], stalled
    assert took < 1.4, took  # its own timeout, not the pause's end
    # once Redis answers again, calls go through; the lost acquire's hold is taken back
    assert wait_for(lambda: fields(ng.get("/hold?name=after")[1]).get("acquired") == "true", 5)
    assert wait_for(lambda: raw("EXISTS", "stalled") == 0, 10)


CLIENT_PER_REQUEST = """
    location /own_client {
      content_by_lua_block {
        local redlease = require "redlease"
        local c = redlease.connect(require("app").url) -- (never closed: its pipe ends when idle)
        local g, err = c:lock("own"):acquire { timeout = 5 }
        ngx.say("ok=", tostring(g and g:release()), "\\nerr=", tostring(err))
        ngx.say("shared=", tostring(c:stats().shared_connection))
      }
    }
"""


def test_clients_made_per_request_past_the_limit_take_the_direct_path(server, make_nginx):
    ng = make_nginx(locations=CLIENT_PER_REQUEST)
    answers = hammer(ng, "/own_client", 64, 16)
    assert len(answers) == 64 and all(a["ok"] == "true" for a in answers), answers[:3]
    # each client's pipe (a timer) lives until it is idle for 10 s: 8 of them at most in a
    # worker, and the other clients took the direct path
    shared = sum(a["shared"] == "true" for a in answers)
    assert shared == 8, answers
