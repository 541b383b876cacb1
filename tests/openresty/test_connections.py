"""Connections: ACL user and password with SELECT (applied once per new pooled connection), a
refused password, a unix socket, and rediss:// with certificate verification (a CA of the
test's own; a connection whose certificate another CA signed is refused)."""

import os
import subprocess
import tempfile

import pytest
from nginx import free_port

from conftest import fields
from redlease.testing import RedisServer
from testkit import wait_for


def test_acl_user_and_database(server, raw, make_nginx):
    raw("ACL", "SETUSER", "app", "on", ">s3cret", "~*", "&*", "+@all")
    base = server.url.rsplit("/", 1)[0]
    ng = make_nginx(url=base.replace("redis://", "redis://app:s3cret@") + "/3")
    holder = {}
    import threading
    t = threading.Thread(target=lambda: holder.update(fields(ng.get("/hold?name=acl&secs=1")[1])))
    t.start()
    assert wait_for(lambda: raw("SELECT", "3") == "OK" and raw("EXISTS", "acl") == 1, 5)
    raw("SELECT", "0")
    assert raw("EXISTS", "acl") == 0
    t.join(10)
    assert holder["released"] == "true", holder
    for _ in range(3):  # pooled connections: AUTH and SELECT only on new ones
        assert fields(ng.get("/cycle?name=acl")[1])["ok"] == "true"
    clients = raw("CLIENT", "LIST").decode()
    assert "user=app" in clients and "db=3" in clients


def test_wrong_password_is_a_connection_error(server, raw, make_nginx):
    raw("ACL", "SETUSER", "app", "on", ">s3cret", "~*", "&*", "+@all")
    ng = make_nginx(url=server.url.replace("redis://", "redis://app:wrong@"))
    answer = fields(ng.get("/cycle?name=nope")[1])
    assert answer["ok"] == "false"
    assert answer["err"].startswith("connection: AUTH refused: WRONGPASS"), answer


def test_unix_socket(make_nginx):
    d = tempfile.mkdtemp(prefix="redlease-sock-")
    path = os.path.join(d, "redis.sock")
    with RedisServer(extra_args=["--unixsocket", path, "--unixsocketperm", "777"]):
        ng = make_nginx(url=f"unix://{path}?db=2")
        assert fields(ng.get("/cycle?name=sock")[1])["ok"] == "true"
        assert fields(ng.get("/hold?name=sock&kind=fenced")[1])["token"] == "1"


def openssl(*args, cwd):
    subprocess.run(["openssl", *args], cwd=cwd, check=True, capture_output=True)


def make_ca(d, name):
    openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2", "-subj", f"/CN={name}",
            "-keyout", f"{name}.key", "-out", f"{name}.pem", cwd=d)


@pytest.fixture(scope="module")
def certs():
    d = tempfile.mkdtemp(prefix="redlease-tls-")
    make_ca(d, "ca")
    make_ca(d, "other-ca")
    openssl("req", "-newkey", "rsa:2048", "-nodes", "-subj", "/CN=127.0.0.1", "-keyout",
            "server.key", "-out", "server.csr", cwd=d)
    with open(os.path.join(d, "san.ext"), "w") as f:
        f.write("subjectAltName=DNS:127.0.0.1,IP:127.0.0.1\n")
    openssl("x509", "-req", "-in", "server.csr", "-CA", "ca.pem", "-CAkey", "ca.key",
            "-CAcreateserial", "-days", "2", "-extfile", "san.ext", "-out", "server.pem", cwd=d)
    return d


@pytest.mark.parametrize("trusted, works", [("ca.pem", True), ("other-ca.pem", False)])
def test_tls_with_verification(certs, make_nginx, trusted, works):
    tls_port = free_port()
    args = ["--tls-port", str(tls_port), "--tls-cert-file", f"{certs}/server.pem",
            "--tls-key-file", f"{certs}/server.key", "--tls-ca-cert-file", f"{certs}/ca.pem",
            "--tls-auth-clients", "no"]
    with RedisServer(extra_args=args):
        # the refused certificate is a real error, which nginx logs
        ng = make_nginx(url=f"rediss://127.0.0.1:{tls_port}", errors=[] if works else [
                            r"lua ssl certificate verify error: \(19: self-signed certificate"],
                        http=f"  lua_ssl_trusted_certificate {certs}/{trusted};\n"
                             "  lua_ssl_verify_depth 2;\n")
        answer = fields(ng.get("/hold?name=tls&timeout=1")[1])
        if works:
            assert answer["acquired"] == "true" and answer["released"] == "true", answer
        else:
            assert answer["acquired"] == "false", answer
            assert answer["err"].startswith("connection: TLS handshake with 127.0.0.1:"), answer
