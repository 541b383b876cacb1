"""redis+sentinel:// in the OpenResty backend, in a real nginx (nginx's default
lua_socket_log_errors): the master asked of the sentinels, the same wire as the C rock, and a
failover (planned, then a killed primary) during holds and waits: waiters resubscribe on the new
master and get the lock, holds are verified there and their losses reported as the rock reports
them, /ping stays fast, and the error log says only what is a real problem."""

import os
import re
import signal
import subprocess
import sys
import threading
import time
from urllib.parse import quote

import pytest

import redlease
from conftest import READ_TIMED_OUT, REFUSED, RESET, fields, lost

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "sentinel"))

from deployment import MASTER, Deployment  # noqa: E402
from nginx import LUA_DIR, MODULES, RESTY_LUA, Nginx, free_port  # noqa: E402

from kit import Listener  # noqa: E402
from luapeer import LuaPeer  # noqa: E402
from test_wire import Captured, lua_sequence  # noqa: E402
from testkit import Raw, wait_for  # noqa: E402

CHANNEL = "redisson_lock__channel:{%s}"
# nginx's line for a connection to the killed primary that the kernel reset while it opened
CONNECT_RESET = r"connect\(\) failed \(104: Connection reset by peer\)"
DOC = os.path.join(os.path.dirname(LUA_DIR), "docs", "openresty.md")


@pytest.fixture(scope="module")
def shared():
    d = Deployment()
    yield d
    d.close()


def in_background(ng, path, out, timeout=60):
    t = threading.Thread(target=lambda: out.update(fields(ng.get(path, timeout)[1])))
    t.start()
    return t


