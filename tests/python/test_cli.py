"""The `redlease` command against real holders: inspect on each kind (tables and --json, the
owners, counts, leases and fair queue), exit codes, the password never shown, force-unlock and
its refusals, scan over 50,000 keys without KEYS (seen with MONITOR), and watch. Locks held by
Lua and Redisson are inspected in tests/interop/test_inspect_java.py."""

import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time

import pytest

import redlease
from redlease.testing import RedisServer
from testkit import wait_for

REDLEASE = os.path.join(os.path.dirname(sys.executable), "redlease")  # the console script


def run(*args, url, stdin=None, timeout=120):
    env = {k: v for k, v in os.environ.items() if k != "REDIS_URL"}
    return subprocess.run([sys.executable, "-m", "redlease", *args, "--url", url],
                          capture_output=True, text=True, timeout=timeout, env=env,
                          stdin=stdin if stdin is not None else subprocess.DEVNULL)


def inspect_json(name, url):
    result = run("inspect", name, "--json", url=url)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


class Holder:
    """A thread that holds a lock until told to stop (a thread that ends releases its holds)."""

    def __init__(self, acquire):
        self.held, self.done, self.result = threading.Event(), threading.Event(), None
        self.context = None

        def main():
            self.context = redlease._core.current_context()
            self.result = acquire()
            self.held.set()
            self.done.wait(60)

        self.thread = threading.Thread(target=main, daemon=True)
        self.thread.start()

    def stop(self):
        self.done.set()
        self.thread.join()


def test_inspect_reentrant_table_and_json(client, server):
    lock = client.lock("orders:42", lease=60)
    assert lock.acquire() and lock.acquire()
    table = run("inspect", "orders:42", url=server.url)
    assert table.returncode == 0, table.stderr
    lines = table.stdout.splitlines()
    assert lines[0].split() == ["lock", "orders:42"]
    assert "kind        reentrant" in lines
    row = next(line.split() for line in lines if client.id in line)
    context = str(redlease._core.current_context())
    assert row[:5] == [client.id, f"{socket.gethostname()}:{os.getpid()}", context, "-", "2"]
    assert row[-1] == "no"  # the command's own process does not hold it
    found = inspect_json("orders:42", server.url)
    assert found["kind"] == "reentrant" and found["name"] == "orders:42"
    assert 55 < found["lease"] <= 60
    [owner] = found["owners"]
    assert (owner["client_id"], owner["context"], owner["count"]) == (client.id, context, 2)
    assert owner["field"] == f"{client.id}:{context}"
    # In this process, the same facts say the hold is known here.
    assert client.inspect("orders:42")["owners"][0]["local"] is True


def test_inspect_fair_lock_with_two_waiters(client, make_client, server):
    fair = client.fair_lock("orders:7", lease=60)
    assert fair.acquire()
    waiters, threads = [], []
    for _ in range(2):
        w = make_client()
        waiters.append(w)
        threads.append(threading.Thread(
            target=lambda w=w: w.fair_lock("orders:7").acquire(timeout=30), daemon=True))
        threads[-1].start()
        queued = len(waiters)
        assert wait_for(lambda n=queued: len(client.inspect("orders:7")["queue"]) == n, 10)
    found = inspect_json("orders:7", server.url)
    assert found["kind"] == "fair"
    assert [o["client_id"] for o in found["owners"]] == [client.id]
    assert [w["client_id"] for w in found["queue"]] == [w.id for w in waiters]
    first, second = found["queue"]
    # Each keeps its place for its wait (30 s) after the one before it: the holder's lease first.
    assert 80 < first["timeout"] <= 90 and 25 < second["timeout"] - first["timeout"] <= 31
    assert found["subscribers"] == 2
    table = run("inspect", "orders:7", url=server.url).stdout
    assert "queue       2 waiting, in order" in table
    fair.release()
    for t in threads:  # each takes it in turn; a thread that ends releases its hold
        t.join(30)


def test_inspect_read_write_fenced_and_counter(client, server, raw):
    rw = client.rw_lock("doc", lease=20)
    assert rw.read.acquire()
    other = Holder(lambda: rw.read.acquire(lease=40))
    assert other.held.wait(10)
    found = inspect_json("doc", server.url)
    assert (found["kind"], found["mode"]) == ("read_write", "read")
    leases = sorted(o["lease"] for o in found["owners"])
    assert 15 < leases[0] <= 20 and 35 < leases[1] <= 40  # each reader's own
    other.stop()
    fenced = client.fenced_lock("ledger", lease=20)
    for _ in range(3):
        assert fenced.acquire()
        fenced.release()
    assert fenced.acquire()
    assert inspect_json("ledger", server.url)["last_token"] == 4
    sem = client.semaphore("pool")
    sem.try_set_permits(5)
    found = inspect_json("pool", server.url)
    assert (found["kind"], found["count"], found["owners"]) == ("counter", 5, [])


