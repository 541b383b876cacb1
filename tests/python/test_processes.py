"""Across processes: mutual exclusion, fork, Ctrl-C in a blocked acquire."""

import multiprocessing
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time

import pytest

import redlease

PROCESSES, THREADS, ROUNDS = 4, 4, 15


def exclusion_worker(url, inside, total, overlaps):
    client = redlease.Client(url)

    def work():
        lock = client.lock("counter")
        for _ in range(ROUNDS):
            with lock:
                if inside.value != 0:
                    overlaps.value += 1
                inside.value = 1
                seen = total.value  # a read-modify-write that loses updates without exclusion
                time.sleep(0.001)
                total.value = seen + 1
                inside.value = 0

    threads = [threading.Thread(target=work) for _ in range(THREADS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    client.close()


def test_mutual_exclusion_across_processes_and_threads(server):
    ctx = multiprocessing.get_context("spawn")
    inside = ctx.Value("i", 0, lock=False)
    total = ctx.Value("i", 0, lock=False)
    overlaps = ctx.Value("i", 0, lock=False)
    procs = [ctx.Process(target=exclusion_worker, args=(server.url, inside, total, overlaps))
             for _ in range(PROCESSES)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(120)
        assert p.exitcode == 0
    assert overlaps.value == 0
    assert total.value == PROCESSES * THREADS * ROUNDS


def test_fork_child_does_not_own_the_parents_hold(make_client, raw):
    c = make_client(watchdog_timeout=0.3)
    lock = c.lock("forked")
    lock.acquire()
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: report what it sees through the pipe, then exit at once
        code = 0
        try:
            results = [lock.held(), lock.hold_count]
            try:
                lock.release()
                results.append("released")
            except redlease.NotOwnedError:
                results.append("not_owned")
            results.append(lock.acquire(timeout=0))  # another owner now: cannot take it
            child_client = redlease.Client(c.url)
            other = child_client.lock("child-own")
            with other:
                results.append(other.held())
            child_client.close()
            os.write(write, repr(results).encode())
        except BaseException as e:  # noqa: BLE001
            os.write(write, repr(e).encode())
            code = 1
        os._exit(code)
    os.close(write)
    _, status = os.waitpid(pid, 0)
    report = os.read(read, 4096).decode()
    os.close(read)
    assert os.WEXITSTATUS(status) == 0, report
    assert report == "[False, 0, 'not_owned', False, True]"
    # the parent still holds it and keeps renewing it: 1 s is over three watchdog timeouts
    time.sleep(1.0)
    assert lock.held() and not lock.lost
    assert raw("PTTL", "forked") > 0
    lock.release()


SIGINT_CHILD = textwrap.dedent("""
    import signal, sys, time, redlease
    # A shell that starts the suite in the background (nohup ... &) leaves SIGINT ignored in its
    # children: restore Python's own handler, which this test is about.
    signal.signal(signal.SIGINT, signal.default_int_handler)
    client = redlease.Client(sys.argv[1])
    lock = client.lock("interrupted")
    print("waiting", flush=True)
    start = time.monotonic()
    try:
        lock.acquire()
        print("acquired", flush=True)
    except KeyboardInterrupt:
        interrupted = time.monotonic()
        deadline = interrupted + 2  # the UNSUBSCRIBE is confirmed one round trip later
        while client.stats()["subscriptions"] and time.monotonic() < deadline:
            time.sleep(0.01)
        print("interrupted", interrupted, lock.hold_count, client.stats()["subscriptions"],
              flush=True)
        time.sleep(0.2)  # let the parent look at the server while this client is still open
        print("done", flush=True)
""")


def test_ctrl_c_interrupts_a_blocked_acquire(client, raw, server):
    client.lock("interrupted").acquire()
    child = subprocess.Popen([sys.executable, "-c", SIGINT_CHILD, server.url],
                             stdout=subprocess.PIPE, text=True)
    # If the child never answers (a SIGINT ignored), killing it ends our reads with "" and the
    # assertions fail instead of the suite hanging.
    stopper = threading.Timer(20, child.kill)
    stopper.start()
    try:
        assert child.stdout.readline().strip() == "waiting"
        deadline = time.monotonic() + 5  # until it is subscribed: really waiting
        while raw("PUBSUB", "NUMSUB", "redisson_lock__channel:{interrupted}")[1] != 1:
            assert time.monotonic() < deadline
            time.sleep(0.01)
        time.sleep(0.1)
        sent = time.monotonic()
        child.send_signal(signal.SIGINT)
        words = child.stdout.readline().split()
        assert words[0] == "interrupted", words
        latency = float(words[1]) - sent
        assert latency < 0.5  # promised: about 100 ms; a wide margin for a loaded machine
        assert words[2:] == ["0", "0"]  # nothing held, no subscription kept
        assert raw("PUBSUB", "NUMSUB", "redisson_lock__channel:{interrupted}")[1] == 0
        assert child.stdout.readline().strip() == "done"
    finally:
        stopper.cancel()
        child.kill()
        child.wait()
    assert raw("HLEN", "interrupted") == 1  # only the holder's field


def test_a_killed_holder_frees_the_lock_within_the_watchdog_timeout(server, client):
    code = textwrap.dedent("""
        import sys, time, redlease
        c = redlease.Client(sys.argv[1], watchdog_timeout=0.6)
        c.lock("killed").acquire()
        print("held", flush=True)
        time.sleep(60)
    """)
    child = subprocess.Popen([sys.executable, "-c", code, server.url], stdout=subprocess.PIPE,
                             text=True)
    try:
        assert child.stdout.readline().strip() == "held"
        lock = client.lock("killed")
        time.sleep(1.0)  # past the timeout: renewed meanwhile
        assert lock.locked()
        child.send_signal(signal.SIGKILL)
        child.wait()
        killed = time.monotonic()
        assert lock.acquire(timeout=5)
        assert time.monotonic() - killed < 0.6 + 0.5
        lock.release()
    finally:
        child.kill()
        child.wait()


def test_fork_child_can_close_an_inherited_client_it_never_used(make_client, raw, server):
    c = make_client(watchdog_timeout=0.3, on_lost=lambda name, reason: None)
    lock = c.lock("inherited")
    lock.acquire()
    raw("DEL", "inherited")  # a loss: the parent's event thread is running
    deadline = time.monotonic() + 3
    while not lock.lost and time.monotonic() < deadline:
        time.sleep(0.01)
    assert lock.lost
    pid = os.fork()
    if pid == 0:
        code = 1
        try:
            signal.alarm(10)  # a hang fails the test instead of the run
            own = redlease.Client(server.url)
            with own.lock("child-own"):
                c.close()  # never used in the child
            own.close()
            code = 0
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0, status
    with pytest.raises(redlease.LockLostError):
        lock.release()


CTRL_C_AT_ONCE_CHILD = textwrap.dedent("""
    import signal, sys, redlease
    signal.signal(signal.SIGINT, signal.default_int_handler)
    client = redlease.Client(sys.argv[1])
    lock = client.lock("interrupted")
    for _ in range(int(sys.argv[2])):
        try:  # (the signal may land as soon as "waiting" is out)
            print("waiting", flush=True)
            lock.acquire()
            print("acquired", flush=True)
        except KeyboardInterrupt:
            print("interrupted", lock.hold_count, flush=True)
""")


def test_ctrl_c_as_the_wait_begins_is_never_lost(client, server):
    # The signal lands before the wait's first 50 ms slice ends (often before the GIL is even
    # released): the first look at it must raise KeyboardInterrupt, not swallow it.
    client.lock("interrupted").acquire()
    rounds = 20
    child = subprocess.Popen([sys.executable, "-c", CTRL_C_AT_ONCE_CHILD, server.url,
                              str(rounds)], stdout=subprocess.PIPE, text=True)
    stopper = threading.Timer(30, child.kill)  # a lost signal fails the test, never hangs it
    stopper.start()
    try:
        for round_ in range(rounds):
            assert child.stdout.readline().strip() == "waiting", round_
            time.sleep(0.004 * (round_ % 10))
            sent = time.monotonic()
            child.send_signal(signal.SIGINT)
            assert child.stdout.readline().split() == ["interrupted", "0"], round_
            assert time.monotonic() - sent < 2, round_
    finally:
        stopper.cancel()
        child.kill()
        child.wait()
        child.stdout.close()
