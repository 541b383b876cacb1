"""A redlease hold in a process of its own, for the crash tests: takes a lock in watchdog mode,
prints `held <client id>`, and sleeps until it is killed.

    python py_holder.py REDIS_URL HEXNAME WATCHDOG_TIMEOUT_SECONDS
"""

import sys
import time

import redlease

url, name, watchdog = sys.argv[1], bytes.fromhex(sys.argv[2]), float(sys.argv[3])
client = redlease.Client(url, watchdog_timeout=watchdog)
if not client.lock(name).acquire(timeout=10):
    print("fail not acquired", flush=True)
    sys.exit(1)
print("held", client.id, flush=True)
while True:
    time.sleep(60)
