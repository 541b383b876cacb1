"""A hold's validity on the worker's clock, as the rock's (docs/semantics.md, "Knowing how long
you hold it"): lock:valid_for() never more than the lease Redis keeps, lock:check{} passing while
held, in doubt (in_doubt(), check's "in_doubt: ..." answer) while a paused Redis keeps a renewal
from being confirmed, and held again once one is."""

import threading
import time

from conftest import fields
from testkit import wait_for

VALIDITY = r"""
    location /validity { content_by_lua_block {
      local l = require("app").client:lock(ngx.var.arg_name)
      local g = assert(l:acquire())
      local out = {}
      local v, pttl = l:valid_for(), l:remaining()
      out[#out + 1] = "within_truth=" .. tostring(v > 0 and v <= pttl)
      out[#out + 1] = "checked=" .. tostring(l:check { min_left = 1 } ~= nil)
      local doubt, words, back = false, "", false
      local stop = ngx.now() + tonumber(ngx.var.arg_for)
      while ngx.now() < stop do -- sampled while the test pauses Redis
        if l:in_doubt() then
          doubt = true
          local left, err = l:check()
          if not left and words == "" then words = err:match("^([%w_]+):") end
        elseif doubt then
          back = true
        end
        ngx.sleep(0.02)
      end
      out[#out + 1] = "doubt=" .. tostring(doubt)
      out[#out + 1] = "words=" .. words
      out[#out + 1] = "held_again=" .. tostring(back and not l:in_doubt())
      v, pttl = l:valid_for(), l:remaining()
      out[#out + 1] = "within_truth_after=" .. tostring(v > 0 and v <= pttl)
      out[#out + 1] = "lost=" .. tostring((l:lost()))
      g:release()
      out[#out + 1] = "after_release=" .. select(2, l:check())
      ngx.say(table.concat(out, "\n"))
    } }
"""


def test_in_doubt_while_redis_is_paused_then_held_again(server, raw, make_nginx):
    # a 3 s watchdog lease, renewed each second: a 2 s pause makes the round that falls in it
    # late (half a period) and then fail, well before the confirmed lease ends
    # the renewal that meets the pause times out: nginx logs it (lua_socket_log_errors on, its
    # default), an expected line here
    ng = make_nginx(watchdog=3, locations=VALIDITY, errors=[r"lua tcp socket read timed out"])
    got = {}

    def request():
        got.update(fields(ng.get("/validity?name=valid&for=4")[1]))

    t = threading.Thread(target=request)
    t.start()
    assert wait_for(lambda: raw("EXISTS", "valid") == 1, 5)
    time.sleep(0.3)
    raw("CLIENT", "PAUSE", "2000", "ALL")
    t.join(20)
    assert got == {"within_truth": "true", "checked": "true", "doubt": "true",
                   "words": "in_doubt", "held_again": "true", "within_truth_after": "true",
                   "lost": "false",
                   "after_release": 'not_owned: lock "valid" is not held by this request'}, got
    assert "in doubt" in ng.log() and "held again" in ng.log()


def test_a_grant_answered_after_its_lease_ended_is_given_back(raw, make_nginx):
    """Redis sleeps while the acquire waits in its queue (a worker stopped between sending and
    reading is the same): the grant's 0.1 s lease has ended by the answer, another owner may
    hold the lock by then, so the worker gives it back and says so, as the rock does
    (tests/c/test_validity.c). A short fixed lease, so that a 0.4 s stall outlasts it."""
    ng = make_nginx()
    assert fields(ng.get("/cycle?name=warm&timeout=0")[1]) == {"ok": "true"}  # scripts loaded
    stall = threading.Thread(target=lambda: raw("DEBUG", "SLEEP", "0.4"))
    stall.start()
    time.sleep(0.05)  # asleep now: the acquire waits in Redis's queue
    late = fields(ng.get("/hold?name=late&timeout=0&lease=0.1")[1])
    stall.join()
    assert late["acquired"] == "false", late
    assert "after the lease it granted had ended" in late["err"], late
    assert raw("EXISTS", "late") == 0  # given back at once, not left to expire
    again = fields(ng.get("/hold?name=late&timeout=0&lease=0.1")[1])
    assert again["acquired"] == "true", again  # answered in time
