"""The checkers on made-up histories: each must be able to fail."""

import checker
import history

MS = 1_000_000


def acq(proc, owner, start, end, lock="L", ok=True, token=None):
    return history.check({"kind": "acquire", "proc": proc, "owner": owner, "lock": lock,
                          "start": start * MS, "end": end * MS, "ok": ok, "token": token})


def rel(proc, owner, start, end, lock="L", reason=None):
    return history.check({"kind": "release", "proc": proc, "owner": owner, "lock": lock,
                          "start": start * MS, "end": end * MS, "ok": reason is None,
                          "reason": reason})


def lost(proc, t, lock="L"):
    return history.check({"kind": "lost", "proc": proc, "lock": lock, "t": t * MS,
                          "reason": "unreachable"})


def state(proc, t, to, lock="L"):
    return history.check({"kind": "state", "proc": proc, "lock": lock, "t": t * MS, "state": to})


def fault(kind, target, start, end):
    return history.check({"kind": "fault", "fault": kind, "target": target, "start": start * MS,
                          "end": end * MS})


def overlaps(events, faults=()):
    return checker.overlaps(checker.holds(events, 10_000 * MS), list(faults))


def test_disjoint_holds_do_not_overlap():
    assert overlaps([acq("p0", "t0", 0, 1), rel("p0", "t0", 10, 11),
                     acq("p1", "t0", 5, 11), rel("p1", "t0", 20, 21)]) == []


def test_unreported_overlap_is_flagged():
    (o,) = overlaps([acq("p0", "t0", 0, 1), rel("p0", "t0", 30, 31),
                     acq("p1", "t0", 5, 10), rel("p1", "t0", 20, 21)])
    assert not o.reported and o.earlier.proc == "p0" and o.later.proc == "p1"
    assert o.length_ns == 10 * MS and not o.outside_promise


def test_loss_told_after_the_later_holder_entered_is_unreported():
    (o,) = overlaps([acq("p0", "t0", 0, 1), lost("p0", 12), rel("p0", "t0", 30, 31, reason="x"),
                     acq("p1", "t0", 5, 10), rel("p1", "t0", 20, 21)])
    assert not o.reported and o.earlier.told == 12 * MS


def test_loss_told_before_the_later_holder_entered_is_reported_with_its_margin():
    (o,) = overlaps([acq("p0", "t0", 0, 1), lost("p0", 4), rel("p0", "t0", 30, 31, reason="x"),
                     acq("p1", "t0", 5, 10), rel("p1", "t0", 20, 21)])
    assert o.reported and o.margin_ns == 6 * MS


def test_a_hold_in_doubt_when_the_later_holder_entered_is_reported_from_the_doubt():
    (o,) = overlaps([acq("p0", "t0", 0, 1), state("p0", 3, "in_doubt"), rel("p0", "t0", 30, 31),
                     acq("p1", "t0", 5, 10), rel("p1", "t0", 20, 21)])
    assert o.reported and o.margin_ns == 7 * MS and o.told_by == "state:in_doubt"


def test_a_doubt_taken_back_before_the_later_holder_entered_reports_nothing():
    (o,) = overlaps([acq("p0", "t0", 0, 1), state("p0", 3, "in_doubt"), state("p0", 4, "held"),
                     rel("p0", "t0", 30, 31), acq("p1", "t0", 5, 10), rel("p1", "t0", 20, 21)])
    assert not o.reported and o.told_by == ""
    # a doubt that comes back counts from its own start
    (o,) = overlaps([acq("p0", "t0", 0, 1), state("p0", 2, "in_doubt"), state("p0", 3, "held"),
                     state("p0", 6, "in_doubt"), rel("p0", "t0", 30, 31),
                     acq("p1", "t0", 5, 10), rel("p1", "t0", 20, 21)])
    assert o.reported and o.margin_ns == 4 * MS


def test_a_doubt_after_the_later_holder_entered_is_unreported():
    (o,) = overlaps([acq("p0", "t0", 0, 1), state("p0", 11, "in_doubt"), rel("p0", "t0", 30, 31),
                     acq("p1", "t0", 5, 10), rel("p1", "t0", 20, 21)])
    assert not o.reported


def test_lock_lost_error_at_release_tells_at_its_end():
    hs = checker.holds([acq("p0", "t0", 0, 1), rel("p0", "t0", 30, 31, reason="expired")], 0)
    assert hs[0].told == 31 * MS and hs[0].told_by == "release:expired"


def test_one_owner_reentering_is_no_overlap_but_two_threads_are():
    assert overlaps([acq("p0", "t0", 0, 1), acq("p0", "t0", 2, 3), rel("p0", "t0", 4, 5),
                     rel("p0", "t0", 6, 7)]) == []
    assert len(overlaps([acq("p0", "t0", 0, 1), acq("p0", "t1", 2, 3), rel("p0", "t1", 4, 5),
                         rel("p0", "t0", 6, 7)])) == 1


def test_other_locks_do_not_overlap():
    assert overlaps([acq("p0", "t0", 0, 1, "A"), rel("p0", "t0", 9, 9, "A"),
                     acq("p1", "t0", 2, 3, "B"), rel("p1", "t0", 4, 5, "B")]) == []