def test_exit_codes_and_the_password_never_shown():
    with RedisServer(extra_args=["--requirepass", "s3cret-pw"]) as s:
        url = s.url.replace("redis://", "redis://:s3cret-pw@")
        missing = run("inspect", "nothing", url=url)
        assert missing.returncode == 1
        assert "s3cret-pw" not in missing.stdout + missing.stderr
        assert "redis://:***@" in missing.stdout
        wrong = run("inspect", "nothing", url=url.replace("s3cret-pw", "wrong-pw"))
        assert wrong.returncode == 2 and "wrong-pw" not in wrong.stdout + wrong.stderr
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]  # nothing listens there
    down = run("inspect", "x", url=f"redis://127.0.0.1:{port}")
    assert down.returncode == 2 and down.stderr.startswith("redlease: ")
    assert run("inspect", "x", url="nonsense://").returncode == 2
    assert run("frobnicate", "x", url="redis://127.0.0.1:1").returncode == 2  # usage


def test_url_defaults_to_redis_url(client, server):
    assert client.lock("env", lease=10).acquire()
    env = {**os.environ, "REDIS_URL": server.url}
    out = subprocess.run([REDLEASE, "inspect", "env", "--json"], capture_output=True, text=True,
                         env=env, timeout=60)
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["url"] == server.url


def test_force_unlock_refusals(client, server, raw):
    lock = client.lock("stuck", lease=60)
    assert lock.acquire()
    refused = run("force-unlock", "stuck", url=server.url)  # stdin is not a terminal
    assert refused.returncode == 2 and "without --yes" in refused.stderr
    assert raw("EXISTS", "stuck") == 1
    raw("SET", "plain", "text")
    raw("SET", "permits", "3")
    for key, why in (("plain", "not lock-shaped"), ("permits", "counter")):
        out = run("force-unlock", key, "--yes", url=server.url)
        assert out.returncode == 2 and why in out.stderr, out.stderr
    assert raw("GET", "plain") == b"text" and raw("GET", "permits") == b"3"
    assert run("force-unlock", "absent", "--yes", url=server.url).returncode == 1


def test_force_unlock_with_yes_deletes_and_the_holder_finds_it_lost(client, server, raw):
    lock = client.lock("stuck", lease=60)
    assert lock.acquire()
    out = run("force-unlock", "stuck", "--yes", url=server.url)
    assert out.returncode == 0, out.stderr
    assert "It will delete:" in out.stdout and out.stdout.rstrip().endswith("deleted")
    assert raw("EXISTS", "stuck") == 0
    with pytest.raises(redlease.LockLostError):
        lock.release()
    rw = client.rw_lock("doc", lease=60)
    assert rw.write.acquire()
    out = run("force-unlock", "doc", "--yes", "--json", url=server.url)
    assert json.loads(out.stdout)["deleted"] is True
    assert raw("EXISTS", "doc") == 0


def monitor(server, seen, ready):
    with socket.create_connection(("127.0.0.1", server.port)) as s:
        s.sendall(b"MONITOR\r\n")
        ready.set()
        buf = b""
        s.settimeout(0.2)
        while not seen.get("stop"):
            try:
                chunk = s.recv(1 << 20)
            except socket.timeout:
                continue
            if not chunk:
                break
            buf += chunk
        seen["log"] = buf.decode("utf-8", "replace")


def test_scan_finds_100_locks_among_50000_keys_without_keys(client, server, raw):
    raw("DEBUG", "POPULATE", 50_000, "filler")
    for i in range(100):
        assert client.lock(f"job:{i}", lease=30 + i).acquire()
    seen, ready = {}, threading.Event()
    t = threading.Thread(target=monitor, args=(server, seen, ready), daemon=True)
    t.start()
    assert ready.wait(5)
    time.sleep(0.2)
    start = time.monotonic()
    out = run("scan", "--json", "--limit", "1000", url=server.url)
    elapsed = time.monotonic() - start
    seen["stop"] = True
    t.join()
    assert out.returncode == 0, out.stderr
    found = json.loads(out.stdout)
    assert sorted(f["name"] for f in found) == sorted(f"job:{i}" for i in range(100))
    leases = [f["lease"] for f in found]
    assert leases == sorted(leases)  # the soonest to expire first
    assert elapsed < 60  # bounded: one SCAN step per 1000 keys, never a blocking KEYS
    log = seen["log"]
    assert '"scan"' in log.lower()
    commands = [line.split('"')[1].lower() for line in log.splitlines() if '"' in line]
    assert "keys" not in commands
    assert all('"COUNT" "1000"' in line for line in log.splitlines() if '"SCAN"' in line)
    limited = run("scan", "job:1*", "--limit", "5", url=server.url)
    assert limited.returncode == 0
    assert len(limited.stdout.splitlines()) == 1 + 5  # the header and 5 rows
    assert run("scan", "nomatch:*", url=server.url).returncode == 1


