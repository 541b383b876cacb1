"""redlease.celery.singleton with real Celery workers on a Redis broker: one run at a time per
name or per arguments, busy runs skipped or retried, the lock freed when a run returns, freed
within one lease when its worker is killed mid-task, and never taken twice by a task that
outlives its lease many times over."""

import signal
import time

from conftest import wait_until
from testkit import Raw

SKIPPED = "is held by another owner"


def test_one_run_at_a_time_and_the_lock_freed_when_it_returns(default_worker, producer, runs):
    # the default lease (30 s, renewed every 10 s): the path a user gets
    producer.send_task("tasks_app.slow", args=["a", 3.0], queue="default")
    runs.wait_for("start", "a")
    skipped = default_worker.output().count(SKIPPED)
    for tag in ("b", "c"):  # two free pool processes take them while a runs
        producer.send_task("tasks_app.slow", args=[tag, 0], queue="default")
    wait_until(lambda: default_worker.output().count(SKIPPED) == skipped + 2, 20,
               "both runs skipped")
    a_end = runs.wait_for("end", "a")
    producer.send_task("tasks_app.slow", args=["d", 0], queue="default")
    d_start = runs.wait_for("start", "d")
    assert "b" not in runs.tags() and "c" not in runs.tags()
    # released when a returned, not left to expire (its lease was 30 s)
    assert d_start - a_end < 10


def test_one_run_at_a_time_per_arguments(default_worker, producer, runs):
    producer.send_task("tasks_app.report", args=["mon", "mon-1", 3.0], queue="default")
    runs.wait_for("start", "mon-1")
    skipped = default_worker.output().count(SKIPPED)
    producer.send_task("tasks_app.report", args=["mon", "mon-2", 0], queue="default")
    producer.send_task("tasks_app.report", args=["tue", "tue-1", 0], queue="default")
    tue = runs.wait_for("start", "tue-1")
    wait_until(lambda: default_worker.output().count(SKIPPED) == skipped + 1, 20, "mon-2 skipped")
    assert tue < runs.wait_for("end", "mon-1")  # the other day ran beside it
    assert "mon-2" not in runs.tags()
    assert "celery:report:mon" in default_worker.output()


def test_a_busy_run_retries_until_the_lock_is_free(default_worker, producer, runs):
    producer.send_task("tasks_app.slow", args=["holder", 1.5], queue="default")
    runs.wait_for("start", "holder")
    producer.send_task("tasks_app.after_slow", args=["retried"], queue="default")
    started = runs.wait_for("start", "retried")
    assert started >= runs.at("end", "holder")
    assert "Retry in" in default_worker.output()


def test_a_worker_killed_mid_task_frees_the_lock_within_one_lease(workers, producer, runs,
                                                                   server):
    # A 1.5 s lease instead of the default 30 s: the same watchdog, renewing every third of its
    # lease, so the test waits one lease, not 30 s; the tests above run the default.
    lease = 1.5
    doomed = workers("doomed", lease=lease, queue="doomed")
    survivor = workers("survivor", lease=lease)
    doomed.wait_ready()
    survivor.wait_ready()
    producer.send_task("tasks_app.slow", args=["doomed", 60], queue="doomed")
    runs.wait_for("start", "doomed")
    time.sleep(lease)  # renewed at least once: held by the watchdog, past its first lease
    raw = Raw(server.url)
    raw("SELECT", 1)
    key = "celery:singleton:tasks_app.slow"
    assert raw("EXISTS", key) == 1
    doomed.kill()  # SIGKILL, mid-task, with its whole process group
    killed = time.time()
    assert doomed.process.returncode == -signal.SIGKILL

    sent = 0
    while runs.at("start", f"after-{sent - 1}") is None and time.time() - killed < lease + 10:
        producer.send_task("tasks_app.slow", args=[f"after-{sent}", 0])
        sent += 1
        time.sleep(0.2)
    first = next(t for t in runs.tags() if t.startswith("after-"))
    ran = runs.at("start", first)
    assert first != "after-0"  # sent at once: the lock was still taken, it was skipped
    assert SKIPPED in survivor.output()
    runs.wait_for("end", first)
    wait_until(lambda: raw("EXISTS", key) == 0, 10, "the lock released by the next run")
    # freed by its lease running out (renewed at most a third of a lease before the kill); the
    # next run came within one lease and Celery's delivery
    assert lease / 3 < ran - killed < lease + 2.0
    raw.close()


def test_a_task_outliving_its_lease_never_runs_twice(workers, producer, runs):
    # A 1 s lease instead of the default 30 s, so that the task outlives four leases in 4 s:
    # a fixed timeout would have let a second run start after the first second.
    first, second = workers("w1", lease=1), workers("w2", lease=1)
    first.wait_ready()
    second.wait_ready()
    producer.send_task("tasks_app.slow", args=["long", 4.0])
    runs.wait_for("start", "long")
    sent = 0
    while runs.at("end", "long") is None:
        producer.send_task("tasks_app.slow", args=[f"dup-{sent}", 0])
        sent += 1
        time.sleep(0.25)
    # every duplicate either skipped or, sent as the long run ended, run after it
    skipped = lambda: (first.output() + second.output()).count(SKIPPED)  # noqa: E731
    dups_ran = lambda: [t for t in runs.tags() if t.startswith("dup-")]  # noqa: E731
    wait_until(lambda: skipped() + len(dups_ran()) == sent, 30, "every duplicate handled")
    long_start, long_end = runs.at("start", "long"), runs.at("end", "long")
    overlapping = [t for e, t, _, at in runs.all()
                   if e == "start" and t != "long" and long_start <= at <= long_end]
    assert overlapping == [] and sent >= 12 and skipped() >= sent // 2
    producer.send_task("tasks_app.slow", args=["after-long", 0])
    runs.wait_for("start", "after-long")
