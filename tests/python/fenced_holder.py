"""A fenced lock's holder in a process of its own, for tests/python/test_fencing_pg.py:
acquires, prints its token, then on each line from stdin tries its fenced write to PostgreSQL
and prints "written" or "stale". The test stops it (SIGSTOP) between the two, as a long pause."""

import sys

import psycopg

import redlease
from redlease.fencing import FencedWriter, StaleTokenError

url, dsn, name = sys.argv[1:4]
client = redlease.Client(url, watchdog_timeout=1.0)
lock = client.fenced_lock(name)
token = lock.acquire_token()
print(token, flush=True)
writer = FencedWriter("ledger")
with psycopg.connect(dsn, autocommit=True) as db:
    for line in sys.stdin:
        try:
            writer.update(db.cursor(), 1, {"owner": line.strip()}, token)
            print("written", flush=True)
        except StaleTokenError:
            print("stale", flush=True)
client.close()
