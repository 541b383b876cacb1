"""The partition itself: a packet really stops, connects hang, and both flow again after the
heal; only the cut process and only the cut address are affected; the run's nftables table goes
at close, and a dead run's at the next sweep."""

import signal
import socket
import subprocess
import sys
import time

import net
import procs
import pytest
import servers

# A client process: answers each command read on stdin with one line: "ping T" sends PING on
# its first connection and reads one reply (T s at most), "read T" reads one reply, "connect"
# PINGs on a new connection, "other" connects to the other address.
CLIENT = r"""
import socket, sys
addr = (sys.argv[1], int(sys.argv[2]))
other = (sys.argv[3], int(sys.argv[4]))
first, buf = socket.create_connection(addr, timeout=1), b""
def reply(s, timeout):
    global buf
    s.settimeout(timeout)
    while b"\r\n" not in buf:
        buf += s.recv(64)
    line, buf = buf.split(b"\r\n", 1)
    return line.decode().lstrip("+")
print("ready", flush=True)
for line in sys.stdin:
    try:
        if line.startswith(("ping", "read")):
            if line.startswith("ping"):
                first.sendall(b"PING\r\n")
            out = reply(first, float(line.split()[1]))
        elif line.startswith("connect"):
            with socket.create_connection(addr, timeout=1) as s:
                s.sendall(b"PING\r\n")
                out = s.recv(16).decode().strip("+\r\n")
        else:
            socket.create_connection(other, timeout=1).close()
            out = "connected"
    except OSError as e:
        out = type(e).__name__
    print(out, flush=True)
"""


@pytest.fixture
def setup():
    run, parts = procs.Run(), net.Partitions()
    redis = servers.Redis(run, net.node_address(0))
    other = socket.socket()
    other.bind((net.node_address(7), 0))
    other.listen(16)
    clients = []
    for k in range(2):
        parts.label(net.client_gid(k))
        clients.append(run.spawn([sys.executable, "-c", CLIENT, redis.address, str(redis.port),
                                  *map(str, other.getsockname())], gid=net.client_gid(k),
                                 stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True))
        assert clients[-1].stdout.readline().strip() == "ready"
    yield run, parts, redis, clients
    other.close()
    parts.close()
    run.close()


def ask(client, command: str) -> str:
    client.stdin.write(command + "\n")
    client.stdin.flush()
    return client.stdout.readline().strip()


def test_loopback_routes_all_of_127_8():
    out = subprocess.run(["ip", "route", "show", "table", "local"], capture_output=True,
                         text=True).stdout
    assert "local 127.0.0.0/8 dev lo" in out


def test_a_cut_process_gets_nothing_from_that_address_until_healed(setup):
    run, parts, redis, (cut, spared) = setup
    assert ask(cut, "ping 1") == "PONG" and ask(spared, "ping 1") == "PONG"
    parts.cut(processes=[(net.client_gid(0), redis.address)])
    assert ask(cut, "ping 1") == "TimeoutError"  # open, but nothing gets through
    started = time.monotonic()
    assert ask(cut, "connect") == "TimeoutError"  # a new connect hangs (not refused, no EPERM)
    assert time.monotonic() - started >= 0.9
    assert ask(cut, "other") == "connected"  # only that address is cut
    assert ask(spared, "ping 1") == "PONG" and ask(spared, "connect") == "PONG"  # and process
    parts.heal()
    # the PING sent during the cut arrives with TCP's retransmission: its answer comes first
    assert ask(cut, "read 15") == "PONG"
    assert ask(cut, "ping 5") == "PONG"
    assert ask(cut, "connect") == "PONG"


def test_a_cut_address_or_pair_drops_both_directions(setup):
    run, parts, redis, (client, _) = setup
    parts.cut(pairs=[("127.0.0.1", redis.address)])
    with pytest.raises(socket.timeout):
        socket.create_connection((redis.address, redis.port), timeout=1)
    parts.heal()
    parts.cut([redis.address])
    assert ask(client, "connect") == "TimeoutError"
    parts.heal()
    assert ask(client, "connect") == "PONG"


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


def test_the_relay_delays_both_ways_and_keeps_the_order():
    """The latency nemesis's relay: a round trip takes twice the delay set, pipelined replies
    come back in order, and a delay set back to 0 lets calls through at once again."""
    run = procs.Run()
    try:
        topology = servers.OneRedis(run, net.node_address(0), relay=net.node_address(7))
        relay = topology.relay
        with socket.create_connection((relay.address, relay.port), timeout=5) as s:
            def round_trip(payload: bytes, replies: int) -> tuple:
                t0 = time.monotonic()
                s.sendall(payload)
                got = b""
                while got.count(b"\r\n") < replies:
                    got += s.recv(4096)
                return time.monotonic() - t0, got

            took, _ = round_trip(b"PING\r\n", 1)
            assert took < 0.15
            relay.delay(0.3)
            took, got = round_trip(b"ECHO a\r\nECHO b\r\nECHO c\r\n", 6)
            assert 0.6 <= took < 2.0 and got == b"$1\r\na\r\n$1\r\nb\r\n$1\r\nc\r\n"
            relay.delay(0)
            took, _ = round_trip(b"PING\r\n", 1)
            assert took < 0.15
    finally:
        run.close()
