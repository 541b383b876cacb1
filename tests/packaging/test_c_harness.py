"""The C suite's runner (tests/c/harness.c): in a parallel run (`test_core -j N`, as `make test`
runs it), a test whose worker process dies is counted as failed and named, and the run fails;
the tests of other workers still run."""

import os
import subprocess

from pkgkit import ROOT

TEST_CORE = os.path.join(ROOT, "build", "plain", "test_core")


def run_core(*args):
    subprocess.run(["make", "--no-print-directory", "build/plain/test_core"], cwd=ROOT,
                   check=True, capture_output=True)
    env = dict(os.environ, REDLEASE_HARNESS_SELFTEST="1")
    return subprocess.run([TEST_CORE, *args], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=120)


def test_a_worker_that_dies_fails_its_test_and_the_run():
    out = run_core("-j", "2", "harness_selftest")
    lines = out.stdout.splitlines()
    assert out.returncode != 0
    assert "ok   harness_selftest_passes" in "\n".join(lines)
    assert any(line.startswith("FAIL worker") and "harness_selftest_dies" in line
               for line in lines), out.stdout
    assert lines[-1] == "1 passed, 1 failed"


def test_a_serial_run_counts_the_same_tests():
    out = run_core("-j", "2", "harness_selftest_passes")
    assert out.returncode == 0
    assert out.stdout.splitlines()[-1] == "1 passed, 0 failed"


def test_bad_job_counts_are_refused():
    out = run_core("-j", "0", "harness_selftest_passes")
    assert out.returncode != 0
    assert "-j takes 1 to" in out.stdout