def test_watch_polls_or_follows_keyspace_notifications(client, server, raw):
    polled = run("watch", "w", "--count", "2", "--json", url=server.url)
    assert polled.returncode == 0, polled.stderr
    views = [json.loads(line) for line in polled.stdout.splitlines()]
    assert len(views) == 2 and "polling every 0.5 s" in views[0]["refresh"]
    raw("CONFIG", "SET", "notify-keyspace-events", "KA")
    raw("CONFIG", "RESETSTAT")
    env = {k: v for k, v in os.environ.items() if k != "REDIS_URL"}
    proc = subprocess.Popen([sys.executable, "-m", "redlease", "watch", "w", "--count", "2",
                             "--json", "--url", server.url], stdout=subprocess.PIPE, text=True,
                            env=env)
    try:
        first = json.loads(proc.stdout.readline())
        assert first["kind"] == "none" and first["refresh"] == "keyspace notifications"
        # Its wait is subscribed (the change below must not come before it) with one SUBSCRIBE:
        # asking whether notifications are on subscribed to nothing (a subscription made and
        # left for that once woke the wait with its confirmations: a redraw with no change).
        channel = "__keyspace@0__:w"
        assert wait_for(lambda: raw("PUBSUB", "NUMSUB", channel)[1] == 1, timeout=10)
        stats = raw("INFO", "commandstats").decode()
        assert "cmdstat_subscribe:calls=1," in stats and "cmdstat_unsubscribe" not in stats
        start = time.monotonic()
        assert client.lock("w", lease=10).acquire()
        second = json.loads(proc.stdout.readline())
        # Redrawn on the change, not on the 30 s timer.
        assert time.monotonic() - start < 10
        assert second["kind"] == "reentrant"
        assert proc.wait(30) == 0
    finally:
        proc.kill()
        proc.wait()


def run_on_terminal(args, url, answer):
    """The command with a terminal (a pty) as stdin and stderr, `answer` typed in."""
    master, slave = os.openpty()
    env = {k: v for k, v in os.environ.items() if k != "REDIS_URL"}
    try:
        proc = subprocess.Popen([sys.executable, "-m", "redlease", *args, "--url", url],
                                stdin=slave, stdout=subprocess.PIPE, stderr=slave, text=True,
                                env=env)
        os.write(master, answer.encode())
        out, _ = proc.communicate(timeout=60)
        os.close(slave)
        slave = -1
        seen = b""
        try:
            while chunk := os.read(master, 65536):
                seen += chunk
        except OSError:  # the pty is closed once the child is gone
            pass
        return proc.returncode, out, seen.decode("utf-8", "replace")
    finally:
        os.close(master)
        if slave >= 0:
            os.close(slave)


def test_force_unlock_asks_on_a_terminal(client, server, raw):
    lock = client.lock("stuck", lease=60)
    assert lock.acquire()
    code, out, _ = run_on_terminal(["force-unlock", "stuck"], server.url, "n\n")
    assert code == 2 and "Delete lock 'stuck' whoever holds it? [y/N]" in out
    assert raw("EXISTS", "stuck") == 1
    code, out, _ = run_on_terminal(["force-unlock", "stuck"], server.url, "y\n")
    assert code == 0 and out.rstrip().endswith("deleted")
    assert raw("EXISTS", "stuck") == 0


def test_scan_shows_progress_on_a_terminal(client, server):
    assert client.lock("job:1", lease=30).acquire()
    code, out, terminal = run_on_terminal(["scan", "--count", "10"], server.url, "")
    assert code == 0 and "job:1" in out
    assert "scanning: 1 SCAN step(s)" in terminal


def default_sigint():
    # A shell that starts the suite in the background leaves SIGINT ignored in its children,
    # and a command started so rightly ignores Ctrl-C: start this one as a terminal would.
    signal.signal(signal.SIGINT, signal.SIG_DFL)


