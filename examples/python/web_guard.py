"""A Starlette endpoint guarded by redlease.asyncio: one rebuild per tenant at a time.

``POST /rebuild/{tenant}`` starts a long rebuild of that tenant's search index. However many
requests arrive, on however many server processes or hosts, one rebuild per tenant runs at a
time: a request that finds one running gets ``409 Conflict`` at once. The lock is held in
watchdog mode for exactly the rebuild, however long; a server that dies mid-rebuild frees it
within one lease (``watchdog_timeout``, 30 s by default).

    REDIS_URL=redis://127.0.0.1:6379/0 uvicorn web_guard:app --workers 4   # serve it
    python examples/python/web_guard.py    # the demo: a server and concurrent requests
    make demo-web                          # the same, against a throwaway redis-server

The demo needs the ``examples`` extra (Starlette, uvicorn, httpx); ``make demo-web`` installs
it.
"""

import asyncio
import os
import socket
import time
from contextlib import asynccontextmanager
from typing import AsyncIterator, Optional

import httpx
import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from redlease.asyncio import Client

REBUILD_SECONDS = float(os.environ.get("REBUILD_SECONDS", "2"))

# One client per process, made at import: it serves the event loop it is first used on, the
# server's. Nothing connects until the first request.
client = Client(os.environ.get("REDIS_URL", "redis://127.0.0.1:6379/0"))


@client.locked("web:rebuild-index:{tenant}")  # busy: skipped, the call returns None
async def rebuild_index(tenant: str) -> int:
    """The long job: the watchdog renews the lock for as long as it runs."""
    await asyncio.sleep(REBUILD_SECONDS)
    return 1000 + len(tenant)  # documents indexed


async def rebuild(request: Request) -> JSONResponse:
    tenant = request.path_params["tenant"]
    indexed: Optional[int] = await rebuild_index(tenant)
    if indexed is None:
        return JSONResponse({"tenant": tenant, "status": "already running"}, status_code=409)
    return JSONResponse({"tenant": tenant, "status": "rebuilt", "documents": indexed})


@asynccontextmanager
async def lifespan(app: Starlette) -> AsyncIterator[None]:
    yield
    await client.close()  # does not release holds: a rebuild still running expires by lease


app = Starlette(routes=[Route("/rebuild/{tenant}", rebuild, methods=["POST"])],
                lifespan=lifespan)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


async def demo() -> None:
    port = free_port()
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning"))
    serving = asyncio.ensure_future(server.serve())
    while not server.started:
        await asyncio.sleep(0.05)
    start = time.monotonic()
    async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}", timeout=30) as http:

        async def post(tenant: str, delay: float) -> None:
            await asyncio.sleep(delay)
            r = await http.post(f"/rebuild/{tenant}")
            print(f"{time.monotonic() - start:5.2f} s  POST /rebuild/{tenant:<5} -> "
                  f"{r.status_code} {r.json()['status']}", flush=True)

        # three requests for acme at once, one for globex beside them, and acme again after
        await asyncio.gather(post("acme", 0), post("acme", 0.2), post("acme", 0.4),
                             post("globex", 0.3), post("acme", REBUILD_SECONDS + 0.5))
    server.should_exit = True
    await serving


if __name__ == "__main__":
    if "REDIS_URL" not in os.environ:
        raise SystemExit("web_guard: set REDIS_URL (make demo-web starts a throwaway server)")
    print(f"web_guard: rebuilds of {REBUILD_SECONDS:g} s, Redis at {os.environ['REDIS_URL']}")
    asyncio.run(demo())
