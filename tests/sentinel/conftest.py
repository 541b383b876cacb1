"""Fixtures of the Sentinel suite: a Deployment per test (master, replica, three sentinels)."""

import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from deployment import Deployment  # noqa: E402


@pytest.fixture
def deployment():
    d = Deployment()
    yield d
    d.close()
