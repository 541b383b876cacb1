"""make demo-openresty: the cache-stampede guard of report.lua on two nginx "hosts" (two
workers each) sharing one throwaway redis-server. Twelve clients ask both hosts for the same
missing report at once: one request computes it (1.5 s), the eleven others wait on the redlease
lock without blocking their workers and then read the cached value; a second wave is served
from the cache. Prints what each request saw and how many computations ran."""

import http.client
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor

from redlease.testing import RedisServer

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
PKG_ROOT = os.environ.get("REDLEASE_NGINX_ROOT", "/")  # as tests/openresty/nginx.py


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def get(port, path):
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    t0 = time.monotonic()
    conn.request("GET", path)
    r = conn.getresponse()
    body = r.read().decode().strip()
    conn.close()
    return r.status, r.getheader("X-Report"), body, time.monotonic() - t0


class Host:
    def __init__(self, name, redis_url):
        self.name, self.port = name, free_port()
        self.dir = tempfile.mkdtemp(prefix=f"redlease-demo-{name}-")
        for sub in ("conf", "logs", "tmp"):
            os.makedirs(os.path.join(self.dir, sub))
        with open(os.path.join(HERE, "nginx.conf")) as f:
            conf = f.read()
        for k, v in {"MODULES": os.path.join(PKG_ROOT, "usr/lib/nginx/modules"),
                     "RESTY_LUA": os.path.join(PKG_ROOT, "usr/share/lua/5.1"),
                     "USER": "user root;" if os.geteuid() == 0 else "",
                     "LUAROCKS": os.path.join(ROOT, "luarocks"), "EXAMPLE": HERE,
                     "REDIS": redis_url, "HOST": name, "PORT": str(self.port)}.items():
            conf = conf.replace(f"@{k}@", v)
        with open(os.path.join(self.dir, "conf", "nginx.conf"), "w") as f:
            f.write(conf)
        env = dict(os.environ)
        if PKG_ROOT != "/":
            env["LD_LIBRARY_PATH"] = os.path.join(PKG_ROOT, "usr/lib/x86_64-linux-gnu")
        self.process = subprocess.Popen(["nginx", "-p", self.dir, "-c", "conf/nginx.conf",
                                         "-e", "logs/error.log"], env=env)
        for _ in range(200):
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=0.2).close()
                return
            except OSError:
                time.sleep(0.05)
        raise RuntimeError(f"host {name} did not start")

    def stop(self):
        self.process.send_signal(signal.SIGQUIT)
        try:
            self.process.wait(10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        shutil.rmtree(self.dir, ignore_errors=True)


def wave(hosts, title):
    print(f"== {title}")
    with ThreadPoolExecutor(12) as pool:
        futures = [pool.submit(get, hosts[i % 2].port, "/report/2024-06-01") for i in range(12)]
        for i, f in enumerate(futures):
            status, how, body, took = f.result()
            host = hosts[i % 2].name + ":"
            print(f"  client {i + 1:2} -> host {host:6} {status} {how:28} {took:5.2f} s")
    return body


def main():
    with RedisServer() as redis:
        hosts = [Host("alpha", redis.url), Host("beta", redis.url)]
        try:
            body = wave(hosts, "12 clients ask two hosts for a report nobody has computed yet")
            print(f"  report: {body}")
            wave(hosts, "the same report again: served from the cache")
            out = subprocess.run(["redis-cli", "-p", str(redis.port), "GET", "report:computations"],
                                 capture_output=True, text=True).stdout.strip()
            print(f"== computations of the report in Redis: {out} "
                  "(one, for 24 requests on two hosts)")
            return 0 if out == "1" else 1
        finally:
            for h in hosts:
                h.stop()


if __name__ == "__main__":
    sys.exit(main())
