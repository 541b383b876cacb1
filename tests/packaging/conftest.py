"""Fixtures of the packaging suite (helpers in pkgkit.py)."""

import os
import socket
import subprocess
import sys

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from pkgkit import ROOT, Venv  # noqa: E402

from redlease.testing import RedisServer  # noqa: E402


@pytest.fixture
def venv(tmp_path):
    """A fresh virtualenv of the given CPython (default: this one)."""
    return lambda python=sys.executable: Venv(python, tmp_path / "venv")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="session")
def tls_server(tmp_path_factory):
    """One server with a plain port and a TLS one whose certificate (for 127.0.0.1) the test CA
    signed (tests/tls/make-certs); yields (plain URL, rediss:// URL, the certificates' folder)."""
    certs = tmp_path_factory.mktemp("certs")
    subprocess.run([os.path.join(ROOT, "tests", "tls", "make-certs"), str(certs)], check=True)
    port = free_port()
    server = RedisServer(extra_args=[
        "--tls-port", str(port), "--tls-cert-file", str(certs / "server.crt"),
        "--tls-key-file", str(certs / "server.key"), "--tls-ca-cert-file", str(certs / "ca.crt"),
        "--tls-auth-clients", "no"])
    server.start()
    yield server.url, f"rediss://127.0.0.1:{port}/0", certs
    server.close()
