"""The partition itself: a packet really stops, connects hang, and both flow again after the
heal; the run's nftables table goes at close, and a dead run's at the next sweep."""

import signal
import socket
import subprocess
import sys
import time

import net
import procs
import pytest
import servers


@pytest.fixture
def setup():
    run, parts = procs.Run(), net.Partitions()
    redis = servers.Redis(run, net.node_address(0), [net.client_address(0),
                                                     net.client_address(1)])
    yield run, parts, redis
    parts.close()
    run.close()


def ping(s: socket.socket) -> bytes:
    s.sendall(b"PING\r\n")
    return s.recv(16)


def test_loopback_routes_all_of_127_8():
    out = subprocess.run(["ip", "route", "show", "table", "local"], capture_output=True,
                         text=True).stdout
    assert "local 127.0.0.0/8 dev lo" in out


def test_a_cut_address_gets_nothing_until_healed(setup):
    run, parts, redis = setup
    cut = socket.create_connection((net.client_address(0), redis.port), timeout=1)
    other = socket.create_connection((net.client_address(1), redis.port), timeout=1)
    assert ping(cut) == b"+PONG\r\n"
    parts.cut([net.client_address(0)])
    with pytest.raises(socket.timeout):  # the connection stays open; nothing gets through
        ping(cut)
    started = time.monotonic()
    with pytest.raises(socket.timeout):  # a new connect hangs (not refused, not EPERM)
        socket.create_connection((net.client_address(0), redis.port), timeout=1)
    assert time.monotonic() - started >= 0.9
    assert ping(other) == b"+PONG\r\n"  # only that address is cut
    parts.heal()
    cut.settimeout(15)  # the PING sent during the cut arrives with TCP's retransmission
    assert cut.recv(16) == b"+PONG\r\n"
    with socket.create_connection((net.client_address(0), redis.port), timeout=2) as fresh:
        assert ping(fresh) == b"+PONG\r\n"


def test_a_cut_pair_drops_both_directions_only_between_them(setup):
    run, parts, redis = setup
    parts.cut(pairs=[("127.0.0.1", net.client_address(0))])
    with pytest.raises(socket.timeout):
        socket.create_connection((net.client_address(0), redis.port), timeout=1)
    with socket.create_connection((net.client_address(1), redis.port), timeout=1) as s:
        assert ping(s) == b"+PONG\r\n"


def test_the_table_goes_at_close_and_a_dead_runs_at_the_sweep():
    parts = net.Partitions()
    assert parts.table in net.tables()
    parts.close()
    assert parts.table not in net.tables()
    child = subprocess.Popen([sys.executable, "-c", "import net, time; p = net.Partitions(); "
                              "print(p.table, flush=True); time.sleep(60)"],
                             stdout=subprocess.PIPE, text=True)
    table = child.stdout.readline().strip()
    assert table in net.tables()
    child.send_signal(signal.SIGKILL)
    child.wait()
    assert table in net.tables()  # a run killed by SIGKILL cannot remove it
    assert table in net.sweep()
    assert table not in net.tables()