@pytest.mark.parametrize("refresh", ["polling", "notified"])
@pytest.mark.parametrize("mode", [[], ["--json"]], ids=["text", "json"])
def test_watch_ends_on_ctrl_c_with_130_every_time(server, raw, mode, refresh):
    # SIGINT lands at a different point of the watch loop each round: during the poll's wait
    # (or the wait for a keyspace notification), between slices, while inspecting or printing.
    # Every time: exit 130 at once, no traceback, never a "redlease: ok" from an error path that
    # lost the interruption.
    if refresh == "notified":
        raw("CONFIG", "SET", "notify-keyspace-events", "KA")
    env = {k: v for k, v in os.environ.items() if k != "REDIS_URL"}
    for round_ in range(20):
        proc = subprocess.Popen([sys.executable, "-m", "redlease", "watch", "w", "--url",
                                 server.url, *mode], stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True, env=env,
                                preexec_fn=default_sigint)
        try:
            assert proc.stdout.readline()  # its first view: the loop runs
            time.sleep(0.013 * (round_ % 10))
            proc.send_signal(signal.SIGINT)
            try:
                code = proc.wait(5)
            except subprocess.TimeoutExpired:
                pytest.fail(f"round {round_}: the signal was ignored, watch went on polling")
            stderr = proc.stderr.read()
            assert code == 130, (round_, code, stderr)
            assert "Traceback" not in stderr and "redlease: ok" not in stderr, stderr
        finally:
            proc.kill()
            proc.wait()
            proc.stdout.close()
            proc.stderr.close()


def test_fenced_lock_force_unlock_advances_the_fence_and_inspect_shows_it(client, server, raw):
    holder = Holder(lambda: client.fenced_lock("pay").acquire_token())
    holder.held.wait(10)
    token = holder.result
    result = run("force-unlock", "pay", "--yes", url=server.url)
    assert result.returncode == 0, result.stderr
    assert raw("GET", "redisson_lock_token:{pay}") == str(token + 1).encode()
    assert f"fence advanced to {token + 1}" in result.stdout
    # The free name's counter stays, and inspect says so rather than "no such key".
    result = run("inspect", "pay", url=server.url)
    assert result.returncode == 1
    assert f"last token  {token + 1}" in result.stdout
    # A free fenced name (a holder paused past its lease) is fenced off all the same.
    result = run("force-unlock", "pay", "--yes", url=server.url)
    assert result.returncode == 1, result.stderr
    assert "it was free already" in result.stdout
    assert f"fence advanced to {token + 2}" in result.stdout
    assert run("force-unlock", "pay", url=server.url).returncode == 2  # not confirmed
    assert raw("GET", "redisson_lock_token:{pay}") == str(token + 2).encode()
    holder.stop()


def test_drop_fence_refuses_while_held_and_cleans_a_free_name(client, server, raw):
    holder = Holder(lambda: client.fenced_lock("old").acquire_token())
    holder.held.wait(10)
    result = run("drop-fence", "old", "--yes", url=server.url)
    assert result.returncode == 2 and "held" in result.stderr
    assert raw("EXISTS", "redisson_lock_token:{old}") == 1
    holder.stop()
    wait_for(lambda: raw("EXISTS", "old") == 0)
    result = run("drop-fence", "old", "--yes", "--json", url=server.url)
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout) == {"name": "old", "dropped": 1}
    assert raw("EXISTS", "redisson_lock_token:{old}") == 0
    assert run("drop-fence", "old", "--yes", url=server.url).returncode == 1


def run_as_typed(*args, env_url=None, timeout=60):
    """The command line exactly as given: no --url added; $REDIS_URL only when env_url."""
    env = {k: v for k, v in os.environ.items() if k != "REDIS_URL"}
    if env_url is not None:
        env["REDIS_URL"] = env_url
    return subprocess.run([sys.executable, "-m", "redlease", *args], capture_output=True,
                          text=True, timeout=timeout, env=env, stdin=subprocess.DEVNULL)


def free_port():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]  # nothing listens there


