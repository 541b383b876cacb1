"""No password in any message, repr, log line or attribute, whatever the URL looks like."""

import logging

import pytest

import redlease

SECRET = "S3CRET"

ACCEPTED = [
    ("redis://u:S3CRET@127.0.0.1:{port}/0", "redis://u:***@127.0.0.1:{port}/0"),
    ("redis://:S3CRET@127.0.0.1:{port}", "redis://:***@127.0.0.1:{port}"),
    ("redis://u:p@S3CRET@127.0.0.1:{port}", "redis://u:***@127.0.0.1:{port}"),
    ("redis://u:S3CRET%40x@127.0.0.1:{port}", "redis://u:***@127.0.0.1:{port}"),
    ("unix://u:S3CRET@/tmp/nowhere.sock?db=1", "unix://u:***@/tmp/nowhere.sock?db=1"),
]
if redlease.tls_supported():  # the server speaks plain TCP: the TLS handshake is refused
    ACCEPTED.append(("rediss://u:S3CRET@127.0.0.1:{port}", "rediss://u:***@127.0.0.1:{port}"))

REFUSED = [
    "http://u:S3CRET@127.0.0.1", "redis//u:S3CRET@127.0.0.1", "S3CRET",
    "redis://u:S3CRET@127.0.0.1:notaport", "redis://u:S3CRET@127.0.0.1/notadb",
    "redis://u:S3C%zzRET@127.0.0.1", "redis://u:S3CRET@", "rediss://u:S3CRET@127.0.0.1:notaport",
    "unix://u:S3CRET/tmp/r.sock",
]


@pytest.mark.parametrize("url", REFUSED)
def test_refused_url_message_has_no_password(url):
    with pytest.raises(ValueError) as info:
        redlease.Client(url)
    assert str(info.value) and "S3C" not in str(info.value)


@pytest.mark.parametrize("url,shown", ACCEPTED)
def test_client_url_repr_and_logs_have_no_password(url, shown, server, caplog):
    client = redlease.Client(url.format(port=server.port), connect_timeout=0.2,
                             command_timeout=0.2)
    try:
        assert client.url == shown.format(port=server.port)
        assert SECRET not in repr(client) and SECRET not in str(vars(client))
        with caplog.at_level(logging.DEBUG, logger="redlease"):
            try:  # the server has no password: AUTH is refused (or the socket is missing)
                client.lock("x").acquire(timeout=0)
            except redlease.LockError as e:
                assert SECRET not in str(e)
        assert all(SECRET not in r.getMessage() for r in caplog.records)
    finally:
        client.close()
    assert SECRET not in repr(client)
