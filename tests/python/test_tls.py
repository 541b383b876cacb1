"""rediss://: verified TLS (the system's CAs or the given ones, the server's name), mutual TLS,
and clear errors for what cannot be verified or is misconfigured. The certificates come from
tests/tls/make-certs; the server listens on a plain port too, for the raw client."""

import ctypes
import hashlib
import os
import socket
import subprocess
import threading
import time

import pytest

import redlease
from redlease.testing import RedisServer
from testkit import Raw

HERE = os.path.dirname(os.path.abspath(__file__))

pytestmark = pytest.mark.skipif(not redlease.tls_supported(),
                                reason="this build has no TLS (REDLEASE_TLS=0)")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def certs(tmp_path_factory):
    path = tmp_path_factory.mktemp("certs")
    subprocess.run([os.path.join(HERE, "..", "tls", "make-certs"), str(path)], check=True)
    return path


def tls_server(certs, cert="server", clients_need_certs=False):
    port = free_port()
    server = RedisServer(extra_args=[
        "--tls-port", str(port), "--tls-cert-file", str(certs / f"{cert}.crt"),
        "--tls-key-file", str(certs / f"{cert}.key"), "--tls-ca-cert-file", str(certs / "ca.crt"),
        "--tls-auth-clients", "yes" if clients_need_certs else "no"])
    server.start()
    server.tls_url = f"rediss://127.0.0.1:{port}/0"
    return server


@pytest.fixture
def server_for(certs):
    made = []

    def make(**kwargs):
        made.append(tls_server(certs, **kwargs))
        return made[-1]

    yield make
    for s in made:
        s.close()


def test_locks_waits_and_renewals_over_tls(certs, server_for, make_client):
    server = server_for()
    raw = Raw(server.url)
    a = make_client(server.tls_url, tls_ca_file=certs / "ca.crt", watchdog_timeout=0.6)
    b = make_client(server.tls_url, tls_ca_file=str(certs / "ca.crt"))
    got = []

    def wait():
        lock = b.lock("tls-job")
        got.append((lock.acquire(timeout=10), time.monotonic()))
        lock.release()

    with a.lock("tls-job"):
        waiter = threading.Thread(target=wait)
        waiter.start()
        time.sleep(1.5)  # more than two leases: renewed over TLS
        assert raw("PTTL", "tls-job") > 0
        released = time.monotonic()
    waiter.join()
    assert got[0][0] is True and got[0][1] - released < 1.0  # woken by pub/sub over TLS
    raw("CLIENT", "KILL", "TYPE", "normal", "SKIPME", "yes")
    with a.lock("tls-job"):  # a new handshake after the server dropped the connection
        assert raw("EXISTS", "tls-job") == 1
    raw.close()


def test_the_same_scripts_and_keys_as_in_plain_text(certs, server_for, make_client):
    """What a TLS client makes Redis run is what a plain one does: same script SHAs, same key
    and field layout."""
    server = server_for()
    raw = Raw(server.url)
    for url, options in ((server.url, {}), (server.tls_url, {"tls_ca_file": certs / "ca.crt"})):
        client = make_client(url, **options)
        with client.lock("layout"):
            field = raw("HKEYS", "layout")[0].decode()
            assert field == f"{client.id}:{redlease._core.current_context()}"
    scripts = raw("SCRIPT", "EXISTS", *[redlease_sha(name) for name in ("acquire", "release")])
    assert scripts == [1, 1]
    raw.close()


def redlease_sha(name):
    """The SHA1 of the core's own script text, as Redis computes it."""
    return hashlib.sha1(SCRIPT_TEXTS[name].encode()).hexdigest()


SCRIPT_TEXTS = {}


@pytest.fixture(autouse=True, scope="module")
def script_texts():
    """The core's script texts, through the C API (rl_script_name / rl_script_source)."""
    lib = ctypes.CDLL(redlease._core.__file__)
    lib.rl_script_name.restype = lib.rl_script_source.restype = ctypes.c_char_p
    i = 0
    while (name := lib.rl_script_name(i)) is not None:
        SCRIPT_TEXTS[name.decode()] = lib.rl_script_source(i).decode()
        i += 1


def test_an_unverifiable_certificate_is_refused_and_says_why(certs, server_for, make_client):
    rogue = server_for(cert="rogue")  # signed by a CA nobody trusts
    client = make_client(rogue.tls_url, tls_ca_file=certs / "ca.crt", connect_timeout=2)
    with pytest.raises(redlease.ConnectionError, match="verification failed"):
        client.lock("x").acquire(timeout=0)
    # The loud switch: encrypted, verified nothing.
    insecure = make_client(rogue.tls_url, tls_ca_file=certs / "ca.crt",
                           tls_insecure_skip_verify=True)
    assert insecure.lock("x").acquire(timeout=0)
    good = server_for()
    wrong_name = make_client(good.tls_url, tls_ca_file=certs / "ca.crt",
                             tls_server_name="not-this-server.example")
    with pytest.raises(redlease.ConnectionError, match="not-this-server"):
        wrong_name.lock("x").acquire(timeout=0)
    right_name = make_client(good.tls_url, tls_ca_file=certs / "ca.crt",
                             tls_server_name="localhost")
    assert right_name.lock("x").acquire(timeout=0)


def test_mutual_tls(certs, server_for, make_client):
    server = server_for(clients_need_certs=True)
    without = make_client(server.tls_url, tls_ca_file=certs / "ca.crt", connect_timeout=2)
    with pytest.raises(redlease.ConnectionError):
        without.lock("x").acquire(timeout=0)
    with_cert = make_client(server.tls_url, tls_ca_file=certs / "ca.crt",
                            tls_cert_file=certs / "client.crt", tls_key_file=certs / "client.key")
    assert with_cert.lock("x").acquire(timeout=0)


@pytest.mark.parametrize("options,words", [
    ({"tls_ca_file": "/nonexistent/ca.crt"}, "tls_ca_file: cannot read /nonexistent/ca.crt"),
    ({"tls_key_file": "KEY"}, "go together"),
    ({"tls_cert_file": "CERT"}, "go together"),
    ({"tls_cert_file": "CERT", "tls_key_file": "OTHER_KEY"}, "does not match"),
    ({"tls_ca_file": "NOT_A_CERT"}, "tls_ca_file"),
    ({"tls_ca_dir": "/nonexistent/ca-dir"}, "tls_ca_dir: cannot read /nonexistent/ca-dir"),
    ({"tls_ca_dir": "EMPTY_DIR"}, "tls_ca_dir .* holds no hashed CA certificate"),
    ({"tls_cert_file": "CERT", "tls_key_file": "ENCRYPTED_KEY"}, "tls_key_file .* encrypted"),
])
def test_bad_tls_options_are_refused_before_anything_is_sent(certs, tmp_path, options, words):
    files = {"KEY": certs / "client.key", "CERT": certs / "client.crt",
             "OTHER_KEY": certs / "server.key", "NOT_A_CERT": os.path.join(HERE, "conftest.py"),
             "ENCRYPTED_KEY": certs / "client-encrypted.key", "EMPTY_DIR": tmp_path}
    options = {k: files.get(v, v) for k, v in options.items()}
    with pytest.raises(ValueError, match=words):
        redlease.Client("rediss://127.0.0.1:1", **options)  # nothing listens there: never sent


def test_tls_options_need_a_rediss_url(certs):
    with pytest.raises(ValueError, match="rediss://"):
        redlease.Client("redis://127.0.0.1:1", tls_ca_file=certs / "ca.crt")
