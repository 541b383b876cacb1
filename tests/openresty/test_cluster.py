"""The OpenResty backend on a Redis Cluster (redis+cluster://): one 3-master/3-replica cluster
for the module (redlease.testing.RedisCluster, loopback), each test with its own nginx. Locks on
every master, waits woken by sharded pub/sub at every master, renewal rounds of one round trip
per node, exclusion and wake-ups both ways with redlease's Python client (the C core) on the same
cluster, the same script calls as the C rock, a slot migrated and a master killed during holds
and waits. The failover test runs last: it leaves one shard without its old master."""

import os
import signal
import sys
import threading
import time

import pytest

import redlease
from conftest import REFUSED, fields, lost
from redlease.testing import RedisCluster, RedisServer
from testkit import Raw, wait_for

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                                "cluster"))
from clusterkit import (  # noqa: E402
    migrate_slot,
    move_without_the_hold,
    names_on_every_master,
    node_call,
    raw_at,
    slot_and_masters,
)

# The subscriber's and the renewal's view of a killed master (nginx's lines, and ours).
DOWN = [REFUSED, r"redlease: subscriber connection: .*; waiters resubscribe once Redis answers",
        r"lua tcp socket connect timed out",
        r"(recv|connect)\(\) failed \(104: Connection reset by peer\)"]


@pytest.fixture(scope="module")
def cluster():
    with RedisCluster() as c:
        yield c


def q(name):
    return name.replace("{", "%7B").replace("}", "%7D")


def in_thread(ng, path, into):
    t = threading.Thread(target=lambda: into.update(fields(ng.get(path)[1])))
    t.start()
    return t


def no_latches(raw, name):
    """(the latches of other tests' names, left by an nginx stopped at once, expire by their
    TTL)"""
    def mine():
        return [k for k in raw("KEYS", "redisson_unlock_latch*") if name.encode() in k]
    assert wait_for(lambda: mine() == [], 5), mine()


def ping_ms(ng):
    t0 = time.monotonic()
    assert ng.get("/ping", timeout=5)[0] == 200
    return (time.monotonic() - t0) * 1000


def test_locks_on_every_master(cluster, make_nginx):
    ng = make_nginx(url=cluster.url)
    names = names_on_every_master(cluster, "ngx:every", 2) + ["ngx:{tag}:a", "ngx:{tag}:b"]
    port = {n: cluster.node_of_slot(cluster.keyslot(n)).port for n in names}

    def exists(n):
        r = raw_at(port[n])
        try:
            return r("EXISTS", n)
        finally:
            r.close()

    holders = {}
    threads = [in_thread(ng, f"/hold?name={q(n)}&secs=2", holders.setdefault(n, {}))
               for n in names]
    for n in names:  # each at the master serving its slot, in Redisson's layout
        assert wait_for(lambda n=n: exists(n) == 1, 2), n
        f = fields(ng.get(f"/hold?name={q(n)}&timeout=0")[1])
        assert f["acquired"] == "false" and f["err"].startswith("timeout:"), (n, f)
    for t in threads:
        t.join(15)
    for n in names:
        assert holders[n]["acquired"] == "true" and holders[n]["released"] == "true", holders[n]
        assert exists(n) == 0
    for kind in ("fair", "fenced", "read", "write"):
        for n in names[::2]:
            f = fields(ng.get(f"/cycle?name={q(n)}&kind={kind}")[1])
            assert f["ok"] == "true", (kind, n, f)


