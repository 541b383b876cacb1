"""Fixtures of the packaging suite (helpers in pkgkit.py)."""

import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from pkgkit import Venv, tls_redis  # noqa: E402


@pytest.fixture
def venv(tmp_path):
    """A fresh virtualenv of the given CPython (default: this one)."""
    return lambda python=sys.executable: Venv(python, tmp_path / "venv")


@pytest.fixture(scope="session")
def tls_server(tmp_path_factory):
    """One server with a plain port and a TLS one whose certificate (for 127.0.0.1) the test CA
    signed (tests/tls/make-certs); yields (plain URL, rediss:// URL, the certificates' folder)."""
    certs = tmp_path_factory.mktemp("certs")
    with tls_redis(certs) as (plain, tls):
        yield plain, tls, certs
