"""redlease.testing: the throwaway server and the pytest fixture users get."""

import socket
import subprocess
import sys
import textwrap

import redlease
from redlease.testing import RedisServer


def test_redis_server_starts_on_a_free_port_and_stops():
    with RedisServer() as s:
        port = s.port
        assert s.url == f"redis://127.0.0.1:{port}/0"
        with redlease.Client(s.url) as c, c.lock("t"):
            pass
        s.stop()
        with socket.socket() as probe:
            assert probe.connect_ex(("127.0.0.1", port)) != 0
        s.start()  # same port, no data
        assert s.port == port
        with redlease.Client(s.url) as c:
            assert not c.lock("t").locked()


def test_pytest_plugin_provides_the_fixture(tmp_path):
    test = tmp_path / "test_user.py"
    test.write_text(textwrap.dedent("""
        import redlease

        def test_uses_fixture(redlease_server):
            with redlease.Client(redlease_server.url) as c, c.lock("x") as lock:
                assert lock.held()
    """))
    result = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                             str(test)], capture_output=True, text=True, cwd=tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "1 passed" in result.stdout
