"""The count-down latch in the backend (Redisson's RCountDownLatch), with the rock's answers
(tests/lua/family_spec.lua): try_set_count, count_down, count, a wait that ends when another
process counts down to zero (every waiter of the worker wakes on that one message), a timed wait
that gives up, delete, and bad input."""

import threading

from conftest import fields
from testkit import wait_for

CHANNEL = "redisson_countdownlatch__channel__{batch}"
REDISSON_COUNT_DOWN = ("if redis.call('decr', KEYS[1]) <= 0 then redis.call('del', KEYS[1]); "
                       "redis.call('publish', KEYS[2], '0') end")


def test_latch_as_the_rock(server, raw, make_nginx):
    ng = make_nginx()
    result = {}
    t = threading.Thread(target=lambda: result.update(fields(ng.get("/latch?name=batch")[1])))
    t.start()
    # both waiters are subscribed (one subscription for the worker) and still waiting
    assert wait_for(lambda: raw("PUBSUB", "NUMSUB", CHANNEL)[1] == 1, 5)
    assert raw("GET", "batch") == b"1"
    raw("EVAL", REDISSON_COUNT_DOWN, "2", "batch", CHANNEL)
    t.join(30)
    assert result == {
        "set": "true", "set_again": "false", "down": "true", "count": "1", "not_yet": "true",
        "waiters": "true,true", "woken_in_time": "true", "count_after": "0", "gave_up": "true",
        "delete": "true",
        "delete_again": "false",
        "bad_count": "bad argument 'count' to 'try_set_count' (whole number from 1 expected, "
                     "got 0)",
        "bad_wait": "true"}, result
