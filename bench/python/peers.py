"""The Python locks measured side by side, behind one small interface.

    impl = IMPLS["redis-py"](url)   # one client (connection pool) per process
    lock = impl.lock("name")        # one lock object per name and per thread
    lock.acquire(wait)              # wait: None = forever, 0 = one try, else seconds; -> bool
    lock.release()
    impl.close()

Every lock is taken the way its library's documentation shows, with a 30 s lease where the
library has one (redlease: the watchdog, renewing a 30 s lease; the peers: a fixed 30 s lease).
The peers are installed into the build's virtualenv for the benchmark only (make bench); they
are not dependencies of redlease.
"""

import math
from importlib import metadata

LEASE = 30  # seconds


def version_of(dist):
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return None


class Redlease:
    name, label, dist = "redlease", "redlease (Python)", "redlease"

    def __init__(self, url, lease=None, **options):
        import redlease
        self.client = redlease.Client(url, **options)
        self.lease = lease

    def lock(self, name):
        lock, lease = self.client.lock(name), self.lease

        class L:
            @staticmethod
            def acquire(wait=None):
                return lock.acquire(timeout=-1 if wait is None else wait, lease=lease)

            release = staticmethod(lock.release)
        return L

    def close(self):
        self.client.close()


class RedleaseFixed(Redlease):
    name, label = "redlease-fixed", "redlease (Python), fixed lease"

    def __init__(self, url):
        super().__init__(url, lease=float(LEASE))


class RedleaseNoGrace(Redlease):
    """The default lock with the hand-over grace off (handover_grace=0): a worker that releases
    and re-acquires takes the lock straight back, as redlease did before the grace."""
    name, label = "redlease-no-grace", "redlease (Python), handover_grace=0"

    def __init__(self, url):
        super().__init__(url, handover_grace=0)


class RedisPy:
    """redis-py's Lock: SET NX PX to take it, a Lua script to release; a blocked acquire polls
    every `sleep` seconds (0.1 by default)."""
    name, label, dist = "redis-py", "redis-py Lock", "redis"
    poll_interval = 0.1  # redis-py's default `sleep`

    def __init__(self, url):
        import redis
        self.r = redis.Redis.from_url(url)

    def lock(self, name):
        lock = self.r.lock(name, timeout=LEASE)

        class L:
            @staticmethod
            def acquire(wait=None):
                if wait == 0:
                    return lock.acquire(blocking=False)
                return lock.acquire(blocking=True, blocking_timeout=wait)

            release = staticmethod(lock.release)
        return L

    def close(self):
        self.r.close()


class PythonRedisLock:
    """python-redis-lock: SET NX EX, and a waiter blocks in BLPOP on a signal list that the
    release pushes to. Its timeouts are whole seconds (at least 1)."""
    name, label, dist = "python-redis-lock", "python-redis-lock", "python-redis-lock"

    def __init__(self, url):
        import redis
        self.r = redis.Redis.from_url(url)

    def lock(self, name):
        import redis_lock
        lock = redis_lock.Lock(self.r, name, expire=LEASE)

        class L:
            @staticmethod
            def acquire(wait=None):
                if wait == 0:
                    return lock.acquire(blocking=False)
                if wait is None:
                    return lock.acquire(blocking=True)
                return lock.acquire(blocking=True, timeout=min(LEASE, max(1, math.ceil(wait))))

            release = staticmethod(lock.release)
        return L

    def close(self):
        self.r.close()


class Pottery:
    """pottery's Redlock on one master: SET NX PX through a thread pool per call; a blocked
    acquire retries after a random sleep of up to 0.2 s."""
    name, label, dist = "pottery", "pottery Redlock (one master)", "pottery"

    def __init__(self, url):
        import redis
        self.r = redis.Redis.from_url(url)

    def lock(self, name):
        from pottery import Redlock
        lock = Redlock(key=name, masters={self.r}, auto_release_time=LEASE)

        class L:
            @staticmethod
            def acquire(wait=None):
                if wait == 0:
                    return lock.acquire(blocking=False)
                return lock.acquire(blocking=True, timeout=-1 if wait is None else wait)

            release = staticmethod(lock.release)
        return L

    def close(self):
        self.r.close()


IMPLS = {c.name: c for c in (Redlease, RedleaseFixed, RedleaseNoGrace, RedisPy,
                             PythonRedisLock, Pottery)}
PEERS = ["redis-py", "python-redis-lock", "pottery"]


def available(name):
    """Whether the implementation's library can be imported here."""
    module = {"redlease": "redlease", "redlease-fixed": "redlease",
              "redlease-no-grace": "redlease", "redis-py": "redis",
              "python-redis-lock": "redis_lock", "pottery": "pottery"}[name]
    try:
        __import__(module)
        return True
    except ImportError:
        return False