def test_waiters_woken_on_every_master_and_renewed(cluster, make_nginx):
    ng = make_nginx(url=cluster.url, watchdog=1.5)
    both = names_on_every_master(cluster, "ngx:wake", 2)  # two slots per master
    names = both[::2]  # one waited on at each master
    holders, waiters, slowest = {}, {}, 0.0
    threads = [in_thread(ng, f"/hold?name={q(n)}&secs=2.5", holders.setdefault(n, {}))
               for n in both]
    time.sleep(0.3)
    threads += [in_thread(ng, f"/hold?name={q(n)}&timeout=15", waiters.setdefault(n, {}))
                for n in names]
    t0 = time.monotonic()
    while time.monotonic() - t0 < 1.5:  # the worker serves while its requests wait
        slowest = max(slowest, ping_ms(ng))
        time.sleep(0.05)
    for t in threads:
        t.join(20)
    for n in names:
        h, w = holders[n], waiters[n]
        assert h["acquired"] == "true" and h["lost"] == "false" and h["released"] == "true", h
        assert w["acquired"] == "true", w
        # woken by the release's SPUBLISH, not by the lease's end
        assert 0 <= float(w["got"]) - float(h["left"]) < 0.5, (n, h, w)
    assert slowest < 200, slowest
    s = fields(ng.get("/stats")[1])
    rounds, trips = int(s["renew_rounds"]), int(s["renew_round_trips"])
    # one call per slot, pipelined: one round trip per node per round (and a new connection's
    # CLIENT SETNAME); a round whose holds are not all there yet or still there has fewer calls
    assert rounds >= 2 and 4 * rounds < int(s["renew_calls"]) <= 6 * rounds, s
    assert trips <= 3 * rounds + 3, s


def test_python_client_excludes_and_wakes_nginx(cluster, make_nginx):
    ng = make_nginx(url=cluster.url)
    py = redlease.Client(cluster.url, watchdog_timeout=1.5)
    try:
        for name in names_on_every_master(cluster, "ngx:py", 1):
            lock = py.lock(name)
            assert lock.acquire(timeout=0)
            f = fields(ng.get(f"/hold?name={q(name)}&timeout=0.3")[1])
            assert f["acquired"] == "false" and f["err"].startswith("timeout:"), f
            result = {}
            t = in_thread(ng, f"/hold?name={q(name)}&timeout=10", result)
            time.sleep(0.3)
            released_at = time.time()
            lock.release()
            t.join(15)
            assert result["acquired"] == "true", result
            assert float(result["got"]) - released_at < 0.5, result
            t = in_thread(ng, f"/hold?name={q(name)}&secs=1", result)
            assert lock.acquire(timeout=10)  # woken by the handler's SPUBLISH
            lock.release()
            t.join(15)
            assert result["released"] == "true", result
    finally:
        py.close()


def sharded_subscribers(cluster, name):
    channel = f"redisson_lock__channel:{{{name}}}"
    return node_call(cluster, name, "PUBSUB", "SHARDNUMSUB", channel)[1]


def test_redisson_excludes_and_wakes_nginx(cluster, make_nginx):
    """Redisson (useClusterServers(), sharded pub/sub on Redis 7) and nginx requests on names at
    every master: each keeps the other out, and each one's unlock wakes the other's waiter."""
    from redisson import Redisson

    ng = make_nginx(url=cluster.url, watchdog=1.0)
    java = Redisson(cluster.url, watchdog_ms=1000)
    try:
        for name in names_on_every_master(cluster, "ngx:java", 1):
            jl = java.lock(name)
            jl.lock("t1", 20000)
            f = fields(ng.get(f"/hold?name={q(name)}&timeout=0.3")[1])
            assert f["acquired"] == "false" and f["err"].startswith("timeout:"), f
            waiting = {}
            t = in_thread(ng, f"/hold?name={q(name)}&timeout=10", waiting)
            assert wait_for(lambda n=name: sharded_subscribers(cluster, n) == 1, 5)
            unlocked_at = time.time()
            jl.unlock("t1")
            t.join(15)
            assert waiting["acquired"] == "true", waiting
            assert float(waiting["got"]) - unlocked_at < 0.5, waiting  # Redisson's SPUBLISH
            holder = {}
            t = in_thread(ng, f"/hold?name={q(name)}&secs=3", holder)
            assert wait_for(lambda n=name: node_call(cluster, n, "EXISTS", n) == 1, 5)
            assert jl.try_lock("t2", 0) is False
            blocked = jl.start("t3", "lock")
            # (Redisson subscribes before it waits: then the handler's release wakes it)
            assert wait_for(lambda n=name: sharded_subscribers(cluster, n) == 1, 2.5)
            t.join(15)
            blocked.result(10)
            ref_wall, ref_mono = time.time(), time.monotonic()
            assert holder["released"] == "true" and holder["lost"] == "false", holder
            # woken by the handler's SPUBLISH, well before the lease it would wait out
            delay = (blocked.received - ref_mono) - (float(holder["left"]) - ref_wall)
            assert -0.002 <= delay < 0.3, delay
            jl.unlock("t3")
    finally:
        java.close()


