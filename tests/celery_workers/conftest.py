"""Fixtures of the Celery suite: a Redis server (broker and locks), real Celery workers started
as processes of their own (killed by process group at the end), a producer and the runs log."""

import os
import signal
import subprocess
import sys
import time

import pytest
from celery import Celery

from redlease.testing import RedisServer

HERE = os.path.dirname(os.path.abspath(__file__))


class Worker:
    def __init__(self, broker, locks, log, lease, name, pool, concurrency, queue):
        self.log_path = os.path.join(os.path.dirname(log), f"{name}.log")
        env = dict(os.environ, REDLEASE_CELERY_BROKER=broker, REDLEASE_CELERY_LOCKS=locks,
                   REDLEASE_CELERY_LOG=log, PYTHONPATH=HERE)
        env.pop("REDLEASE_CELERY_LEASE", None)
        if lease is not None:
            env["REDLEASE_CELERY_LEASE"] = str(lease)
        with open(self.log_path, "wb") as out:
            # a session (process group) of its own: a kill takes its pool's children too
            self.process = subprocess.Popen(
                [sys.executable, "-m", "celery", "-A", "tasks_app", "worker", "-l", "info",
                 "-n", f"{name}@%h", f"--pool={pool}", f"--concurrency={concurrency}",
                 "-Q", queue, "--without-heartbeat", "--without-gossip", "--without-mingle"],
                cwd=HERE, env=env, stdout=out, stderr=subprocess.STDOUT,
                start_new_session=True)

    def output(self):
        with open(self.log_path, errors="replace") as f:
            return f.read()

    def wait_ready(self, timeout=60):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if " ready." in self.output():
                return self
            if self.process.poll() is not None:
                break
            time.sleep(0.1)
        raise AssertionError("the Celery worker did not start:\n" + self.output())

    def kill(self):
        """SIGKILL, to its whole process group: the machine died mid-task."""
        if self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGKILL)
        self.process.wait()


@pytest.fixture(scope="module")
def server():
    with RedisServer() as s:
        yield s


@pytest.fixture(scope="module")
def runs_log(tmp_path_factory):
    return str(tmp_path_factory.mktemp("celery") / "runs.log")


def locks_url(server):
    return server.url.rsplit("/", 1)[0] + "/1"  # db 0: the broker's queues; db 1: the locks


@pytest.fixture
def workers(server, runs_log):
    """workers(name, lease=None, pool="solo", concurrency=1, queue="celery"): a worker
    starting (wait_ready() waits for it), killed at the end of the test."""
    started = []

    def start(name, lease=None, pool="solo", concurrency=1, queue="celery"):
        w = Worker(server.url, locks_url(server), runs_log, lease, name, pool, concurrency, queue)
        started.append(w)
        return w

    yield start
    for w in started:
        w.kill()


@pytest.fixture(scope="module")
def default_worker(server, runs_log):
    """One worker for the module, with the default lease (30 s) and three pool processes, on
    queue "default"."""
    w = Worker(server.url, locks_url(server), runs_log, None, "default", "prefork", 3, "default")
    yield w.wait_ready()
    w.kill()


@pytest.fixture
def producer(server):
    app = Celery("producer", broker=server.url)
    app.conf.broker_connection_retry_on_startup = True
    yield app
    app.close()


class Runs:
    """The runs log: [(event, tag, pid, time)] in the order written."""

    def __init__(self, path):
        self.path = path

    def all(self):
        if not os.path.exists(self.path):
            return []
        with open(self.path) as f:
            return [(e, t, int(p), float(at)) for e, t, p, at in (ln.split() for ln in f)]

    def tags(self, event="start"):
        return [t for e, t, _, _ in self.all() if e == event]

    def at(self, event, tag):
        for e, t, _, when in self.all():
            if e == event and t == tag:
                return when
        return None

    def wait_for(self, event, tag, timeout=30):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            when = self.at(event, tag)
            if when is not None:
                return when
            time.sleep(0.05)
        raise AssertionError(f"no {event} of {tag} within {timeout} s: {self.all()}")


@pytest.fixture
def runs(runs_log):
    return Runs(runs_log)


def wait_until(predicate, timeout=30, what="the condition"):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.05)
    raise AssertionError(f"{what}: not within {timeout} s")
