"""The package is typed: the stubs match the runtime, and the example type-checks strictly."""

import os
import subprocess
import sys

ROOT = os.path.join(os.path.dirname(__file__), "..", "..")


def run(cwd, *args):
    # outside the source tree, so that the installed package is what gets checked
    return subprocess.run([sys.executable, "-m", *args], capture_output=True, text=True, cwd=cwd)


def test_stubs_match_the_runtime(tmp_path):
    result = run(tmp_path, "mypy.stubtest", "redlease")
    assert result.returncode == 0, result.stdout + result.stderr


def test_example_type_checks_strictly(tmp_path):
    example = os.path.abspath(os.path.join(ROOT, "examples", "python", "jobs_demo.py"))
    result = run(tmp_path, "mypy", "--strict", "--no-incremental", example)
    assert result.returncode == 0, result.stdout + result.stderr