def test_global_options_go_before_or_after_the_subcommand(client, server):
    assert client.lock("orders:1", lease=30).acquire()
    for args in (["--url", server.url, "inspect", "orders:1", "--json"],
                 ["--url", server.url, "--json", "inspect", "orders:1"],
                 ["--json", "inspect", "orders:1", "--url", server.url],
                 ["inspect", "orders:1", "--url", server.url, "--json"]):
        out = run_as_typed(*args)
        assert out.returncode == 0, (args, out.stderr)
        assert json.loads(out.stdout)["owners"][0]["client_id"] == client.id
    # After the subcommand wins over before it, as the one typed last.
    dead = f"redis://127.0.0.1:{free_port()}"
    out = run_as_typed("--url", dead, "inspect", "orders:1", "--url", server.url)
    assert out.returncode == 0, out.stderr
    assert run_as_typed("--url", server.url, "scan", "orders:*").returncode == 0
    assert run_as_typed("--url", server.url, "watch", "orders:1", "--count", "1").returncode == 0


def test_cannot_connect_says_how_to_point_it_elsewhere():
    dead = f"redis://127.0.0.1:{free_port()}"
    given = run_as_typed("inspect", "x", "--url", dead)
    assert given.returncode == 2
    first, second = given.stderr.splitlines()
    assert first.startswith("redlease: cannot connect to 127.0.0.1:")
    assert second == ("redlease: the server is the one --url names; "
                      "see redlease --help for the URL forms")
    from_env = run_as_typed("inspect", "x", env_url=dead)
    assert from_env.returncode == 2
    assert from_env.stderr.splitlines()[1] == (
        "redlease: the server is the one $REDIS_URL names; give --url URL for another")
    with socket.socket() as probe:  # the default: only when nothing listens on 6379 here
        if probe.connect_ex(("127.0.0.1", 6379)) == 0:
            pytest.skip("a server listens on 127.0.0.1:6379")
    default = run_as_typed("inspect", "x")
    assert default.returncode == 2
    assert default.stderr.splitlines() == [
        "redlease: cannot connect to 127.0.0.1:6379: Connection refused",
        "redlease: no --url given and $REDIS_URL is not set, so it tried "
        "redis://127.0.0.1:6379/0; point it at your server with --url redis://HOST:PORT/DB "
        "or REDIS_URL=..."]


def test_version_is_the_package_version():
    out = run_as_typed("--version")
    assert out.returncode == 0, out.stderr
    assert out.stdout == f"redlease {redlease.__version__}\n"


def test_every_help_names_the_options_and_the_exit_codes():
    secret = "redis://:hunter2-pw@127.0.0.1:6379/0"  # $REDIS_URL's password is never shown
    top = run_as_typed("--help", env_url=secret)
    assert top.returncode == 0 and "hunter2" not in top.stdout
    for word in ("--url URL", "--json", "--version", "$REDIS_URL", "exit codes: 0 found, 1 not "
                 "found, 2 error or refusal, 130 interrupted", "inspect", "watch",
                 "force-unlock", "scan"):
        assert word in " ".join(top.stdout.split()), word
    for command in ("inspect", "watch", "force-unlock", "scan"):
        out = run_as_typed(command, "--help", env_url=secret)
        assert out.returncode == 0, out.stderr
        text = " ".join(out.stdout.split())
        assert "hunter2" not in text, command
        assert f"usage: redlease {command}" in text
        for word in ("--url URL", "--json", "$REDIS_URL", "exit codes: 0 "):
            assert word in text, (command, word)
        if command != "scan":
            assert "name the lock's name" in text, command


def test_inspect_and_watch_show_the_holders_name(make_client, server, raw):
    holder = make_client(client_name="billing-7")
    assert holder.lock("orders:3", lease=30).acquire()
    table = run("inspect", "orders:3", url=server.url)
    assert table.returncode == 0, table.stderr
    lines = table.stdout.splitlines()
    header = next(line for line in lines if "CLIENT ID" in line)
    assert header.split()[:3] == ["CLIENT", "ID", "NAME"]
    row = next(line.split() for line in lines if holder.id in line)
    assert row[:2] == [holder.id, "billing-7"]
    [owner] = inspect_json("orders:3", server.url)["owners"]
    assert owner["name"] == "billing-7"
    watched = run("watch", "orders:3", "--count", "1", url=server.url)
    assert watched.returncode == 0, watched.stderr
    assert [holder.id, "billing-7"] == next(
        line.split() for line in watched.stdout.splitlines() if holder.id in line)[:2]
    # A holder that no connection names (gone, or Redisson): "?" and null.
    gone = "00000000-0000-0000-0000-000000000000"
    raw("HSET", "orders:4", f"{gone}:1", "1")
    row = next(line.split() for line in run("inspect", "orders:4", url=server.url)
               .stdout.splitlines() if gone in line)
    assert row[:3] == [gone, "?", "1"]
    assert inspect_json("orders:4", server.url)["owners"][0]["name"] is None
