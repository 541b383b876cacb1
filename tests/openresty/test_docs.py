"""The configuration in docs/openresty.md runs as written: the suite takes the first ```nginx
block after "## nginx.conf", changes only the lines it marks `yours` (the port, the Redis URL, the
Lua path, the log and pid files) and starts nginx with it (a prefix of its own, in the
foreground); its handler answers 200, 409 while another owner holds the lock, 503 with Redis
down, and the error log (at the level the configuration sets) says nothing else."""

import contextlib
import os
import re
import shutil
import socket
import subprocess
import tempfile
import time

import pytest
from nginx import LUA_DIR, MODULES, RESTY_LUA, Nginx, free_port

from conftest import REFUSED
from testkit import wait_for

DOC = os.path.join(os.path.dirname(LUA_DIR), "docs", "openresty.md")


def doc_config() -> str:
    text = open(DOC).read()
    section = text[text.index("## nginx.conf\n"):]
    return re.search(r"```nginx\n(.*?)```", section, re.S).group(1)


def adapted(conf: str, port: int, redis_url: str, d: str) -> str:
    """The doc's configuration with only its `yours` lines changed (and Debian's module folder,
    where the suite runs on nginx packages unpacked elsewhere: nginx.py)."""
    lua_path = f"{LUA_DIR}/?.lua;{LUA_DIR}/?/init.lua;{RESTY_LUA}/?.lua;;"
    changes = [
        (r"^pid \S+;", f"pid {d}/nginx.pid;"),
        (r"^error_log \S+ ", f"error_log {d}/error.log "),
        (r"access_log \S+;", f"access_log {d}/access.log;"),
        (r'lua_package_path "[^"]*";', f'lua_package_path "{lua_path}";'),
        (r"redis://127\.0\.0\.1:6379/0", redis_url),
        (r"listen 8080;", f"listen 127.0.0.1:{port};"),
    ]
    marked = [line for line in conf.splitlines() if re.search(r"(#|--) yours$", line)]
    assert len(marked) == len(changes), marked  # every marked line, and only those, changes
    for pattern, value in changes:
        conf, n = re.subn(pattern, lambda _, v=value: v, conf, flags=re.M)
        assert n == 1, pattern
    return conf.replace("/usr/lib/nginx/modules", MODULES)


def doc_block(heading, index, replace):
    """The `index`th ```nginx block after `heading` (a line of the doc), with each (old, new) of
    `replace` done once exactly."""
    text = open(DOC).read()
    block = re.findall(r"```nginx\n(.*?)```", text[text.index(heading + "\n"):], re.S)[index]
    for old, new in replace:
        assert block.count(old) == 1, old
        block = block.replace(old, new)
    return block


def tls_doc_block(heading, url, real_url, certs):
    """A TLS deployment's block of the doc (doc_block), its URL, server name and certificate
    files made the test's."""
    return doc_block(heading, 1, [
        (url, real_url), ('"redis.internal"', '"localhost"'),
        ("/etc/nginx/redis-client.crt", f"{certs}/client.crt"),
        ("/etc/nginx/redis-client.key", f"{certs}/client.key"),
        ("/etc/nginx/redis-ca.crt", f"{certs}/ca.crt")])


@contextlib.contextmanager
def nginx_with_block(block):
    """nginx on the configuration of "## nginx.conf" (adapted) whose init_worker_by_lua_block is
    `block` (a deployment's block of the doc) -> (an Nginx whose HTTP helpers work, a function
    that answers the error log's lines at warn level and above). Stopped by pid."""
    d = tempfile.mkdtemp(prefix="redlease-docconf-")
    port = free_port()
    conf = adapted(doc_config(), port, "redis://unused", d)
    conf, n = re.subn(r"    init_worker_by_lua_block \{\n.*?\n    \}\n", lambda _: block, conf,
                      flags=re.S)
    assert n == 1
    if os.geteuid() == 0:  # the workers read the test's certificates, in root's private folder
        conf = "user root;\n" + conf
    with open(os.path.join(d, "nginx.conf"), "w") as f:
        f.write(conf)
    proc = subprocess.Popen(["nginx", "-p", d, "-c", "nginx.conf", "-e", f"{d}/error.log",
                             "-g", "daemon off;"], stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, env=Nginx.env())
    ng = Nginx.__new__(Nginx)  # its HTTP helpers only
    ng.port = port

    def said():
        log = open(os.path.join(d, "error.log"), errors="replace").read()
        return [line for line in log.splitlines()
                if re.search(r"\[(warn|error|alert|crit|emerg)\]", line)]

    def up():  # listening (a request would say more in the log than the test wants)
        assert proc.poll() is None, said()
        try:
            socket.create_connection(("127.0.0.1", port), timeout=5).close()
            return True
        except OSError:
            return False
    try:
        assert wait_for(up, 15), open(os.path.join(d, "error.log"), errors="replace").read()
        yield ng, said
    finally:
        proc.terminate()
        proc.wait(10)
        shutil.rmtree(d, ignore_errors=True)


@pytest.fixture
def doc_nginx(server):
    d = tempfile.mkdtemp(prefix="redlease-docconf-")
    port = free_port()
    with open(os.path.join(d, "nginx.conf"), "w") as f:
        f.write(adapted(doc_config(), port, server.url, d))
    # -g: in the foreground, so that the test stops it by pid; -e: nginx's own messages before it
    # reads the configuration
    proc = subprocess.Popen(["nginx", "-p", d, "-c", "nginx.conf", "-e", f"{d}/error.log",
                             "-g", "daemon off;"], stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, env=Nginx.env())
    ng = Nginx.__new__(Nginx)  # its HTTP helpers only
    ng.port, ng.dir, ng.process = port, d, proc
    try:
        def up():
            assert proc.poll() is None, proc.stderr.read().decode()
            try:
                return ng.get("/orders", timeout=5)[0] in (200, 409, 503)
            except OSError:
                return False
        assert wait_for(up, 15)
        yield ng
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        print(open(os.path.join(d, "error.log"), errors="replace").read()[-5000:])
        shutil.rmtree(d, ignore_errors=True)


def test_the_documented_configuration_runs_as_written(server, raw, doc_nginx):
    ng = doc_nginx
    assert ng.get("/orders") == (200, "done\n")
    # another owner holds the lock (Redisson's format) longer than the handler's 2 s wait
    raw("HSET", "orders:42", "someone-else:1", "1")
    raw("PEXPIRE", "orders:42", "10000")
    t0 = time.monotonic()
    status, _ = ng.get("/orders")
    assert status == 409 and 1.5 < time.monotonic() - t0 < 5
    raw("DEL", "orders:42")
    assert ng.get("/orders") == (200, "done\n")
    server.stop()
    assert ng.get("/orders")[0] == 503
    log = open(os.path.join(ng.dir, "error.log"), errors="replace").read()
    # at its `warn` level: nothing but nginx's lines for the Redis this test stopped
    said = [line for line in log.splitlines()
            if re.search(r"\[(warn|error|alert|crit|emerg)\]", line)
            and not re.search(REFUSED, line)]
    assert said == [], said
    assert re.search(REFUSED, log)
