"""The watchdog with 10,000 holds over the three masters: each round takes one round trip per
node (the client's stats count them), and nothing is lost."""

import time

from testkit import LostRecorder, wait_for


def test_ten_thousand_holds_one_round_trip_per_node_per_round(cluster, clients):
    lost = LostRecorder()
    c = clients(cluster.url, watchdog_timeout=3, on_lost=lost)  # a round every second
    locks = [c.lock(f"many:{i}") for i in range(10_000)]
    for lock in locks:
        assert lock.acquire(timeout=0)
    # A round that started while the acquires went on may have carried only some of them.
    assert wait_for(lambda: c.stats()["last_round_holds"] == 10_000, 5)
    before = c.stats()
    assert wait_for(lambda: c.stats()["renew_rounds"] >= before["renew_rounds"] + 3, 10)
    after = c.stats()
    rounds = after["renew_rounds"] - before["renew_rounds"]
    assert after["last_round_holds"] == 10_000 and after["last_round_nodes"] == 3
    assert after["renew_round_trips"] - before["renew_round_trips"] == 3 * rounds
    assert after["renewed_holds"] - before["renewed_holds"] == 10_000 * rounds
    assert after["renew_failed_rounds"] == before["renew_failed_rounds"]
    time.sleep(0.1)
    for lock in locks:
        lock.release()
    assert not lost.calls
