"""The package is typed: the stubs match the runtime, and the example type-checks strictly."""

import os
import subprocess
import sys

ROOT = os.path.join(os.path.dirname(__file__), "..", "..")


def run(cwd, *args):
    # outside the source tree, so that the installed package is what gets checked
    return subprocess.run([sys.executable, "-m", *args], capture_output=True, text=True, cwd=cwd)


def test_stubs_match_the_runtime(tmp_path):
    args = ["mypy.stubtest", "redlease"]
    if sys.version_info < (3, 10):  # see the allowlist's header: typing re-exports only
        args += ["--allowlist", os.path.abspath(os.path.join(os.path.dirname(__file__),
                                                             "stubtest_py39_allowlist.txt"))]
    result = run(tmp_path, *args)
    assert result.returncode == 0, result.stdout + result.stderr


def test_examples_type_check_strictly(tmp_path):
    for name in ("jobs_demo.py", "async_jobs.py", "web_guard.py"):
        example = os.path.abspath(os.path.join(ROOT, "examples", "python", name))
        result = run(tmp_path, "mypy", "--strict", "--no-incremental", example)
        assert result.returncode == 0, name + ": " + result.stdout + result.stderr


def test_stubs_name_the_core_lost_reasons():
    """The stub's Literal of lost reasons is the core's list (redlease._core.LOST_REASONS)."""
    import re

    from redlease import _core

    stub = os.path.join(os.path.dirname(_core.__file__), "_core.pyi")
    with open(stub) as f:
        literal = re.search(r"_LostReason = Literal\[(.*?)\]", f.read()).group(1)
    assert tuple(re.findall(r'"(\w+)"', literal)) == _core.LOST_REASONS
    assert len(_core.LOST_REASONS) == 6