NAMES_LOCATION = """
    location /cluster_names {
      content_by_lua_block {
        local app, out = require("app"), require("app").out
        local r = {}
        for _, name in ipairs { "a}b", "x{}y" } do
          local ok, err = pcall(app.client.lock, app.client, name)
          r["lock " .. name] = not ok and err
          ok, err = pcall(app.client.count_down_latch, app.client, name)
          r["latch " .. name] = not ok and err
        end
        local ok, err = pcall(require("redlease").connect, "redis+cluster://127.0.0.1:7000/0")
        r.db = not ok and err
        out(r)
      }
    }
"""


def test_inspect_latch_and_names_on_a_cluster(cluster, make_nginx):
    """redlease.inspect reads each name at its master (subscribers: SHARDNUMSUB); a latch's
    waiters are woken by a Redisson-style count-down's SPUBLISH at the latch's master; names whose
    keys cannot share a slot are refused before anything is sent, as by the C core."""
    ng = make_nginx(url=cluster.url, locations=NAMES_LOCATION)
    r = fields(ng.get("/inspect")[1])
    assert r == {"reentrant": "true", "owner": "true", "owner_in_thread": "true",
                 "nothing": "none,false", "fair": "true", "rw": "true", "write": "true",
                 "fenced": "true", "counter": "true", "other": "other", "bad_client": "true",
                 "bad_name": "true"}, r
    channel = "redisson_countdownlatch__channel__{ngx:batch}"
    result = {}
    t = in_thread(ng, "/latch?name=ngx:batch", result)
    assert wait_for(lambda: node_call(cluster, "ngx:batch", "PUBSUB", "SHARDNUMSUB",
                                      channel)[1] == 1, 5)
    node_call(cluster, "ngx:batch", "EVAL", "if redis.call('decr', KEYS[1]) <= 0 then "
              "redis.call('del', KEYS[1]); redis.call('spublish', KEYS[2], '0') end", "2",
              "ngx:batch", channel)
    t.join(30)
    assert result["waiters"] == "true,true" and result["woken_in_time"] == "true", result
    r = fields(ng.get("/cluster_names")[1])
    for name in ("a}b", "x{}y"):
        for what in ("lock", "latch"):
            assert f'the {what} name "{name}" cannot be used on a Redis Cluster' in \
                r[f"{what} {name}"], r
    assert "takes no database" in r["db"], r


@pytest.mark.skipif(not os.environ.get("REDLEASE_REDIS6_SERVER"),
                    reason="REDLEASE_REDIS6_SERVER names no Redis 6 binary (make test-openresty "
                    "sets it)")
def test_a_cluster_older_than_redis_7_is_refused(make_nginx):
    """A one-node cluster of Redis 6.2 (no sharded pub/sub, which a cluster's waits and releases
    use): every call refused at once, before anything is written, in the C core's words
    (tests/c/test_server_versions.c), and again when the map is asked again."""
    old = RedisServer(os.environ["REDLEASE_REDIS6_SERVER"], extra_args=[
        "--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf"]).start()
    try:
        raw = Raw(old.url)
        assert raw("CLUSTER", "ADDSLOTS", *map(str, range(16384))) == "OK"
        assert wait_for(lambda: b"cluster_state:ok" in raw("CLUSTER", "INFO"), 10)
        ng = make_nginx(url=f"redis+cluster://127.0.0.1:{old.port}")
        for _ in range(2):  # (past the map's refresh interval: asked again)
            t0 = time.monotonic()
            f = fields(ng.get("/cycle?name=old:lock")[1])
            assert f.get("ok") == "false" and f["err"] == (
                f"unsupported: 127.0.0.1:{old.port} runs Redis 6.2.14, which lacks sharded "
                "pub/sub (SSUBSCRIBE, SPUBLISH): redlease on a Redis Cluster needs Redis 7.0 "
                "or later (or Valkey)"), f
            assert time.monotonic() - t0 < 1, "refused at once"
            time.sleep(0.15)
        assert raw("DBSIZE") == 0  # nothing was written
        raw.close()
    finally:
        old.close()


