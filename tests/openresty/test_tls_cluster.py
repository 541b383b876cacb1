"""rediss+cluster:// in nginx: TLS to every node of a Redis Cluster (the slot map's questions,
the locks at each master, the sharded subscribers), with the tls_* options of rediss://
(test_tls.py): verified locks and woken waits at every master, each node's certificate checked
against its own address unless tls_server_name names one for all, a certificate from another CA
refused, mutual TLS (every node requires a client certificate) working with one and refused
without. One cluster of tests/cluster's kit with TLS ports (clusterkit.TlsCluster)."""

import os
import re
import sys
import time

import pytest
from test_docs import nginx_with_block, tls_doc_block
from test_tls import MISMATCH, NAME_ERROR, TLS_LOCATION, VERIFY_ERROR, probe

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                                "cluster"))
from clusterkit import TlsCluster, names_on_every_master  # noqa: E402
from deployment import TlsCerts  # noqa: E402

NO_CLIENT_CERT = r"SSL_do_handshake\(\) failed .*alert handshake failure"
NO_MAP = ("connection: no cluster node answered CLUSTER SLOTS (connection: TLS handshake with "
          "127.0.0.1:")


@pytest.fixture(scope="module")
def cluster(certs):
    with TlsCluster(TlsCerts(certs, clients_need_certs=True)) as c:
        yield c


def trusting(ca):
    return f"  lua_ssl_trusted_certificate {ca};\n"


def test_cluster_over_tls(cluster, certs, make_nginx):
    mine = dict(cert=certs / "client.crt", key=certs / "client.key")
    ng = make_nginx(locations=TLS_LOCATION, http=trusting(certs / "ca.crt"),
                    errors=[NO_CLIENT_CERT, NAME_ERROR])
    # the URL names one seed: the other masters are learned from CLUSTER SLOTS (their TLS ports)
    one_seed = cluster.url.split(",")[0]
    names = names_on_every_master(cluster, "ctls", 1)
    for name in names:
        r = probe(ng, one_seed, name=name, server_name="localhost", wait=1, **mine)
        assert r == {"acquired": "true", "released": "true", "woken": "true"}, (name, r)
    # every node's certificate is checked, not the seed's only: a master the URL does not name
    # presents one of the same CA for another name (re*.example.test), and is refused
    name = next(n for n in names if cluster.node_of_slot(cluster.keyslot(n)).port
                != cluster.nodes[0].port)
    node = cluster.node_of_slot(cluster.keyslot(name))
    assert cluster.cli(node.port, "CONFIG", "SET", "tls-cert-file", f"{certs}/wild.crt",
                       "tls-key-file", f"{certs}/wild.key") == "OK"
    try:
        r = probe(ng, one_seed, name=name, server_name="localhost", command_timeout=0.5, **mine)
    finally:
        assert cluster.cli(node.port, "CONFIG", "SET", "tls-cert-file", f"{certs}/server.crt",
                           "tls-key-file", f"{certs}/server.key") == "OK"
    assert r["acquired"] == "false" and r["err"].startswith(
        f"connection: TLS handshake with 127.0.0.1:{node.tls_port}: "), r
    t0 = time.monotonic()
    # each node's certificate checked against the node's own address (nginx reads DNS names
    # only, and the certificate names 127.0.0.1 only as an IP address): refused
    r = probe(ng, cluster.url, name="ctls:noname", **mine)
    assert r["acquired"] == "false" and r["err"].startswith(NO_MAP), r
    assert re.search(MISMATCH, r["err"]), r
    assert 'certificate does not match host "127.0.0.1"' in ng.log()
    # no client certificate: every node hangs up
    r = probe(ng, cluster.url, name="ctls:nocert", server_name="localhost")
    assert r["acquired"] == "false" and r["err"].startswith(NO_MAP), r
    # a server certificate signed by a CA nginx does not trust
    other = make_nginx(locations=TLS_LOCATION, http=trusting(certs / "other-ca.crt"),
                       errors=[VERIFY_ERROR])
    r = probe(other, cluster.url, name="ctls:rogue", server_name="localhost", **mine)
    assert r["acquired"] == "false" and r["err"].startswith(NO_MAP), r
    assert time.monotonic() - t0 < 10  # refused at once, nothing waits for a timeout
    r = probe(other, cluster.url, name="ctls:skip", skip=1, **mine)  # (tests only)
    assert r == {"acquired": "true", "released": "true"}, r
    # docs/openresty.md's rediss+cluster:// block, as pasted (the seeds, name and files ours)
    block = tls_doc_block(
        "## Redis Cluster", "rediss+cluster://10.0.0.1:7000,10.0.0.2:7000,10.0.0.3:7000",
        cluster.url, certs)
    with nginx_with_block(block) as (doc, said):
        assert doc.get("/orders") == (200, "done\n")
        assert said() == []
