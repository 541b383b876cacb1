"""A throwaway nginx with the Lua module for the openresty suite: writes conf/nginx.conf into a
temp dir (a free loopback port, the worktree's Lua modules first on lua_package_path, the error
log in the dir), runs `nginx -p DIR -c conf/nginx.conf` in the foreground, and stops it by pid.
``lua_dir`` is one more folder of Lua modules; ``http_block`` and ``server_block`` are nginx
config text added to the http {} and server {} blocks; ``{redis}`` in them is replaced by the
Redis URL. nginx's defaults are kept (lua_socket_log_errors on): the fixture (conftest.py)
fails a test whose error log has an [error]/[alert]/[crit]/[emerg] line it did not expect."""

import http.client
import os
import re
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from typing import Optional, Tuple

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
LUA_DIR = os.path.join(ROOT, "luarocks")
TEST_DIR = os.path.dirname(os.path.abspath(__file__))
# $REDLEASE_NGINX_ROOT: where Debian's nginx Lua packages are (default /); another root is one
# made with `dpkg -x` of libnginx-mod-http-lua, libnginx-mod-http-ndk, libluajit2-5.1-2 and
# lua-resty-core/-lrucache, for a machine where a luajit package displaced the installed module.
PKG_ROOT = os.environ.get("REDLEASE_NGINX_ROOT", "/")
MODULES = os.path.join(PKG_ROOT, "usr/lib/nginx/modules")
RESTY_LUA = os.path.join(PKG_ROOT, "usr/share/lua/5.1")

CONF = """\
load_module {modules}/ndk_http_module.so;
load_module {modules}/ngx_http_lua_module.so;
daemon off;
master_process on;
worker_processes {workers};
{user}
error_log logs/error.log {log_level};
pid logs/nginx.pid;
{main_block}
events {{ worker_connections 4096; }}
http {{
  access_log off;
  client_body_temp_path tmp/body;
  proxy_temp_path tmp/proxy;
  fastcgi_temp_path tmp/fastcgi;
  uwsgi_temp_path tmp/uwsgi;
  scgi_temp_path tmp/scgi;
  lua_package_path "{lua_path}";
{http_block}
  server {{
    listen 127.0.0.1:{port} backlog=4096;
    location = /ping {{ content_by_lua_block {{ ngx.say("pong") }} }}
{server_block}
  }}
}}
"""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Nginx:
    def __init__(self, redis_url: str, http_block: str = "", server_block: str = "",
                 workers: int = 1, main_block: str = "", log_level: str = "info",
                 lua_dir: str = "") -> None:
        self.redis_url = redis_url
        self.dir = tempfile.mkdtemp(prefix="redlease-nginx-")
        for sub in ("conf", "logs", "tmp"):
            os.makedirs(os.path.join(self.dir, sub))
        self.port = free_port()
        self.workers = workers
        self.blocks = (http_block, server_block, main_block)
        self.log_level = log_level
        self.extra_lua = f"{lua_dir}/?.lua;" if lua_dir else ""
        self.process: Optional[subprocess.Popen] = None
        self.write_conf()

    def write_conf(self, http_block: Optional[str] = None,
                   server_block: Optional[str] = None) -> None:
        h, s, m = self.blocks
        h = h if http_block is None else http_block
        s = s if server_block is None else server_block
        self.blocks = (h, s, m)
        lua_path = (f"{self.extra_lua}{LUA_DIR}/?.lua;{LUA_DIR}/?/init.lua;{TEST_DIR}/?.lua;"
                    f"{RESTY_LUA}/?.lua;;")
        text = CONF.format(modules=MODULES, workers=self.workers, lua_path=lua_path,
                           port=self.port, user="user root;" if os.geteuid() == 0 else "",
                           http_block=h.replace("{redis}", self.redis_url),
                           server_block=s.replace("{redis}", self.redis_url),
                           main_block=m, log_level=self.log_level)
        with open(os.path.join(self.dir, "conf", "nginx.conf"), "w") as f:
            f.write(text)

    @property
    def log_path(self) -> str:
        return os.path.join(self.dir, "logs", "error.log")

    def log(self) -> str:
        try:
            with open(self.log_path, errors="replace") as f:
                return f.read()
        except FileNotFoundError:
            return ""

    def start(self) -> "Nginx":
        self.process = subprocess.Popen(
            ["nginx", "-p", self.dir, "-c", "conf/nginx.conf", "-e", "logs/error.log"],
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=self.env())
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                err = self.process.stderr.read().decode(errors="replace")
                raise RuntimeError(f"nginx exited: {err}\n{self.log()}")
            try:
                if self.get("/ping", timeout=1)[0] == 200:
                    return self
            except OSError:
                pass
            time.sleep(0.05)
        raise RuntimeError("nginx did not answer /ping:\n" + self.log())

    @staticmethod
    def env():
        env = dict(os.environ)
        if PKG_ROOT != "/":
            env["LD_LIBRARY_PATH"] = os.path.join(PKG_ROOT, "usr/lib/x86_64-linux-gnu")
        return env

    def worker_pids(self):
        out = subprocess.run(["pgrep", "-P", str(self.process.pid)], capture_output=True, text=True)
        return sorted(int(p) for p in out.stdout.split())

    def reload(self) -> None:
        self.process.send_signal(signal.SIGHUP)

    def quit(self, timeout: float) -> bool:
        """Graceful shutdown (`nginx -s quit`): True when nginx exited within `timeout` s."""
        self.process.send_signal(signal.SIGQUIT)
        try:
            self.process.wait(timeout)
            return True
        except subprocess.TimeoutExpired:
            return False

    def stop(self) -> None:
        if self.process is None:
            return
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)  # fast shutdown, then be sure
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self.process = None

    def close(self) -> None:
        self.stop()
        shutil.rmtree(self.dir, ignore_errors=True)

    def get(self, path: str, timeout: float = 30) -> Tuple[int, str]:
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=timeout)
        try:
            conn.request("GET", path)
            r = conn.getresponse()
            return r.status, r.read().decode(errors="replace")
        finally:
            conn.close()

    def errors(self, since: int = 0):
        """[error]/[alert]/[crit]/[emerg] lines of the log (from byte offset `since`)."""
        return [line for line in self.log()[since:].splitlines()
                if re.search(r"\[(error|alert|crit|emerg)\]", line)]
