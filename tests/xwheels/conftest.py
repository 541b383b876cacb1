"""Fixtures of the cross-built wheels' suite: the packaging suite's fresh virtualenvs."""

import os
import sys

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "packaging"))
from pkgkit import Venv  # noqa: E402


@pytest.fixture
def venv(tmp_path):
    """A fresh virtualenv of the given CPython (default: this one)."""
    return lambda python=sys.executable: Venv(python, tmp_path / "venv")
