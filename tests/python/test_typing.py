"""The package is typed: the stubs match the runtime, and the example type-checks strictly."""

import os
import subprocess
import sys

ROOT = os.path.join(os.path.dirname(__file__), "..", "..")


def run(*args):
    return subprocess.run([sys.executable, "-m", *args], capture_output=True, text=True,
                          cwd=os.path.join(ROOT, "build"))


def test_stubs_match_the_runtime():
    result = run("mypy.stubtest", "redlease")
    assert result.returncode == 0, result.stdout + result.stderr


def test_example_type_checks_strictly():
    example = os.path.join(ROOT, "examples", "python", "jobs_demo.py")
    result = run("mypy", "--strict", "--no-incremental", example)
    assert result.returncode == 0, result.stdout + result.stderr
