"""Run by an installed redlease's interpreter: takes a lock on the given server, checks that a
second client is excluded, and prints what the test checks as JSON: the version, the shared
objects mapped into the process (/proc/self/maps), TLS support and where the extension is.

    python smoke_lock.py redis://127.0.0.1:PORT/0 [CA_FILE]

With CA_FILE (a rediss:// URL), the clients verify the server against that CA.
"""

import json
import sys

import redlease
import redlease._core

url = sys.argv[1]
options = {"tls_ca_file": sys.argv[2]} if len(sys.argv) > 2 else {}
holder, other = redlease.Client(url, **options), redlease.Client(url, **options)
lock = holder.lock("packaging:smoke")
with lock:
    held = lock.held()
    excluded = not other.lock("packaging:smoke").acquire(timeout=0)
after = other.lock("packaging:smoke")
free_after = after.acquire(timeout=0)
if free_after:
    after.release()  # the next run on the same server must find it free, not wait out a lease
holder.close()
other.close()

with open("/proc/self/maps") as f:
    mapped = sorted({line.split()[-1] for line in f if ".so" in line.split()[-1]})
print(json.dumps({
    "version": redlease.__version__,
    "held": held,
    "excluded": excluded,
    "free_after": free_after,
    "tls": redlease.tls_supported(),
    "core": redlease._core.__file__,
    "mapped": mapped,
}))
