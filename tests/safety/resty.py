"""An OpenResty client node of a safety run: an nginx of its own (resty_client.lua, the rock's
OpenResty backend) on an address of the run's own, and the driver that sends its requests.

nginx runs with `master_process off`: the process the run starts is the one that serves
requests (an nginx worker's cycle), so the nemesis's SIGSTOP, a kill, and the parent-death
signal that removes every child of a killed run reach it; a master's workers would outlive a
killed master. It runs as `nobody` with the client's group id: not root, so nginx keeps that
group for itself (as root it would switch to its `user`), and the group labels its connections
to Redis like every client's (net.py). Each owner is a thread of the run that sends
GET /cycle?k=K, one cycle a request, until the case's end: requests drive the holds.
"""

import http.client
import os
import signal
import threading
import time
from typing import List

import procs

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", ".."))
NOBODY = 65534
MODULES = "/usr/lib/nginx/modules"
RESTY_LUA = "/usr/share/lua/5.1"  # Debian's lua-resty-core and lua-resty-lrucache

CONF = """\
load_module {modules}/ndk_http_module.so;
load_module {modules}/ngx_http_lua_module.so;
daemon off;
master_process off;
error_log {dir}/error.log warn;
pid {dir}/nginx.pid;
events {{ worker_connections 1024; }}
http {{
  access_log off;
  client_body_temp_path {dir}/body;
  proxy_temp_path {dir}/proxy;
  fastcgi_temp_path {dir}/fastcgi;
  uwsgi_temp_path {dir}/uwsgi;
  scgi_temp_path {dir}/scgi;
  lua_package_path "{here}/?.lua;{root}/luarocks/?.lua;{root}/luarocks/?/init.lua;{resty}/?.lua;;";
  init_worker_by_lua_block {{ require("resty_client").init("{config}") }}
  server {{
    listen {address}:{port};
    location = /cycle {{ content_by_lua_block {{ require("resty_client").cycle() }} }}
  }}
}}
"""


def free_port(address: str) -> int:
    import socket
    with socket.socket() as s:
        s.bind((address, 0))
        return s.getsockname()[1]


class Node:
    def __init__(self, run: procs.Run, p: str, cfg: dict, gid: int, address: str,
                 out: str, to_lua) -> None:
        self.cfg, self.address, self.port = cfg, address, free_port(address)
        self.dir = os.path.join(run.dir, p)
        os.makedirs(self.dir)
        os.chown(self.dir, NOBODY, gid)
        with open(cfg["out"], "a"):
            pass
        os.chown(cfg["out"], NOBODY, gid)  # the worker appends its events there
        config = os.path.join(self.dir, "config.lua")
        with open(config, "w") as f:
            f.write("return " + to_lua(cfg) + "\n")
        conf = os.path.join(self.dir, "nginx.conf")
        with open(conf, "w") as f:
            f.write(CONF.format(modules=MODULES, dir=self.dir, here=HERE, root=ROOT,
                                resty=RESTY_LUA, config=config, address=address,
                                port=self.port))
        self.process = run.spawn(["nginx", "-p", self.dir, "-c", conf, "-e",
                                  os.path.join(self.dir, "error.log")],
                                 uid=NOBODY, gid=gid,
                                 stderr=open(os.path.join(out, f"{p}.stderr"), "w"))
        # its owners: the mutex entries (no PostgreSQL from inside nginx, resty_client.lua)
        self.owners = [k for k, (wl, _) in enumerate(cfg["owners"]) if wl == "mutex"]
        self.threads: List[threading.Thread] = []

    def drive(self) -> None:
        for k in self.owners:
            t = threading.Thread(target=self._owner, args=(k,), daemon=True)
            t.start()
            self.threads.append(t)

    def _owner(self, k: int) -> None:
        start_at, stop_at = self.cfg["start_at"] / 1e9, self.cfg["stop_at"] / 1e9
        while time.monotonic() < start_at:
            time.sleep(0.01)
        # a request waits at most its acquire, its hold, and a pause of the node
        timeout = self.cfg["acquire_timeout"] + 30
        conn = None
        while time.monotonic() < stop_at:
            try:
                if conn is None:
                    conn = http.client.HTTPConnection(self.address, self.port, timeout=timeout)
                conn.request("GET", f"/cycle?k={k}")
                conn.getresponse().read()
            except (OSError, http.client.HTTPException):
                if conn is not None:
                    conn.close()
                conn = None
                time.sleep(0.05)

    def finish(self, deadline: float) -> None:
        """After the case's end: its drivers done (each ends its last cycle), nginx asked to
        quit (gracefully: a request still running ends first)."""
        for t in self.threads:
            t.join(max(0.1, deadline - time.monotonic()))
        if self.process.poll() is None:
            try:
                self.process.send_signal(signal.SIGCONT)
                self.process.send_signal(signal.SIGQUIT)
            except ProcessLookupError:
                pass