def test_slot_migration_during_a_hold_and_a_wait(cluster, make_nginx):
    ng = make_nginx(url=cluster.url, watchdog=1.5)
    name = names_on_every_master(cluster, "ngx:move", 1)[0]
    slot = cluster.keyslot(name)
    source = cluster.node_of_slot(slot)
    target = next(m for m in cluster.masters() if m.port != source.port)
    holder, waiter = {}, {}
    threads = [in_thread(ng, f"/hold?name={q(name)}&secs=5", holder)]
    time.sleep(0.3)
    threads.append(in_thread(ng, f"/hold?name={q(name)}&timeout=20", waiter))
    time.sleep(0.3)
    # the ASK phase lasts more than a renewal period: renewals follow ASK, then MOVED
    migrate_slot(cluster, slot, source, target, between=lambda: time.sleep(1.0))
    assert cluster.node_of_slot(slot).port == target.port
    slowest = max(ping_ms(ng) for _ in range(5))
    for t in threads:
        t.join(30)
    assert holder["acquired"] == "true" and holder["lost"] == "false", holder
    assert holder["released"] == "true", holder  # released at the new master
    assert waiter["acquired"] == "true", waiter  # woken there (joined again after SUNSUBSCRIBE)
    assert 0 <= float(waiter["got"]) - float(holder["left"]) < 0.5, (holder, waiter)
    assert slowest < 200


def test_a_moved_slot_grants_a_lost_hold_only_after_the_failover_grace(cluster, make_nginx):
    """A slot moved without a hold a Python client has there (what a replica promoted without
    the latest writes is): the worker that learns the move (its own acquire answered MOVED)
    gives back what it was granted at the new owner and grants nothing in that slot for
    failover_grace (the default, 1 s); the Python holder, which hears of the move at its next
    call, is told (in doubt) before nginx gets the lock, as in the rock (tests/cluster)."""
    ng = make_nginx(url=cluster.url)
    name = names_on_every_master(cluster, "ngx:fgrace", 1)[0]
    slot, source, target = slot_and_masters(cluster, name)
    states = []
    holder = redlease.Client(cluster.url, on_state=lambda n, state, why:
                             states.append((n, state, time.monotonic())))
    try:
        assert fields(ng.get(f"/cycle?name={q(name)}")[1])["ok"] == "true"  # the map, at source
        assert holder.lock(name).acquire(timeout=0)
        move_without_the_hold(cluster, slot, source, target, name)
        f = fields(ng.get(f"/hold?name={q(name)}&timeout=0")[1])
        refused_at = time.monotonic()
        assert f["acquired"] == "false" and "failover_grace" in f["err"], f
        assert raw_at(target.port)("EXISTS", name) == 0  # given back
        time.sleep(0.2)
        assert not holder.lock("{%s}probe" % name).locked()  # the holder learns the move
        got = None
        while got is None and time.monotonic() < refused_at + 10:
            if fields(ng.get(f"/hold?name={q(name)}&timeout=0")[1])["acquired"] == "true":
                got = time.monotonic()
            else:
                time.sleep(0.01)
        told = [t for n, s, t in states if n == name and s == "in_doubt"]
        print(f"refused in the grace -> granted {got and got - refused_at:.3f} s later; "
              f"holder told {[round(t - refused_at, 3) for t in told]}")
        assert got is not None and 0.8 <= got - refused_at < 1.5, got
        assert told and told[0] < got, states
    finally:
        holder.close()


