"""One client process of a safety run: `python worker.py CONFIG.json`.

Each thread is one owner looping acquire / hold / release on its lock until the run's stop time,
logging every call to the history (history.py). A thread's workload is one of:
  mutex     hold for a while, checking `lock.lost` before each step of work;
  fenced    a read-modify-write increment of a PostgreSQL row: the read claims the row with the
            lock's fencing token (fence < token), the write lands only if no newer token claimed
            it since (fence = token);
  fenced-write   the same with the token checked at the write only (fence < token): a stale
            holder's write that lands before the newer holder's can still lose an increment;
  unfenced  the same increment with no token.
`client` is "redlease" (the product) or "broken": a lock made of SET NX PX with no renewal and
no loss reports, the checker's proof that it can fail.
"""

import json
import os
import random
import socket
import sys
import threading
import time

from history import Writer

now = time.monotonic_ns


class BrokenLock:
    """SET NX PX and a blind DEL: what the checker must flag when its holders outlive the lease."""

    def __init__(self, url: str, name: str, owner: str, lease_ms: int) -> None:
        host, port = url.split("//", 1)[1].split("/", 1)[0].rsplit(":", 1)
        self.addr, self.name, self.owner, self.lease_ms = (host, int(port)), name, owner, lease_ms
        self.sock = None
        self.lost = False
        self.token = None

    def _call(self, *args: str) -> bytes:
        if self.sock is None:
            self.sock = socket.create_connection(self.addr, timeout=1)
        out = b"*%d\r\n" % len(args) + b"".join(b"$%d\r\n%s\r\n" % (len(a), a.encode())
                                                 for a in args)
        try:
            self.sock.sendall(out)
            return self.sock.recv(1024)
        except OSError:
            self.sock.close()
            self.sock = None
            raise

    def acquire(self, timeout: float) -> bool:
        deadline = time.monotonic() + timeout
        while True:
            try:
                if self._call("SET", self.name, self.owner, "NX", "PX",
                              str(self.lease_ms)).startswith(b"+OK"):
                    return True
            except OSError:
                pass
            if time.monotonic() >= deadline:
                return False
            time.sleep(0.005)

    def release(self) -> None:
        self._call("DEL", self.name)