def test_a_holder_paused_past_its_lease_is_outside_the_promise():
    (o,) = overlaps([acq("p0", "t0", 0, 1), rel("p0", "t0", 30, 31),
                     acq("p1", "t0", 5, 10), rel("p1", "t0", 20, 21)],
                    [fault("pause-holder", ["p0"], 2, 25)])
    assert not o.reported and o.outside_promise == "pause-holder"
    (o,) = overlaps([acq("p0", "t0", 0, 1), rel("p0", "t0", 30, 31),
                     acq("p1", "t0", 5, 10), rel("p1", "t0", 20, 21)],
                    [fault("pause-holder", ["p1"], 11, 25)])  # p1 paused after it began
    assert not o.outside_promise


def test_a_hold_running_when_the_redis_clock_jumped_is_outside_the_promise():
    events = [acq("p0", "t0", 0, 1), rel("p0", "t0", 30, 31, reason="deleted"),
              acq("p1", "t0", 5, 10), rel("p1", "t0", 20, 21)]
    (o,) = overlaps(events, [fault("clock-jump", ["127.0.0.1 +5 s"], 3, 8)])
    assert not o.reported and o.outside_promise == "clock-jump"
    # a jump after the later hold began explains nothing of this overlap
    (o,) = overlaps(events, [fault("clock-jump", ["127.0.0.1 +5 s"], 12, 18)])
    assert not o.outside_promise


def test_a_process_paused_in_its_acquire_past_its_lease_is_outside_the_promise():
    # p1's acquire was granted, then p1 stopped; it reads the grant after its lease ran out
    events = [acq("p0", "t0", 0, 1), rel("p0", "t0", 30, 31),
              acq("p1", "t0", -5, 10), rel("p1", "t0", 20, 21)]
    (o,) = overlaps(events, [fault("pause-holder", ["p1"], -3, 9)])
    assert not o.reported and o.outside_promise == "pause-holder"
    (o,) = overlaps(events, [fault("pause-holder", ["p2"], -3, 9)])
    assert not o.outside_promise


def test_fenced_rows_lost_increment_and_token_order():
    ok = checker.check_fenced(checker.Fenced("fenced", 3, [(1, 1), (2, 2), (5, 3)]))
    assert ok.lost_increments == 0 and ok.token_order_errors == []
    bad = checker.check_fenced(checker.Fenced("fenced", 2, [(1, 1), (4, 2), (3, 2)]))
    assert bad.lost_increments == 1 and bad.token_order_errors == ["token 3 accepted after 4"]
    unfenced = checker.check_fenced(checker.Fenced("unfenced", 1, [(None, 1), (None, 1)]))
    assert unfenced.lost_increments == 1 and unfenced.token_order_errors == []


def test_availability_counts_and_finds_a_stuck_lock():
    events = [acq("p0", "t0", 1, 2), acq("p0", "t0", 11, 12, ok=False),
              acq("p1", "t0", 25, 26), acq("p1", "t0", 30, 31, lock="M", ok=False)]
    f = [fault("pause-redis", ["redis"], 10, 20)]
    av = checker.availability(events, f, 100 * MS, 5 * MS, 1 * MS)
    assert (av.during_ok, av.during, av.after_ok, av.after) == (0, 1, 1, 2)
    assert av.recoveries_ns == [80 * MS]  # M never came back before the run's end
    assert av.stuck == ["M"] and av.healed_to_usable_ns == {"L": 6 * MS}


def test_an_unknown_event_kind_is_refused():
    import pytest
    with pytest.raises(ValueError):
        history.check({"kind": "nonsense"})
    with pytest.raises(ValueError):
        history.check({"kind": "lost", "proc": "p0"})


def hello(proc, lang):
    return history.check({"kind": "hello", "proc": proc, "client_id": proc, "pid": 1,
                          "lang": lang})


def test_overlaps_and_events_are_counted_per_language():
    """A Lua holder overlapped unreported by a Python one, reported by another Lua one: each pair
    of languages (earlier > later) gets its own counts, and each language its events."""
    events = [hello("p0", "python"), hello("p1", "lua"), hello("p2", "lua"),
              acq("p1", "c0", 0, 1), rel("p1", "c0", 30, 31),
              acq("p0", "t0", 5, 10), rel("p0", "t0", 20, 21),
              acq("p1", "c1", 40, 41, lock="M"), lost("p1", 42, lock="M"),
              rel("p1", "c1", 60, 61, lock="M", reason="expired"),
              acq("p2", "c0", 45, 46, lock="M"), rel("p2", "c0", 50, 51, lock="M"),
              acq("p2", "c1", 70, 75, ok=False)]
    per, pairs = checker.by_language(events, overlaps(events))
    assert pairs == {"lua>lua": {"overlaps": 1, "reported": 1, "unreported": 0,
                                 "outside_promise": 0},
                     "lua>python": {"overlaps": 1, "reported": 0, "unreported": 1,
                                    "outside_promise": 0}}
    assert per["python"] == {"procs": ["p0"], "attempts": 1, "acquisitions": 1, "releases": 1,
                             "lost": 0, "writes": 0, "accepted": 0, "locks": {"L": 1}}
    assert per["lua"]["procs"] == ["p1", "p2"] and per["lua"]["attempts"] == 4
    assert per["lua"]["acquisitions"] == 3 and per["lua"]["lost"] == 1
    assert per["lua"]["locks"] == {"L": 1, "M": 2}


def test_a_history_without_languages_is_python():
    assert checker.languages([history.check({"kind": "hello", "proc": "p0", "client_id": "x",
                                             "pid": 1})]) == {"p0": "python"}