class PingWatch:
    """GETs /ping every 20 ms in a thread, timing each answer."""

    def __init__(self, ng):
        self.ng, self.times, self.stop = ng, [], False
        self.thread = threading.Thread(target=self._run)
        self.thread.start()

    def _run(self):
        while not self.stop:
            t0 = time.monotonic()
            assert self.ng.get("/ping", 5)[0] == 200
            self.times.append(time.monotonic() - t0)
            time.sleep(0.02)

    def done(self):
        """Stops; prints and returns the p99 (s)."""
        self.stop = True
        self.thread.join(10)
        t = sorted(self.times)
        p50, p99 = t[len(t) // 2], t[int(len(t) * 0.99)]
        print(f"/ping: {len(t)} answers, p50 {p50 * 1000:.1f} ms, p99 {p99 * 1000:.1f} ms, "
              f"slowest {t[-1] * 1000:.1f} ms")
        return p99


def test_locks_and_the_same_wire_as_the_c_rock(shared, make_nginx):
    ng = make_nginx(url=shared.url, watchdog=1.5)
    f = fields(ng.get("/hold?name=sentinel:first&secs=2")[1])  # renewed across a lease
    assert f["acquired"] == "true" and f["released"] == "true" and f["lost"] == "false", f
    peer = LuaPeer(shared.url, watchdog_timeout=1.5)
    monitor = Listener(shared.master_server().url, "MONITOR")
    try:
        name = "sentinel:wire"
        monitor.mark("start")
        lua_sequence(peer, name)
        assert wait_for(lambda: shared.on_master("KEYS", "redisson_unlock_latch*") == [], 5)
        monitor.mark("c")
        assert fields(ng.get("/sequence?name=" + name)[1])["steps"] == \
            "true,true,true,true,true,false"
        assert wait_for(lambda: shared.on_master("KEYS", "redisson_unlock_latch*") == [], 5)
        monitor.mark("resty")
        c = Captured(monitor.between("start", "c"), name.encode())
        r = Captured(monitor.between("c", "resty"), name.encode())
        assert r.calls == c.calls and len(c.calls) > 10
        assert r.types == c.types and r.others == c.others
        assert len(r.latches_set) == len(c.latches_set) == 2
    finally:
        monitor.close()
        peer.close()


def test_planned_failover_during_holds_and_waits(shared, make_nginx):
    ng = make_nginx(url=shared.url, workers=2, watchdog=6)
    name = "sentinel:planned"
    holder, waiters = {}, [{} for _ in range(4)]
    th = in_background(ng, f"/hold?name={name}&secs=8", holder)
    assert wait_for(lambda: shared.on_master("EXISTS", name) == 1, 5)
    threads = [in_background(ng, f"/hold?name={name}&timeout=30", w) for w in waiters]
    assert wait_for(lambda: shared.on_master("PUBSUB", "NUMSUB", CHANNEL % name)[1] >= 1, 5)
    pings = PingWatch(ng)
    before = shared.master_port()
    started = time.monotonic()
    shared.failover()
    assert shared.master_port() != before
    # the waiters resubscribe on the new master while the holder still holds
    assert wait_for(lambda: shared.on_master("PUBSUB", "NUMSUB", CHANNEL % name)[1] >= 1, 5)
    print(f"failover asked -> waiters subscribed on the new master "
          f"{time.monotonic() - started:.2f} s")
    for t in [th] + threads:
        t.join(60)
    p99 = pings.done()
    assert holder["acquired"] == "true" and holder["lost"] == "false", holder
    assert holder["released"] == "true", holder
    assert all(w["acquired"] == "true" for w in waiters), waiters
    assert shared.on_master("EXISTS", name) == 0
    assert "redlease: the sentinels name a new master" in ng.log()
    assert p99 < 0.1  # the suite's wide margin (a loaded 2-core machine)


def test_killed_primary_during_holds_and_waits(make_nginx):
    """The primary SIGKILLed while nginx holds two locks and requests wait for both: one hold
    its replica has, one taken after the replica was cut off (the primary now asks a password
    the replica lacks; nginx logs in as an ACL user both servers know). The replica is promoted,
    the worker follows it, new acquires work again, the waiters get both locks there; the first
    holder kept its hold (renewed on the promoted replica) or is told it lost it, the second is
    told it lost its hold to the failover, as the rock tells (tests/sentinel)."""
    d = Deployment()
    try:
        for s in d.servers:
            raw = Raw(s.url)
            assert raw("ACL", "SETUSER", "app", "on", ">app-pw", "~*", "&*", "+@all") == "OK"
            raw.close()
        url = d.url.replace("redis+sentinel://", "redis+sentinel://app:app-pw@")
        ng = make_nginx(url=url, watchdog=6, errors=[
            REFUSED, RESET, CONNECT_RESET, lost("sentinel:unsynced", "failover"),
            lost("sentinel:synced", "(failover|unreachable)"),
            r"redlease: subscriber connection: .*; waiters resubscribe once Redis answers"])
        synced, unsynced = {}, {}
        waiters = [{} for _ in range(3)]
        late = {}
        threads = [in_background(ng, "/hold?name=sentinel:synced&secs=8", synced)]
        assert wait_for(lambda: Raw(d.replica_server().url)("EXISTS", "sentinel:synced") == 1, 5)
        threads += [in_background(ng, "/hold?name=sentinel:synced&timeout=40", w)
                    for w in waiters]
        old = d.master_server()
        master = Raw(old.url)
        assert master("CONFIG", "SET", "requirepass", "not-the-replicas") == "OK"
        assert master("CLIENT", "KILL", "TYPE", "replica") == 1
        threads.append(in_background(ng, "/hold?name=sentinel:unsynced&secs=8", unsynced))
        assert wait_for(lambda: master("EXISTS", "sentinel:unsynced") == 1, 5)
        threads.append(in_background(ng, "/hold?name=sentinel:unsynced&timeout=40", late))
        assert wait_for(lambda: master("PUBSUB", "NUMSUB", CHANNEL % "sentinel:unsynced")[1]
                        == 1, 5)
        master.close()
        assert Raw(d.replica_server().url)("EXISTS", "sentinel:unsynced") == 0
        pings = PingWatch(ng)
        killed_at = time.monotonic()
        old.process.send_signal(signal.SIGKILL)
        acquired_at = None
        while time.monotonic() - killed_at < 30:
            if fields(ng.get("/cycle?name=sentinel:after")[1]).get("ok") == "true":
                acquired_at = time.monotonic()
                break
            time.sleep(0.1)
        assert acquired_at is not None, "no acquire succeeded after the primary was killed"
        print(f"primary killed -> first acquire on the new master {acquired_at - killed_at:.2f} s")
        for t in threads:
            t.join(60)
        p99 = pings.done()
        print(f"synced {synced}\nunsynced {unsynced}\nlate {late}")
        assert all(w["acquired"] == "true" for w in waiters), waiters
        assert synced["acquired"] == "true"
        if synced["lost"] == "true":  # told, and its release says so
            assert "released" not in synced and "lost" in synced["release_err"], synced
        else:
            assert synced["released"] == "true", synced
        # the promoted replica never had it: lost to the failover, said at its release too
        assert unsynced["lost"] == "true" and unsynced["reason"] == "failover", unsynced
        assert "released" not in unsynced and "lost" in unsynced["release_err"], unsynced
        # its waiter took the lock on the new master (before the holder's "release")
        assert late["acquired"] == "true" and float(late["got"]) < float(unsynced["left"]), late
        assert p99 < 0.1  # the suite's wide margin (a loaded 2-core machine)
    finally:
        d.close()


def test_a_new_master_grants_a_lost_hold_only_after_the_failover_grace(make_nginx):
    """A hold the promoted replica never saw, taken by a Python client, is free on the new
    master. The nginx worker follows the failover and grants nothing for failover_grace (the
    default, 1 s): its tries are refused, saying so, until the grace is over, and the Python
    holder is told (in doubt) before nginx gets the lock, as in the rock (tests/sentinel)."""
    d = Deployment()
    try:
        states = []
        holder = redlease.Client(d.url, watchdog_timeout=3, connect_timeout=1, command_timeout=1,
                                 on_state=lambda name, state, why:
                                 states.append((state, time.monotonic())))
        ng = make_nginx(url=d.url, watchdog=3)
        assert fields(ng.get("/cycle?name=sentinel:grace")[1])["ok"] == "true"  # follows it
        lock = holder.lock("sentinel:grace")
        assert not lock.locked()  # opens the holder's connection before the password below
        d.cut_replica_off()
        assert lock.acquire(timeout=0)
        d.sentinels[0]("SENTINEL", "FAILOVER", MASTER)
        refused_at, got = None, None
        deadline = time.monotonic() + 30
        while got is None and time.monotonic() < deadline:
            f = fields(ng.get("/hold?name=sentinel:grace&timeout=0")[1])
            if f["acquired"] == "true":
                got = time.monotonic()
            elif "failover_grace" in f.get("err", "") and refused_at is None:
                refused_at = time.monotonic()
            time.sleep(0.01)
        assert refused_at is not None and got is not None, states
        print(f"first refusal in the grace -> granted {got - refused_at:.3f} s later; "
              f"holder's states {[(s, round(t - refused_at, 3)) for s, t in states]}")
        assert got - refused_at < 1.5
        assert states and states[0][0] == "in_doubt" and states[0][1] < got, states
        holder.close()
    finally:
        d.close()


def test_a_failover_is_heard_from_any_sentinel(make_nginx):
    """Each worker listens for +switch-master on every sentinel, not on one alone: with the
    first sentinel paused (its connection open, silent), a failover announced by the others
    still moves a worker that serves no request meanwhile (nothing else would tell it), as in
    the rock (tests/sentinel)."""
    d = Deployment()
    try:
        # the paused sentinel's watcher times out reading once the test runs long enough
        ng = make_nginx(url=d.url, errors=[READ_TIMED_OUT])
        assert fields(ng.get("/cycle?name=sentinel:any")[1])["ok"] == "true"  # watchers start
        assert wait_for(lambda: d.subscribers() == [1, 1, 1], 10), d.subscribers()
        with d.failover_with_the_first_sentinel_paused() as announced:
            assert wait_for(lambda: "redlease: the sentinels name a new master" in ng.log(), 5)
            print("announced by another sentinel -> followed %.3f s later" % (
                time.monotonic() - announced))
        ng.stop()  # before the sentinels go: no watcher left to find them gone
    finally:
        d.close()


CONNECT = """
    location = /connect {
      content_by_lua_block {
        local url = ngx.unescape_uri(ngx.var.arg_url)
        local ok, client, err = pcall(require("redlease").connect, url)
        if ok and client then
          local g
          g, err = client:lock("x"):acquire { timeout = 0 }
          if g then g:release() end
        end
        ngx.say("ok=", tostring(ok), "\\nerr=", tostring(ok and err or client))
      }
    }
"""


def test_clear_errors(shared, make_nginx):
    bad = shared.url.replace(f"/{MASTER}/", "/no-such-master/")
    ng = make_nginx(url=bad, locations=CONNECT, errors=[REFUSED])
    f = fields(ng.get("/cycle?name=x")[1])
    assert f["ok"] == "false" and f["err"] == \
        'connection: the sentinels know no master named "no-such-master"', f
    nobody = [free_port(), free_port()]
    url = "redis+sentinel://" + ",".join(f"127.0.0.1:{p}" for p in nobody) + "/mymaster"
    f = fields(ng.get("/connect?url=" + quote(url, safe=""))[1])
    assert f["ok"] == "true" and f["err"].startswith(
        'connection: no sentinel could be asked for master "mymaster" (cannot connect to '
        f"sentinel 127.0.0.1:{nobody[0]}: connection refused)"), f
    for url, words in [
        ("redis+sentinel://127.0.0.1:26379", "names the master"),
        ("redis+sentinel://127.0.0.1:26379,/mymaster", "an empty host"),
        ("redis+sentinel://127.0.0.1:99999/mymaster", "port"),
        ("redis+sentinel://127.0.0.1:26379/mymaster/notadb", "database"),
        ("redis+sentinel://127.0.0.1:26379/mymaster/0/extra", "database"),
    ]:
        f = fields(ng.get("/connect?url=" + quote(url, safe=""))[1])
        assert words in f["err"], (url, f)


def test_the_documented_configuration_runs_as_written(shared, tmp_path):
    """docs/openresty.md's Sentinel configuration, with only its `yours` lines changed (as
    test_docs.py changes the one-Redis configuration): 200 through the master the sentinels
    name, nothing logged at its `warn` level."""
    text = open(DOC).read()
    conf = re.search(r"```nginx\n(.*?)```", text[text.index("## Sentinel\n"):], re.S).group(1)
    port, d = free_port(), str(tmp_path)
    lua_path = f"{LUA_DIR}/?.lua;{LUA_DIR}/?/init.lua;{RESTY_LUA}/?.lua;;"
    changes = [
        (r"^pid \S+;", f"pid {d}/nginx.pid;"),
        (r"^error_log \S+ ", f"error_log {d}/error.log "),
        (r"access_log \S+;", f"access_log {d}/access.log;"),
        (r'lua_package_path "[^"]*";', f'lua_package_path "{lua_path}";'),
        (r'"redis\+sentinel://[^"]*"', f'"{shared.url}"'),
        (r"listen 8080;", f"listen 127.0.0.1:{port};"),
    ]
    marked = [line for line in conf.splitlines() if re.search(r"(#|--) yours$", line)]
    assert len(marked) == len(changes), marked
    for pattern, value in changes:
        conf, n = re.subn(pattern, lambda _, v=value: v, conf, flags=re.M)
        assert n == 1, pattern
    with open(f"{d}/nginx.conf", "w") as f:
        f.write(conf.replace("/usr/lib/nginx/modules", MODULES))
    proc = subprocess.Popen(["nginx", "-p", d, "-c", "nginx.conf", "-e", f"{d}/error.log",
                             "-g", "daemon off;"], stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, env=Nginx.env())
    ng = Nginx.__new__(Nginx)  # its HTTP helpers only
    ng.port = port
    try:
        def up():
            assert proc.poll() is None, open(f"{d}/error.log").read()
            try:
                return ng.get("/orders", timeout=5)[0] == 200
            except OSError:
                return False
        assert wait_for(up, 15)
        assert ng.get("/orders") == (200, "done\n")
        assert shared.on_master("EXISTS", "orders:42") == 0
    finally:
        proc.terminate()
        proc.wait(10)
    log = open(f"{d}/error.log", errors="replace").read()
    said = [line for line in log.splitlines()
            if re.search(r"\[(warn|error|alert|crit|emerg)\]", line)]
    assert said == [], said


def test_sentinels_hung_the_last_master_is_used(shared, make_nginx):
    """Every sentinel hung (SIGSTOP: they accept connections and never answer) and the master
    not answering writes for longer than the command timeout (CLIENT PAUSE): the worker doubts
    it and asks the sentinels, waits for them about one command timeout once, then uses the last
    master they named (ROLE checks it): new acquires work there at once, and the hold is renewed
    there. Then the master becomes a replica. Last in the module: the sentinels are resumed,
    but then sit in TILT mode, and the servers have swapped roles behind their back."""
    ng = make_nginx(url=shared.url, watchdog=3, options="connect_timeout = 1, command_timeout = 1",
                    errors=[READ_TIMED_OUT, lost("down:demoted", "unreachable")])
    holder = {}
    th = in_background(ng, "/hold?name=down:held&secs=7", holder)
    assert wait_for(lambda: shared.on_master("EXISTS", "down:held") == 1, 5)
    master, replica = shared.master_server(), shared.replica_server()
    raw = Raw(master.url)
    for s in shared.sentinels:
        s.process.send_signal(signal.SIGSTOP)
    try:
        assert raw("CLIENT", "PAUSE", "1200", "WRITE") == "OK"
        f = fields(ng.get("/cycle?name=down:paused")[1])
        assert f["ok"] == "false" and f["err"].startswith("connection: no answer from"), f
        took = []
        for name in ("down:first", "down:second"):
            t0 = time.monotonic()
            f = fields(ng.get(f"/cycle?name={name}")[1])
            took.append(time.monotonic() - t0)
            assert f["ok"] == "true", (name, f)
        print("sentinels hung, the master doubted: the next acquires took "
              + ", ".join(f"{t:.2f} s" for t in took))
        assert took[0] < 3 and took[1] < 0.5
        assert re.search(READ_TIMED_OUT, ng.log())  # the sentinels were asked, and hung
        th.join(30)
        assert holder["lost"] == "false" and holder["released"] == "true", holder
        assert raw("EXISTS", "down:held") == 0
        # The last known master becomes a replica while the sentinels still hang: refused
        # cleanly (READONLY, or ROLE on a new connection), never written to; the hold there is
        # reported lost when its confirmed lease runs out.
        demoted = {}
        th = in_background(ng, "/hold?name=down:demoted&secs=4", demoted)
        assert wait_for(lambda: raw("EXISTS", "down:demoted") == 1, 5)
        other = Raw(replica.url)
        assert other("REPLICAOF", "NO", "ONE") == "OK"
        assert raw("REPLICAOF", "127.0.0.1", str(replica.port)) == "OK"
        other.close()
        f = fields(ng.get("/cycle?name=down:refused")[1])
        assert f["ok"] == "false" and re.match(
            r"connection: .* is no (master \(a failover under way\?\)|longer the master "
            r"\(READONLY\))", f["err"]), f
        th.join(30)
        assert demoted["lost"] == "true" and demoted["reason"] == "unreachable", demoted
        assert "lost" in demoted["release_err"], demoted
    finally:
        raw.close()
        for s in shared.sentinels:
            s.process.send_signal(signal.SIGCONT)
