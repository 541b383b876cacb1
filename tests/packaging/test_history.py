"""History a reader can use: every commit since the rule was set has a one-line subject under 72
characters (the why goes in the body), so `git log --oneline` reads as a list of changes."""

import subprocess

import pytest
from pkgkit import ROOT

SINCE = "2f87185"  # the last commit before the rule; older subjects are left as they are
LIMIT = 72


def git(*args):
    return subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True)


def long_subjects(rev_range):
    out = git("log", "--format=%h %s", rev_range)
    assert out.returncode == 0, out.stderr
    return [line for line in out.stdout.splitlines() if len(line.split(" ", 1)[1]) >= LIMIT]


def test_commit_subjects_are_short():
    if git("cat-file", "-e", SINCE + "^{commit}").returncode != 0:
        pytest.skip(f"{SINCE} is not in this clone's history (a shallow clone): nothing to check")
    assert long_subjects(f"{SINCE}..HEAD") == []


def test_the_check_sees_a_long_subject():
    # The commits before the rule hold paragraph-long subjects: the check must find them.
    assert long_subjects(f"{SINCE}~40..{SINCE}")
