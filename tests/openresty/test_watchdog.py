"""The worker's watchdog: a hold kept three watchdog timeouts stays held; 1,000 holds of
concurrent requests' light threads are renewed in one round trip per round."""

import time
from concurrent.futures import ThreadPoolExecutor

from conftest import fields, lost
from testkit import wait_for


def test_hold_for_three_watchdog_timeouts(server, raw, make_nginx):
    ng = make_nginx(watchdog=1.0)
    with ThreadPoolExecutor(1) as pool:
        holder = pool.submit(ng.get, "/hold?name=long&secs=3.2", 30)
        assert wait_for(lambda: raw("EXISTS", "long") == 1, 5)
        ttls = []
        while not holder.done():
            ttls.append(raw("PTTL", "long"))
            time.sleep(0.1)
        f = fields(holder.result()[1])
    assert f["released"] == "true" and f["lost"] == "false", f
    assert min(t for t in ttls if t > 0) > 300  # renewed well before it could expire
    assert len([t for t in ttls if t > 0]) >= 25


def evalsha_calls(raw):
    """EVALSHA calls Redis has run so far (INFO commandstats)."""
    for line in raw("INFO", "commandstats").decode().splitlines():
        if line.startswith("cmdstat_evalsha:"):
            return int(line.split("calls=")[1].split(",")[0])
    return 0


def test_1000_holds_one_round_trip_per_round(server, raw, make_nginx):
    ng = make_nginx(watchdog=3.0)  # a round every second
    with ThreadPoolExecutor(10) as pool:
        holds = [pool.submit(ng.get, f"/many?prefix=bulk{r}:&n=100&secs=4.5", 60)
                 for r in range(10)]
        assert wait_for(lambda: len(raw("KEYS", "bulk*")) == 1000, 10)
        # from here until the releases, only the watchdog talks to Redis
        before, calls_before = fields(ng.get("/stats")[1]), evalsha_calls(raw)
        time.sleep(3.2)
        mid, calls_mid = fields(ng.get("/stats")[1]), evalsha_calls(raw)
        answers = [fields(h.result()[1]) for h in holds]
    assert all(a["ok"] == "100" for a in answers), answers
    rounds = int(mid["renew_rounds"]) - int(before["renew_rounds"])
    trips = int(mid["renew_round_trips"]) - int(before["renew_round_trips"])
    calls = int(mid["renew_calls"]) - int(before["renew_calls"])
    renewed = int(mid["renewed_holds"]) - int(before["renewed_holds"])
    assert rounds >= 2
    assert int(mid["last_round_holds"]) == 1000
    assert trips == rounds, "one round trip per round (exchanges counted on the connections)"
    assert calls == rounds, "1,000 holds fit one renew call"
    assert calls_mid - calls_before == rounds, "Redis ran one EVALSHA per round"
    assert renewed == 1000 * rounds
    assert raw("KEYS", "bulk*") == []


def test_max_hold_stops_renewal(server, raw, make_nginx):
    ng = make_nginx(watchdog=0.6, errors=[lost("capped", "max_hold")])
    f = fields(ng.get("/hold?name=capped&max_hold=1&secs=2.5")[1])
    assert f["lost"] == "true" and f["reason"] == "max_hold", f
    assert f["release_err"].startswith("lost: ") and "(max_hold)" in f["release_err"], f
    assert 'lost while held: max_hold' in ng.log()