class Owner(threading.Thread):
    def __init__(self, w: "Worker", index: int, workload: str, lock_name: str) -> None:
        super().__init__(daemon=True)
        self.w, self.workload, self.lock_name = w, workload, lock_name
        self.owner = f"t{index}"
        self.rng = random.Random(f"{w.cfg['seed']}:{w.proc}:{index}")
        self.db = None

    def on_state(self, name, state, why) -> None:
        t = now()
        name = name.decode() if isinstance(name, bytes) else name
        self.log("state", proc=self.proc, lock=name, t=t, state=state, why=str(why)[:200])

    def run(self) -> None:
        cfg = self.w.cfg
        if self.workload != "mutex":
            import psycopg
            self.db = psycopg.connect(cfg["pg"], autocommit=True)
        while now() < cfg["stop_at"]:
            self.cycle()
            self.pause(cfg["think_ms"])

    def pause(self, span) -> None:
        time.sleep(self.rng.uniform(*span) / 1000)

    def make_lock(self):
        if self.w.cfg["client"] == "broken":
            return BrokenLock(self.w.cfg["url"], self.lock_name,
                              f"{self.w.proc}:{self.owner}:{now()}",
                              int(self.w.cfg["lease"] * 1000))
        if self.workload in ("fenced", "fenced-write"):
            return self.w.client.fenced_lock(self.lock_name)
        return self.w.client.lock(self.lock_name)

    def cycle(self) -> None:
        cfg, log = self.w.cfg, self.w.log
        lock = self.make_lock()
        t0 = now()
        ok, error, detail = False, None, None
        try:
            ok = bool(lock.acquire(timeout=cfg["acquire_timeout"]))
        except Exception as e:  # an error is an unsuccessful acquire, logged by name
            error, detail = type(e).__name__, str(e)[:200]
        t1 = now()
        token = getattr(lock, "token", None) if ok else None
        log("acquire", proc=self.w.proc, owner=self.owner, lock=self.lock_name, start=t0, end=t1,
            ok=ok, token=token, error=error, detail=detail)
        if not ok:
            return
        if self.workload == "mutex":
            until = t1 + int(self.rng.uniform(*cfg["hold_ms"]) * 1e6)
            while now() < until and not lock.lost:
                time.sleep(0.005)
        elif not lock.lost:
            self.increment(token)
        self.release(lock)

    def increment(self, token) -> None:
        cfg, log, db = self.w.cfg, self.w.log, self.db
        row, mode = self.lock_name, self.workload
        t0 = now()
        accepted, read, stage = False, None, "read"
        try:
            if mode == "fenced":
                cur = db.execute("UPDATE counters SET fence = %s WHERE id = %s AND fence < %s"
                                 " RETURNING value", (token, row, token))
            else:
                cur = db.execute("SELECT value FROM counters WHERE id = %s", (row,))
            got = cur.fetchone()
            if got is not None:
                read, stage = got[0], "write"
                self.pause(cfg["hold_ms"])  # the work between read and write
                with db.transaction():
                    if mode == "fenced":
                        cur = db.execute("UPDATE counters SET value = %s WHERE id = %s AND "
                                         "fence = %s", (read + 1, row, token))
                    elif mode == "fenced-write":
                        cur = db.execute("UPDATE counters SET value = %s, fence = %s WHERE id = %s"
                                         " AND fence < %s", (read + 1, token, row, token))
                    else:
                        cur = db.execute("UPDATE counters SET value = %s WHERE id = %s",
                                         (read + 1, row))
                    accepted = cur.rowcount == 1
                    if accepted:
                        db.execute("INSERT INTO accepted (row_id, token, value) "
                                   "VALUES (%s, %s, %s)", (row, token, read + 1))
        except Exception as e:
            stage = f"error:{type(e).__name__}"
        log("write", proc=self.w.proc, owner=self.owner, lock=self.lock_name, row=row, start=t0,
            end=now(), accepted=accepted, mode=mode, token=token, read=read, stage=stage)

    def release(self, lock) -> None:
        import redlease
        t2 = now()
        ok, reason, error, detail = False, None, None, None
        try:
            lock.release()
            ok = True
        except redlease.LockLostError as e:
            reason = e.reason
        except Exception as e:
            error, detail = type(e).__name__, str(e)[:200]
        self.w.log("release", proc=self.w.proc, owner=self.owner, lock=self.lock_name, start=t2,
                   end=now(), ok=ok, reason=reason, error=error, detail=detail)


class Worker:
    def __init__(self, cfg: dict) -> None:
        self.cfg, self.proc = cfg, cfg["proc"]
        self.log = Writer(cfg["out"])
        self.client = None
        client_id = self.proc
        if cfg["client"] == "redlease":
            import redlease
            self.client = redlease.Client(cfg["url"], on_lost=self.on_lost,
                                          on_state=self.on_state, **cfg["options"])
            client_id = self.client.id
        self.log("hello", proc=self.proc, client_id=client_id, pid=os.getpid(), lang="python")

    def on_lost(self, name, reason) -> None:
        t = now()
        name = name.decode() if isinstance(name, bytes) else name
        self.log("lost", proc=self.proc, lock=name, t=t, reason=reason)

    def on_state(self, name, state, why) -> None:
        t = now()
        name = name.decode() if isinstance(name, bytes) else name
        self.log("state", proc=self.proc, lock=name, t=t, state=state, why=str(why)[:200])

    def run(self) -> None:
        while now() < self.cfg["start_at"]:
            time.sleep(0.01)
        owners = [Owner(self, i, wl, name) for i, (wl, name) in enumerate(self.cfg["owners"])]
        for o in owners:
            o.start()
        for o in owners:
            o.join()
        if self.client is not None:
            self.client.close()
        self.log.close()


if __name__ == "__main__":
    with open(sys.argv[1]) as f:
        Worker(json.load(f)).run()
