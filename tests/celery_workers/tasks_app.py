"""The Celery app the suite's workers run: tasks made singletons by redlease.celery.

Configured from the environment the tests give each worker: REDLEASE_CELERY_BROKER (the broker),
REDLEASE_CELERY_LOCKS (the Redis the locks live on), REDLEASE_CELERY_LEASE (the client's
watchdog_timeout; unset: the default, 30 s) and REDLEASE_CELERY_LOG (a file each run appends its
start and end to, one line each, so that the tests see every run of every worker)."""

import os
import time

from celery import Celery

import redlease
import redlease.celery

app = Celery("tasks_app", broker=os.environ["REDLEASE_CELERY_BROKER"])
app.conf.update(broker_connection_retry_on_startup=True, worker_hijack_root_logger=True,
                worker_prefetch_multiplier=1, task_ignore_result=True)

lease = os.environ.get("REDLEASE_CELERY_LEASE")
# Made at import, in the worker's parent: its forked children each get their own client id.
client = redlease.Client(os.environ["REDLEASE_CELERY_LOCKS"],
                         watchdog_timeout=float(lease) if lease else None)


def record(event: str, tag: str) -> None:
    line = f"{event} {tag} {os.getpid()} {time.time():.3f}\n".encode()
    fd = os.open(os.environ["REDLEASE_CELERY_LOG"], os.O_WRONLY | os.O_APPEND | os.O_CREAT)
    try:
        os.write(fd, line)  # one write of a short line: whole, whatever the other workers do
    finally:
        os.close(fd)


def work(tag: str, seconds: float) -> str:
    record("start", tag)
    time.sleep(seconds)
    record("end", tag)
    return tag


@app.task
@redlease.celery.singleton(client)
def slow(tag: str, seconds: float) -> str:
    return work(tag, seconds)


@app.task
@redlease.celery.singleton(client, "celery:report:{day}")
def report(day: str, tag: str, seconds: float) -> str:
    return work(tag, seconds)


@app.task(default_retry_delay=0.2, max_retries=100)
@redlease.celery.singleton(client, "celery:singleton:tasks_app.slow", on_busy="retry")
def after_slow(tag: str) -> str:
    """Shares slow's lock (its default name), and retries while slow runs."""
    return work(tag, 0)
