"""rediss:// in nginx: the tls_* options honoured through the cosocket's TLS (verification
against lua_ssl_trusted_certificate, tls_server_name as SNI and verified name,
tls_insecure_skip_verify, a client certificate for mutual TLS) or refused with an error that
names the option (tls_ca_file and tls_ca_dir, which a cosocket cannot take per client; a
tls_* option on redis://; unreadable, mismatched or encrypted files), never ignored. Against a
real redis-server with TLS and certificates from tests/tls/make-certs."""

from urllib.parse import quote

import pytest
from nginx import free_port

from conftest import fields
from redlease.testing import RedisServer

TLS_LOCATION = """
    location /tls { content_by_lua_block { require("app").tls() } }
"""
VERIFY_ERROR = r"lua ssl certificate verify error"
NAME_ERROR = r"certificate does not match host"
# what a refused name answers: nginx's words, or the connection closed by nginx when the
# handshake completed asynchronously (tls.lua)
MISMATCH = r": (certificate host mismatch|the connection was closed during the handshake)"


@pytest.fixture
def tls_server(certs):
    made = []

    def make(cert="server", clients_need_certs=False):
        port = free_port()
        s = RedisServer(extra_args=[
            "--tls-port", str(port), "--tls-cert-file", str(certs / f"{cert}.crt"),
            "--tls-key-file", str(certs / f"{cert}.key"),
            "--tls-ca-cert-file", str(certs / "ca.crt"),
            "--tls-auth-clients", "yes" if clients_need_certs else "no"])
        s.start()
        s.tls_url = f"rediss://127.0.0.1:{port}"
        made.append(s)
        return s

    yield make
    for s in made:
        s.close()


def nginx_trusting(make_nginx, certs, errors=()):
    return make_nginx(locations=TLS_LOCATION, errors=errors,
                      http=f"  lua_ssl_trusted_certificate {certs}/ca.crt;\n")


def probe(ng, url, name="tls", **opts):
    q = "&".join(f"{k}={quote(str(v), safe='')}" for k, v in opts.items())
    return fields(ng.get(f"/tls?url={quote(url, safe='')}&name={name}&{q}")[1])


def test_verified_with_the_server_name(certs, tls_server, make_nginx):
    # the certificate names localhost (and the IP only as an IP address, which nginx's name
    # check does not read): connecting to 127.0.0.1 verifies with tls_server_name=localhost
    server = tls_server()
    ng = nginx_trusting(make_nginx, certs, errors=[NAME_ERROR])
    r = probe(ng, server.tls_url, server_name="localhost", wait=1)
    assert r == {"acquired": "true", "released": "true", "woken": "true"}, r
    r = probe(ng, server.tls_url, name="tls2", server_name="wrong.example")
    assert r["acquired"] == "false", r
    assert r["err"].startswith("connection: TLS handshake with 127.0.0.1:"), r


def test_a_certificate_from_another_ca_is_refused(certs, tls_server, make_nginx):
    server = tls_server(cert="rogue")
    ng = nginx_trusting(make_nginx, certs, errors=[VERIFY_ERROR])
    r = probe(ng, server.tls_url, server_name="localhost")
    assert r["acquired"] == "false", r
    assert r["err"].startswith("connection: TLS handshake with 127.0.0.1:"), r
    # accepted only when verification is switched off (tests only)
    r = probe(ng, server.tls_url, name="tls3", server_name="localhost", skip=1)
    assert r == {"acquired": "true", "released": "true"}, r


def test_mutual_tls(certs, tls_server, make_nginx):
    server = tls_server(clients_need_certs=True)
    # the server refuses the handshake without a client certificate: a real error nginx logs
    ng = nginx_trusting(make_nginx, certs, errors=[
        r"SSL_do_handshake\(\) failed .*alert handshake failure"])
    r = probe(ng, server.tls_url, server_name="localhost")
    assert r["acquired"] == "false", r  # no client certificate: the server hangs up
    assert r["err"].startswith("connection: "), r
    r = probe(ng, server.tls_url, name="mtls", server_name="localhost",
              cert=certs / "client.crt", key=certs / "client.key", wait=1)
    assert r == {"acquired": "true", "released": "true", "woken": "true"}, r


def test_options_that_cannot_be_honoured_are_refused(certs, server, tls_server, make_nginx):
    tls = tls_server()
    ng = nginx_trusting(make_nginx, certs)

    def refused(url, **opts):
        return probe(ng, url, **opts).get("connect_err", "(accepted)")

    err = refused(tls.tls_url, ca_file=certs / "ca.crt")
    assert err.startswith("bad argument 'tls_ca_file' to 'connect' (tls_ca_file: not available "
                          "in the OpenResty backend"), err
    assert "lua_ssl_trusted_certificate" in err
    err = refused(tls.tls_url, ca_dir=certs)
    assert err.startswith("bad argument 'tls_ca_dir' to 'connect' (tls_ca_dir: not available"), err
    # the C rock's words
    assert refused(server.url, ca_file="/nonexistent/ca") == (
        "bad argument 'options' to 'connect' (the tls_* options need a rediss:// URL)")
    assert refused(server.url, server_name="localhost").startswith("bad argument 'options'")
    assert refused(server.url, skip=1).startswith("bad argument 'options'")
    err = refused(tls.tls_url, cert="/nonexistent/client.crt", key=certs / "client.key")
    assert err == ("bad argument 'tls_cert_file' to 'connect' (tls_cert_file: cannot read "
                   "/nonexistent/client.crt: No such file or directory)"), err
    err = refused(tls.tls_url, cert=certs / "client.crt")
    assert err == ("bad argument 'tls_cert_file' to 'connect' "
                   "(tls_cert_file and tls_key_file go together)"), err
    err = refused(tls.tls_url, cert=certs / "client.key", key=certs / "client.key")
    assert err.startswith("bad argument 'tls_cert_file' to 'connect' (tls_cert_file "), err
    assert err.endswith(": not a PEM certificate)"), err
    err = refused(tls.tls_url, cert=certs / "client.crt", key=certs / "client-encrypted.key")
    assert err.startswith("bad argument 'tls_key_file' to 'connect' (tls_key_file "), err
    assert "an encrypted key" in err
