"""rediss+sentinel:// in nginx: TLS to the sentinels (the questions and the watchers'
+switch-master subscriptions) and to the master they name, with the tls_* options of rediss://
(test_tls.py): a verified lock and a woken wait, a planned failover followed over TLS, a
certificate from another CA refused, mutual TLS (every server and sentinel requires a client
certificate) working with one and refused without. A deployment of tests/sentinel's kit with TLS
ports and certificates from tests/tls/make-certs."""

import os
import re
import sys
import threading
import time

import pytest
from test_docs import nginx_with_block, tls_doc_block
from test_tls import MISMATCH, NAME_ERROR, TLS_LOCATION, VERIFY_ERROR, probe

from conftest import fields
from testkit import Raw, wait_for

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                                "sentinel"))
from deployment import Deployment, TlsCerts  # noqa: E402

CHANNEL = "redisson_lock__channel:{%s}"
# the server hangs up on a client without a certificate (TLS 1.2: during the handshake)
NO_CLIENT_CERT = r"SSL_do_handshake\(\) failed .*alert handshake failure"
ASKED = 'connection: no sentinel could be asked for master "mymaster" (TLS handshake with sentinel '


@pytest.fixture(scope="module")
def deployment(certs):
    d = Deployment(tls=TlsCerts(certs, clients_need_certs=True))
    yield d
    d.close()


def trusting(ca):
    return f"  lua_ssl_trusted_certificate {ca};\n"


def in_background(ng, path, out):
    t = threading.Thread(target=lambda: out.update(fields(ng.get(path, 60)[1])))
    t.start()
    return t


def watchers_over_tls(deployment):
    """Per sentinel, its subscribed clients that came in on its TLS port (the workers'
    watchers: one per sentinel in each worker)."""
    found = []
    for s in deployment.sentinels:
        found.append(0)
        for line in s("CLIENT", "LIST").decode().splitlines():
            f = dict(kv.split("=", 1) for kv in line.split() if "=" in kv)
            found[-1] += f.get("sub") != "0" and f["laddr"].endswith(f":{s.tls_port}")
    return found


def test_locks_and_a_planned_failover_over_tls(deployment, certs, make_nginx):
    d = deployment
    mine = dict(server_name="localhost", cert=certs / "client.crt", key=certs / "client.key")
    options = (f'tls_server_name = "localhost", tls_cert_file = "{certs}/client.crt", '
               f'tls_key_file = "{certs}/client.key"')
    ng = make_nginx(url=d.url, watchdog=3, options=options, locations=TLS_LOCATION,
                    http=trusting(certs / "ca.crt"))
    # a client of its own: acquired and released, a wait woken through its TLS subscriber
    r = probe(ng, d.url, name="stls:probe", wait=1, **mine)
    assert r == {"acquired": "true", "released": "true", "woken": "true"}, r
    # the worker's client across a planned failover: the waiter resubscribes on the new master
    name = "stls:planned"
    holder, waiter = {}, {}
    threads = [in_background(ng, f"/hold?name={name}&secs=3", holder)]
    assert wait_for(lambda: d.on_master("EXISTS", name) == 1, 5)
    threads.append(in_background(ng, f"/hold?name={name}&timeout=20", waiter))
    assert wait_for(lambda: d.on_master("PUBSUB", "NUMSUB", CHANNEL % name)[1] == 1, 5)
    # +switch-master, over TLS, on every sentinel
    assert wait_for(lambda: all(n >= 1 for n in watchers_over_tls(d)), 5), watchers_over_tls(d)
    before = d.master_port()
    d.failover()
    assert d.master_port() != before
    assert wait_for(lambda: d.on_master("PUBSUB", "NUMSUB", CHANNEL % name)[1] == 1, 5)
    for t in threads:
        t.join(30)
    assert holder["acquired"] == "true" and holder["lost"] == "false", holder
    assert holder["released"] == "true", holder
    assert waiter["acquired"] == "true", waiter
    assert 0 <= float(waiter["got"]) - float(holder["left"]) < 0.5, (holder, waiter)
    assert "redlease: the sentinels name a new master" in ng.log()
    assert fields(ng.get(f"/cycle?name={name}")[1])["ok"] == "true"
    # docs/openresty.md's rediss+sentinel:// block, as pasted (the URL, name and files ours)
    block = tls_doc_block(
        "## Sentinel",
        "rediss+sentinel://10.0.0.1:26379,10.0.0.2:26379,10.0.0.3:26379/mymaster/0", d.url, certs)
    with nginx_with_block(block) as (doc, said):
        assert doc.get("/orders") == (200, "done\n")
        assert said() == []


def test_refused_certificates_and_mutual_tls(deployment, certs, make_nginx):
    d = deployment
    ng = make_nginx(locations=TLS_LOCATION, http=trusting(certs / "ca.crt"),
                    errors=[NO_CLIENT_CERT, NAME_ERROR])
    # no client certificate: the sentinels hang up (then the master would too)
    t0 = time.monotonic()
    r = probe(ng, d.url, name="stls:nocert", server_name="localhost")
    assert r["acquired"] == "false" and r["err"].startswith(ASKED), r
    # each sentinel's certificate is checked against its host (127.0.0.1 is no DNS name of it)
    r = probe(ng, d.url, name="stls:noname", cert=certs / "client.crt", key=certs / "client.key")
    assert r["acquired"] == "false" and r["err"].startswith(ASKED), r
    assert re.search(MISMATCH, r["err"]), r
    assert 'certificate does not match host "127.0.0.1"' in ng.log()
    # the master's certificate is checked too: it presents one of the same CA for another name
    mine = dict(server_name="localhost", cert=certs / "client.crt", key=certs / "client.key")
    master = Raw(d.master_server().url)
    try:
        assert master("CONFIG", "SET", "tls-cert-file", f"{certs}/wild.crt",
                      "tls-key-file", f"{certs}/wild.key") == "OK"
        r = probe(ng, d.url, name="stls:wild", **mine)
    finally:
        assert master("CONFIG", "SET", "tls-cert-file", f"{certs}/server.crt",
                      "tls-key-file", f"{certs}/server.key") == "OK"
        master.close()
    assert r["acquired"] == "false" and r["err"].startswith(
        f"connection: TLS handshake with 127.0.0.1:{d.master_port()}: "), r
    # a server certificate signed by a CA nginx does not trust
    other = make_nginx(locations=TLS_LOCATION, http=trusting(certs / "other-ca.crt"),
                       errors=[VERIFY_ERROR])
    r = probe(other, d.url, name="stls:rogue", **mine)
    assert r["acquired"] == "false" and r["err"].startswith(ASKED), r
    assert time.monotonic() - t0 < 10  # refused at once, nothing waits for a timeout
    r = probe(other, d.url, name="stls:skip", skip=1, **mine)  # (tests only)
    assert r == {"acquired": "true", "released": "true"}, r
    # the tls_* options need TLS: on redis+sentinel:// they are refused, as by the C rock
    plain = d.url.replace("rediss+sentinel://", "redis+sentinel://")
    assert probe(other, plain, **mine)["connect_err"] == (
        "bad argument 'options' to 'connect' (the tls_* options need a rediss:// URL)")
