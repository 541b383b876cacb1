"""redlease.inspect and lock:owner(), and the rock's extend, reacquire, hand_off and
release_token in the backend, with the rock's answers (tests/lua/ops_spec.lua): extend adds to
the lease left (replace sets it), reacquire restores the hold's lease, both refused in watchdog
mode and never reviving a deleted hold; a hand-off closes the run's guards without releasing, and
its token frees every hold of that owner from another run or request, once."""

import time

from conftest import fields, lost


def test_extend_reacquire_hand_off_in_one_request(server, raw, make_nginx):
    ng = make_nginx(errors=[lost("ops", "deleted")])  # the deleted hold extend must not revive
    r = fields(ng.get("/ops?name=ops")[1])
    assert r == {
        "extend_none": "not_owned", "extend": "true", "extended": "true", "replace": "true",
        "replaced": "true", "reacquire": "true", "reacquired": "true", "zero_raises": "true",
        "release": "true", "dog": "true", "dog_reacquire": "true", "revive": "lost",
        "revived": "false", "token_names_client": "true", "guards_closed": "true",
        "release_after": "not_owned", "closed_guard": "true", "still_held": "true",
        "token_release": "true", "gone": "true", "token_again": "not_owned",
        "nonsense": "argument"}, r


def test_a_handed_off_hold_outlives_its_request(server, raw, make_nginx):
    # the request that handed it off ends: the watchdog does not release it (1.5 s watchdog:
    # rounds every 0.5 s); another request frees it with the token
    ng = make_nginx()
    token = fields(ng.get("/hand_off?name=handed")[1])["token"]
    time.sleep(2)
    assert raw("EXISTS", "handed") == 1 and raw("PTTL", "handed") > 5000
    assert "was still held" not in ng.log()
    assert fields(ng.get(f"/release_token?name=handed&token={token}")[1]) == {"ok": "true"}
    assert raw("EXISTS", "handed") == 0


def test_inspect_and_owner_decode_as_the_rock(server, raw, make_nginx):
    ng = make_nginx()
    r = fields(ng.get("/inspect")[1])
    assert r == {"reentrant": "true", "owner": "true", "owner_in_thread": "true",
                 "nothing": "none,false", "fair": "true", "rw": "true", "write": "true",
                 "fenced": "true", "counter": "true", "other": "other", "bad_client": "true",
                 "bad_name": "true"}, r
