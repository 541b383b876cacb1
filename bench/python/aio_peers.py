"""The asyncio locks measured side by side (measure 8), behind one small interface:

    impl = AIO_IMPLS["redis-py-asyncio"](url)   # made inside the running loop
    lock = impl.lock("name")
    await lock.acquire(wait)    # wait: None = forever, 0 = one try, else seconds; -> bool
    await lock.release()
    await impl.close()

Each lock is taken as its library's documentation shows, with a 30 s lease where it has one
(redlease: the watchdog). The peers are installed for the benchmark only (make bench).
"""

import math

from peers import LEASE


class RedleaseAsyncio:
    name, label, dist = "redlease-asyncio", "redlease.asyncio", "redlease"
    poll_interval = 0.0

    def __init__(self, url):
        from redlease.asyncio import Client
        self.client = Client(url)

    def lock(self, name):
        lock = self.client.lock(name)

        class L:
            @staticmethod
            async def acquire(wait=None):
                return await lock.acquire(timeout=-1 if wait is None else wait)

            release = staticmethod(lock.release)
        return L

    async def close(self):
        await self.client.close()


class RedisPyAsyncio:
    """redis-py's asyncio Lock: SET NX PX; a blocked acquire sleeps 0.1 s between tries."""
    name, label, dist = "redis-py-asyncio", "redis-py asyncio Lock", "redis"
    poll_interval = 0.1

    def __init__(self, url, max_connections=None):
        import redis.asyncio as aredis
        if max_connections:
            pool = aredis.BlockingConnectionPool.from_url(url, max_connections=max_connections)
            self.r = aredis.Redis(connection_pool=pool)
        else:
            self.r = aredis.Redis.from_url(url)

    def lock(self, name):
        lock = self.r.lock(name, timeout=LEASE)

        class L:
            @staticmethod
            async def acquire(wait=None):
                if wait == 0:
                    return await lock.acquire(blocking=False)
                return await lock.acquire(blocking=True, blocking_timeout=wait)

            release = staticmethod(lock.release)
        return L

    async def close(self):
        await self.r.aclose() if hasattr(self.r, "aclose") else await self.r.close()


class Aioredlock:
    """aioredlock on one server: SET NX PX; a blocked lock() retries after a random delay of
    0.1 to 0.3 s, up to retry_count times (made large here, to wait as long as needed)."""
    name, label, dist = "aioredlock", "aioredlock", "aioredlock"
    poll_interval = 0.3

    def __init__(self, url):
        from aioredlock import Aioredlock as Manager
        self.url = url
        self.manager = Manager([url], internal_lock_timeout=LEASE)

    def lock(self, name):
        impl = self

        class L:
            held = None

            @staticmethod
            async def acquire(wait=None):
                from aioredlock import LockError
                impl.manager.retry_count = 1 if wait == 0 else (
                    10**9 if wait is None else max(1, math.ceil(wait / 0.2)))
                try:
                    L.held = await impl.manager.lock(name, lock_timeout=LEASE)
                    return True
                except LockError:
                    return False

            @staticmethod
            async def release():
                await impl.manager.unlock(L.held)
        return L

    async def close(self):
        await self.manager.destroy()


AIO_IMPLS = {c.name: c for c in (RedleaseAsyncio, RedisPyAsyncio, Aioredlock)}
AIO_PEERS = ["redis-py-asyncio", "aioredlock"]


def aio_available(name):
    module = {"redlease-asyncio": "redlease", "redis-py-asyncio": "redis.asyncio",
              "aioredlock": "aioredlock"}[name]
    try:
        __import__(module)
        return True
    except ImportError:
        return False
