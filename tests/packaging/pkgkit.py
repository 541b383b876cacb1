"""Helpers of the packaging suite: the repository, its version (RL_VERSION), the CPythons that
make wheel built for (REDLEASE_PYTHONS), and fresh virtualenvs that run smoke_lock.py."""

import contextlib
import json
import os
import re
import socket
import subprocess
import sys

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
SMOKE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "smoke_lock.py")


def rl_version():
    with open(os.path.join(ROOT, "include", "redlease.h")) as f:
        return re.search(r'#define RL_VERSION "([^"]+)"', f.read()).group(1)


def pythons():
    listed = os.environ.get("REDLEASE_PYTHONS", "").split()
    return listed or [sys.executable]


def python_tag(python):
    out = subprocess.run([python, "-c", "import sys; print('cp%d%d' % sys.version_info[:2])"],
                         check=True, capture_output=True, text=True).stdout
    return out.strip()


def clean_env(**extra):
    """The environment of a user's shell: no library path, no build or pip settings of ours."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("LD_LIBRARY_PATH", "PYTHONPATH", "VIRTUAL_ENV")
           and not k.startswith("REDLEASE_")}
    env.update(extra)
    return env


def run(args, **kwargs):
    kwargs.setdefault("env", clean_env())
    return subprocess.run(args, capture_output=True, text=True, **kwargs)


class Venv:
    def __init__(self, python, path):
        self.dir = str(path)
        result = run([python, "-m", "venv", self.dir])
        assert result.returncode == 0, result.stderr
        self.python = os.path.join(self.dir, "bin", "python")

    def pip_install(self, *args, env=None):
        return run([self.python, "-m", "pip", "install", "--disable-pip-version-check", *args],
                   env=env or clean_env())

    def smoke(self, url, *ca_file):
        """smoke_lock.py's report, run outside the source tree (the installed package)."""
        result = run([self.python, SMOKE, url, *ca_file], cwd=self.dir)
        assert result.returncode == 0, result.stdout + result.stderr
        return json.loads(result.stdout)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextlib.contextmanager
def tls_redis(certs):
    """A redis-server with a plain port and a TLS one whose certificate (for 127.0.0.1) the test
    CA signed, made into the folder `certs` (tests/tls/make-certs); yields (plain URL, rediss://
    URL). For the wheels' TLS checks (tests/packaging, tests/xwheels)."""
    from redlease.testing import RedisServer  # the suite's own redlease, not a wheel's

    subprocess.run([os.path.join(ROOT, "tests", "tls", "make-certs"), str(certs)], check=True)
    port = free_port()
    server = RedisServer(extra_args=[
        "--tls-port", str(port), "--tls-cert-file", os.path.join(certs, "server.crt"),
        "--tls-key-file", os.path.join(certs, "server.key"),
        "--tls-ca-cert-file", os.path.join(certs, "ca.crt"), "--tls-auth-clients", "no"])
    server.start()
    try:
        yield server.url, f"rediss://127.0.0.1:{port}/0"
    finally:
        server.close()
