"""The examples that make targets run, run as those targets run them: scripts/with-redis starts a
throwaway redis-server when no REDIS_URL is given (make demo-web)."""

import os
import re
import subprocess
import sys

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))


def test_web_guard_runs_one_rebuild_per_tenant_at_a_time():
    env = {k: v for k, v in os.environ.items() if k != "REDIS_URL"}
    env["REBUILD_SECONDS"] = "1.5"
    result = subprocess.run([os.path.join(ROOT, "scripts", "with-redis"), sys.executable,
                             os.path.join(ROOT, "examples", "python", "web_guard.py")],
                            capture_output=True, text=True, env=env, timeout=120)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "throwaway redis-server" in result.stderr
    answers = re.findall(r"POST /rebuild/(\w+) +-> (\d+) ", result.stdout)
    # acme three times at once: one rebuilt, two turned away; globex beside it; acme again later
    acme = [code for tenant, code in answers if tenant == "acme"]
    assert acme == ["409", "409", "200", "200"], result.stdout
    assert [code for tenant, code in answers if tenant == "globex"] == ["200"], result.stdout
