"""Fencing in the OpenResty backend: a fenced lock's forced release advances the fence, and
client:fenced_set (the core's script, sent by the pure-Lua backend) refuses the evicted holder's
token once a newer holder wrote."""

from conftest import fields, lost


def test_forced_release_advances_the_fence_and_fenced_set_refuses_the_old_token(server, raw,
                                                                                 make_nginx):
    ng = make_nginx(errors=[lost("pay", "deleted")])
    r = fields(ng.get("/fencing?name=pay")[1])
    assert r == {"old_write": "true", "forced": "true", "advanced": "true",
                 "newer_write": "true,true", "late_write": "false,true"}
    assert raw("GET", "pay:data") == b"newer"
    assert raw("GET", "redisson_lock_token:{pay}") == b"3"
