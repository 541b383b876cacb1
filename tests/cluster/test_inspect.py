"""Inspection and scans on a Cluster: each name read at the master serving its slot (owners,
queue, readers, sharded subscribers), and scans that walk every master, from Python and from the
`redlease` command."""

import json
import subprocess
import sys
import threading

from clusterkit import names_on_every_master, node_call

from testkit import wait_for


def _wait_in_thread(lock, timeout):
    """Waits for `lock` in a thread, which releases it at once when it gets it."""
    result = {}

    def wait():
        result["acquired"] = lock.acquire(timeout=timeout)
        if result["acquired"]:
            lock.release()

    t = threading.Thread(target=wait)
    t.start()
    return t, result


def test_inspect_reads_each_name_at_its_master(cluster, clients):
    names = names_on_every_master(cluster, "insp", 1)
    holder = clients(cluster.url, client_name="holder-x")
    waiter, looker = (clients(cluster.url) for _ in range(2))
    threads = []
    for name in names:
        assert holder.lock(name).acquire(timeout=0)
        threads.append(_wait_in_thread(waiter.lock(name), 30))
    try:
        for name in names:
            assert wait_for(lambda n=name: looker.inspect(n)["subscribers"] == 1, 10), name
            seen = looker.inspect(name)
            assert seen["kind"] == "reentrant", (name, seen)
            assert [o["client_id"] for o in seen["owners"]] == [holder.id]
            assert 0 < seen["owners"][0]["lease"] <= 30
            # Its name, from CLIENT LIST at that name's master (the holder's connection there).
            assert seen["owners"][0]["name"] == "holder-x", (name, seen)
    finally:
        for name in names:
            holder.lock(name).release()
        for t, result in threads:
            t.join(30)
            assert result["acquired"]
    assert all(looker.inspect(name)["kind"] == "none" for name in names)


def test_inspect_every_kind_on_every_master(cluster, clients):
    names = names_on_every_master(cluster, "insp-kinds", 1)
    a, b, looker = (clients(cluster.url) for _ in range(3))
    fair, rw, sem = names
    assert a.fair_lock(fair).acquire(timeout=0)
    t, result = _wait_in_thread(b.fair_lock(fair), 30)
    assert a.rw_lock(rw).read.acquire(timeout=0)
    assert b.rw_lock(rw).read.acquire(timeout=0)
    semaphore = a.semaphore(sem)
    assert semaphore.try_set_permits(3)
    try:
        assert wait_for(lambda: len(looker.inspect(fair)["queue"]) == 1, 10)
        seen = looker.inspect(fair)
        assert seen["kind"] == "fair" and seen["queue"][0]["client_id"] == b.id
        seen = looker.inspect(rw)
        assert seen["kind"] == "read_write" and seen["mode"] == "read"
        assert sorted(o["client_id"] for o in seen["owners"]) == sorted([a.id, b.id])
        assert all(o["lease"] > 0 for o in seen["owners"])
        seen = looker.inspect(sem)
        assert seen["kind"] == "counter" and seen["count"] == 3
    finally:
        a.fair_lock(fair).release()
        t.join(30)
        assert result["acquired"]
        a.rw_lock(rw).read.release()
        b.rw_lock(rw).read.release()
        node_call(cluster, sem, "DEL", sem)


def test_scan_walks_every_master(cluster, clients):
    names = names_on_every_master(cluster, "scan-all", 4)
    holder, looker = clients(cluster.url), clients(cluster.url)
    for name in names:
        assert holder.lock(name).acquire(timeout=0)
    try:
        found = set(looker.scan("scan-all:*", count=3))  # several steps on every master
        assert found == {n.encode() for n in names}
        steps = []
        assert set(looker.scan("scan-all:*", count=1000, on_step=steps.append)) == found
        assert len(steps) >= 3  # one step per master at least
    finally:
        for name in names:
            holder.lock(name).release()
    assert not set(looker.scan("scan-all:*"))


def _cli(url, *args):
    return subprocess.run([sys.executable, "-m", "redlease", *args, "--url", url],
                          capture_output=True, text=True, timeout=60)


def test_the_command_inspects_and_scans_every_master(cluster, clients):
    names = names_on_every_master(cluster, "cli-all", 1)
    holder = clients(cluster.url)
    for name in names:
        assert holder.lock(name).acquire(timeout=0)
    try:
        for name in names:
            done = _cli(cluster.url, "inspect", name, "--json")
            assert done.returncode == 0, (name, done.stdout, done.stderr)
            seen = json.loads(done.stdout)
            assert seen["kind"] == "reentrant"
            assert [o["client_id"] for o in seen["owners"]] == [holder.id]
        done = _cli(cluster.url, "scan", "cli-all:*", "--json")
        assert done.returncode == 0, done.stderr
        assert sorted(row["name"] for row in json.loads(done.stdout)) == sorted(names)
    finally:
        for name in names:
            holder.lock(name).release()