def test_an_idle_worker_hears_of_a_moved_slot_within_the_grace(cluster, make_nginx):
    """A request holds a lock and makes no call (its renewal is 10 s away: a 30 s lease); the
    slot moves without the hold, and a Python client that learns it is granted the lock after
    its failover grace. The worker asks a node for the map every half grace while it holds, so
    its hold goes in doubt before that grant, as the rock's does (tests/cluster)."""
    name = names_on_every_master(cluster, "ngx:fidle", 1)[0]
    ng = make_nginx(url=cluster.url, watchdog=30, errors=[lost(name, "(failover|owner_changed)")])
    slot, source, target = slot_and_masters(cluster, name)
    other = redlease.Client(cluster.url)
    try:
        assert other.lock(name).acquire(timeout=0)  # the other client knows the slot at source
        other.lock(name).release()
        holder = {}
        t = in_thread(ng, f"/hold?name={q(name)}&secs=4", holder)
        assert wait_for(lambda: other.lock(name).locked(), 5)
        move_without_the_hold(cluster, slot, source, target, name)
        doubt = f'redlease: lock "{name}" in doubt'
        told = []
        waiter = threading.Thread(target=lambda: told.append(
            wait_for(lambda: doubt in ng.log(), 10) and time.monotonic()))
        waiter.start()
        tried_at = time.monotonic()
        assert other.lock(name).acquire(timeout=10)
        got_at = time.monotonic()
        waiter.join(15)
        t.join(15)
        print(f"learned the move -> granted {got_at - tried_at:.3f} s later; "
              f"idle worker told {[round(x - tried_at, 3) for x in told if x]}")
        assert told and told[0] and told[0] < got_at, told
        assert holder["lost"] == "true", holder
        other.lock(name).release()
    finally:
        other.close()


def test_same_script_calls_as_the_c_rock(cluster, make_nginx):
    """Item 8 on a cluster: MONITOR at the name's master shows the C rock and the backend making
    it run the same script calls (SPUBLISH included) on the same keys."""
    from kit import Listener
    from luapeer import LuaPeer
    from test_wire import Captured, lua_sequence

    ng = make_nginx(url=cluster.url, watchdog=1.5)
    peer = LuaPeer(cluster.url, watchdog_timeout=1.5)
    try:
        for name in ["ngx:wire", "ngx:{42}:x"]:
            node = cluster.node_of_slot(cluster.keyslot(name))
            monitor = Listener(f"redis://127.0.0.1:{node.port}", "MONITOR")
            raw = raw_at(node.port)
            try:
                monitor.mark(f"{name}-start")
                lua_sequence(peer, name)
                no_latches(raw, name)  # deleted after the answer: next call, or a timer
                monitor.mark(f"{name}-c")
                body = ng.get("/sequence?name=" + q(name))[1]
                assert fields(body)["steps"] == "true,true,true,true,true,false", body
                no_latches(raw, name)
                monitor.mark(f"{name}-resty")
                c = Captured(monitor.between(f"{name}-start", f"{name}-c"), name.encode())
                r = Captured(monitor.between(f"{name}-c", f"{name}-resty"), name.encode())
                assert r.calls == c.calls and len(c.calls) > 10, (r.calls, c.calls)
                assert any(call[0] == "spublish" for call in r.calls), r.calls
                assert r.types == c.types and r.others == c.others
                assert len(r.latches_set) == len(c.latches_set) == 2
                assert sorted(r.latches_deleted) == sorted(r.latches_set)
            finally:
                raw.close()
                monitor.close()
    finally:
        peer.close()


def test_the_documented_cluster_configuration_runs(cluster):
    """docs/openresty.md's Cluster block in its nginx.conf (the `yours` lines adapted as
    test_docs.py does, the seeds made the test cluster's): the handler answers 200, 409 while
    another owner holds the lock (at the name's master), and the log says nothing at warn."""
    from test_docs import doc_block, nginx_with_block

    block = doc_block("## Redis Cluster", 0, [
        ("redis+cluster://10.0.0.1:7000,10.0.0.2:7000,10.0.0.3:7000", cluster.url)])
    # test_inspect_latch_and_names_on_a_cluster's request leaves orders:42 held (a 20 s fixed
    # lease, never renewed) on this module's cluster
    node_call(cluster, "orders:42", "DEL", "orders:42")
    with nginx_with_block(block) as (ng, said):
        assert ng.get("/orders", timeout=5) == (200, "done\n")
        node_call(cluster, "orders:42", "HSET", "orders:42", "someone-else:1", "1")
        node_call(cluster, "orders:42", "PEXPIRE", "orders:42", "10000")
        assert ng.get("/orders")[0] == 409
        node_call(cluster, "orders:42", "DEL", "orders:42")
        assert ng.get("/orders") == (200, "done\n")
        assert said() == []


