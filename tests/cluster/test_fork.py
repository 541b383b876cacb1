"""Fork on a Redis Cluster: a child forked while a parent thread waits on a lock must be able to
use (or close) the client it inherited, as on a single server; the child is bounded: killed, and
the test failed, if it hangs."""

import os
import signal
import threading
import time


def _child_report(pid, read, seconds):
    """The child's exit status and report; a child still running after `seconds` is killed."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            report = os.read(read, 4096).decode()
            os.close(read)
            return os.WEXITSTATUS(status) if os.WIFEXITED(status) else -1, report
        time.sleep(0.02)
    os.kill(pid, signal.SIGKILL)
    os.waitpid(pid, 0)
    os.close(read)
    return -1, f"the child hung (killed after {seconds} s)"


def test_child_forked_while_a_thread_waits_uses_the_client(cluster, clients):
    holder, c = clients(cluster.url), clients(cluster.url)
    assert holder.lock("fork-waited").acquire(timeout=0)
    assert c.lock("fork-renewed").acquire(timeout=0)  # its watchdog and node connections run
    result = {}

    def wait():
        lock = c.lock("fork-waited")
        result["acquired"] = lock.acquire(timeout=20)
        if result["acquired"]:
            lock.release()

    waiter = threading.Thread(target=wait)
    waiter.start()
    deadline = time.monotonic() + 5
    while c.stats()["subscriptions"] == 0 and time.monotonic() < deadline:
        time.sleep(0.01)
    time.sleep(0.1)  # inside its wait
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: report through the pipe, then exit at once
        code = 0
        try:
            results = [c.lock("fork-waited").acquire(timeout=0)]
            own = c.lock("fork-child-own")
            with own:
                results.append(own.held())
            c.close()
            os.write(write, repr(results).encode())
        except BaseException as e:  # noqa: BLE001
            os.write(write, repr(e).encode())
            code = 1
        os._exit(code)
    os.close(write)
    code, report = _child_report(pid, read, 15)
    holder.lock("fork-waited").release()
    waiter.join()
    assert code == 0, report
    assert report == "[False, True]"
    assert result["acquired"]
    c.lock("fork-renewed").release()
