"""The command timeout is a deadline for a whole exchange, as in the C core: a server that
trickles a byte every 0.3 s cannot hold a request past it (a cosocket's read timeout starts
again at every byte)."""

import socket
import threading
import time

from conftest import REFUSED, RESET, fields

TRICKLE = r"""
    location /trickle { content_by_lua_block {
      local redlease = require "redlease"
      local c = assert(redlease.connect(ngx.unescape_uri(ngx.var.arg_url), { command_timeout = 1 }))
      ngx.update_time()
      local t0 = ngx.now()
      local g, err = c:lock("trickled"):acquire { timeout = 0 }
      ngx.update_time()
      ngx.say("took=", ngx.now() - t0)
      ngx.say("err=", tostring(err))
    } }
"""


class Trickler:
    """A loopback server that answers anything with '+' and then one byte every 0.3 s, never a
    whole reply, for at most 9 s per connection."""

    def __init__(self):
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self.stop = threading.Event()
        threading.Thread(target=self.serve, daemon=True).start()

    def serve(self):
        self.listener.settimeout(0.2)
        while not self.stop.is_set():
            try:
                conn, _ = self.listener.accept()
            except OSError:
                continue
            threading.Thread(target=self.trickle, args=(conn,), daemon=True).start()

    def trickle(self, conn):
        with conn:
            try:
                conn.recv(65536)
                conn.sendall(b"+")
                for _ in range(30):
                    if self.stop.wait(0.3):
                        return
                    conn.sendall(b"x")
            except OSError:
                pass

    def close(self):
        self.stop.set()
        self.listener.close()


def test_a_trickling_server_cannot_stretch_an_exchange(make_nginx):
    trickler = Trickler()
    try:
        # the timeout is a real problem: nginx logs it at [error]; so are the failures of the
        # timer that then takes the acquire back (takeback.lua) from a server that trickles,
        # then closes (reset) or is gone (refused)
        ng = make_nginx(locations=TRICKLE,
                        errors=[r"lua tcp socket read timed out", REFUSED, RESET])
        start = time.monotonic()
        status, body = ng.get(f"/trickle?url=redis://127.0.0.1:{trickler.port}")
        took = time.monotonic() - start
    finally:
        trickler.close()
    answer = fields(body)
    assert status == 200, body
    assert answer["err"].startswith("connection: no answer from"), answer
    assert "timeout" in answer["err"], answer
    assert took < 3.0, f"the 1 s command timeout let the request wait {took:.1f} s"