def test_failover_during_holds_and_waits(cluster, make_nginx):
    """A master SIGKILLed while nginx requests hold locks on every master and one waits on the
    killed master's slot: its replica is promoted; holds on the other masters are untouched; the
    waiter acquires after the release; /ping stays fast. A hold taken after the replication link
    was cut (its key never reached the replica) is reported lost to the failover, never renewed
    as if held, while a waiter takes that lock at the new master (the overlap asynchronous
    replication allows); the hold whose key had reached the replica is kept, or reported lost
    should the failover outlast its lease."""
    names = names_on_every_master(cluster, "ngx:fail", 1)
    victim_name = names[0]
    victim_slot = cluster.keyslot(victim_name)  # (asked of a node that may be the victim)
    victim = cluster.node_of_slot(victim_slot)
    unsynced = next(n for n in names_on_every_master(cluster, "ngx:unsynced", 1)
                    if cluster.node_of_slot(cluster.keyslot(n)).port == victim.port)
    ng = make_nginx(url=cluster.url, watchdog=6,
                    errors=DOWN + [lost(victim_name, "(failover|unreachable)"),
                                   lost(unsynced, "failover")])
    holders, waiter, loser, taker = {}, {}, {}, {}
    threads = [in_thread(ng, f"/hold?name={q(n)}&secs=6", holders.setdefault(n, {}))
               for n in names]
    time.sleep(0.5)
    threads.append(in_thread(ng, f"/hold?name={q(victim_name)}&timeout=30", waiter))
    time.sleep(0.5)  # (the writes reach the replicas meanwhile)
    assert fields(ng.get(f"/cycle?name={q(unsynced)}")[1])["ok"] == "true"  # a pooled connection
    # The replication link cut, the replica kept from reconnecting (it now sends the master a
    # password the master does not take; the worker's connections are not touched).
    replica = next(n for n in cluster.nodes if n.process is not None
                   and f"master_port:{victim.port}\r" in cluster.cli(n.port, "INFO", "replication")
                   .replace("\n", "\r\n"))
    assert cluster.cli(replica.port, "CONFIG", "SET", "masterauth", "not-the-masters") == "OK"
    raw = raw_at(victim.port)
    try:
        assert raw("CLIENT", "KILL", "TYPE", "replica") == 1
        threads.append(in_thread(ng, f"/hold?name={q(unsynced)}&secs=6", loser))
        assert wait_for(lambda: raw("EXISTS", unsynced) == 1, 5)
    finally:
        raw.close()
    killed_at = time.monotonic()
    os.kill(victim.process.pid, signal.SIGKILL)
    victim.process.wait()
    victim.process = None
    threads.append(in_thread(ng, f"/hold?name={q(unsynced)}&timeout=30", taker))
    slowest = 0.0
    while time.monotonic() - killed_at < 4:
        slowest = max(slowest, ping_ms(ng))
        time.sleep(0.1)
    for t in threads:
        t.join(40)
    for n in names[1:]:
        h = holders[n]
        assert h["acquired"] == "true" and h["lost"] == "false" and h["released"] == "true", h
    h = holders[victim_name]
    assert h["acquired"] == "true", h
    if h["lost"] == "true":  # its release says so too
        assert h["reason"] in ("failover", "unreachable") and "released" not in h, h
        assert h["release_err"].startswith("lost:"), h
    else:
        assert h["released"] == "true", h
    assert waiter["acquired"] == "true", waiter
    # the unsynced hold: lost at the new master, and said so (`failover`: found missing by
    # another server than the one that granted it, as the C core says); another took it meanwhile
    assert loser["acquired"] == "true" and loser["lost"] == "true", loser
    assert loser["reason"] == "failover" and "released" not in loser, loser
    assert loser["release_err"].startswith("lost:"), loser
    assert taker["acquired"] == "true" and float(taker["got"]) < float(loser["left"]), taker
    assert cluster.node_of_slot(victim_slot).port != victim.port
    f = fields(ng.get(f"/cycle?name={q(victim_name)}")[1])
    assert f["ok"] == "true", f
    assert slowest < 200, slowest
