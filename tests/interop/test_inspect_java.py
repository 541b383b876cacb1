"""`redlease inspect` (and force-unlock) on locks held by Redisson and by the Lua rock: the owners
decoded into Redisson's client id and Java thread id, or the Lua client's id, with their hold
counts, leases, the fair queue across Java and Python waiters, readers, fencing tokens."""

import json
import os
import subprocess
import sys
import threading

from testkit import wait_for

LEASE_MS = 20_000


def inspect(name, url, *extra):
    env = {k: v for k, v in os.environ.items() if k != "REDIS_URL"}
    out = subprocess.run([sys.executable, "-m", "redlease", "inspect", name, "--json", "--url",
                          url, *extra], capture_output=True, text=True, timeout=60, env=env)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


def test_redisson_reentrant_holder_decoded(java, server, name):
    lock = java.lock(name)
    lock.lock("t1", LEASE_MS)
    lock.lock("t1", LEASE_MS)
    found = inspect(name, server.url)
    assert found["kind"] == "reentrant"
    [owner] = found["owners"]
    assert owner["client_id"] == java.id
    assert owner["context"] == str(java.thread_id("t1"))
    assert owner["count"] == 2 and owner["local"] is False
    assert 15 < owner["lease"] <= 20
    assert owner["name"] is None  # Redisson's connections carry no redlease name
    lock.unlock("t1")
    lock.unlock("t1")


def test_lua_holder_decoded(lua, server, name):
    peer = lua()
    assert peer.acquire(name, timeout=0, lease=20)
    found = inspect(name, server.url)
    [owner] = found["owners"]
    assert owner["client_id"] == peer.id and owner["count"] == 1
    assert owner["context"].isdigit()
    host, pid = owner["name"].rsplit(":", 1)  # the Lua process's own connections name it
    assert host and pid.isdigit() and int(pid) != os.getpid()
    assert 15 < found["lease"] <= 20
    peer.release(name)


def test_fair_queue_across_java_and_python(java, client, server, raw, name):
    holder = java.lock(name, "fair")
    holder.lock("t0", 120_000)  # Redisson gives up at once on a lease longer than its wait
    waiter = java.lock(name, "fair").start("t1", "tryLock", 200_000, LEASE_MS)
    assert wait_for(lambda: len(client.inspect(name)["queue"]) == 1, 10)
    py_waiter = threading.Thread(target=lambda: client.fair_lock(name).acquire(timeout=30),
                                 daemon=True)
    py_waiter.start()
    assert wait_for(lambda: len(client.inspect(name)["queue"]) == 2, 10)
    found = inspect(name, server.url)
    assert found["kind"] == "fair"
    assert found["owners"][0]["context"] == str(java.thread_id("t0"))
    first, second = found["queue"]
    assert first["client_id"] == java.id and first["context"] != found["owners"][0]["context"]
    assert second["client_id"] == client.id
    assert first["timeout"] < second["timeout"]
    holder.unlock("t0")
    assert waiter.result(30) is True
    assert first["context"] == str(java.thread_id("t1"))  # t1 was busy waiting until now
    java.lock(name, "fair").unlock("t1")
    py_waiter.join(30)  # it takes the lock next; its thread's end releases it


def test_readers_of_both_sides_and_a_java_fencing_token(java, client, server, name):
    java.lock(name, "read").lock("t1", LEASE_MS)
    py_reader = client.rw_lock(name, lease=40)
    held, done = threading.Event(), threading.Event()

    def reader():
        py_reader.read.acquire()
        held.set()
        done.wait(30)
        py_reader.read.release()

    t = threading.Thread(target=reader)
    t.start()
    assert held.wait(10)
    found = inspect(name, server.url)
    assert (found["kind"], found["mode"]) == ("read_write", "read")
    owners = {o["client_id"]: o for o in found["owners"]}
    assert set(owners) == {java.id, client.id}
    assert 15 < owners[java.id]["lease"] <= 20 and 35 < owners[client.id]["lease"] <= 40
    done.set()
    t.join()
    java.lock(name, "read").unlock("t1")
    fenced = java.lock(name + ":f", "fenced")
    fenced.lock("t1", LEASE_MS)
    fenced.unlock("t1")
    fenced.lock("t1", LEASE_MS)
    assert inspect(name + ":f", server.url)["last_token"] == 2
    fenced.unlock("t1")


def test_force_unlock_of_a_redisson_hold(java, server, name):
    lock = java.lock(name)
    lock.lock("t1", LEASE_MS)
    env = {k: v for k, v in os.environ.items() if k != "REDIS_URL"}
    out = subprocess.run([sys.executable, "-m", "redlease", "force-unlock", name, "--yes", "--url",
                          server.url], capture_output=True, text=True, timeout=60, env=env)
    assert out.returncode == 0, out.stderr
    assert str(java.thread_id("t1")) in out.stdout  # it showed whose hold it deletes
    assert lock.is_locked("t2") is False
