"""Fixtures of the packaging suite (helpers in pkgkit.py)."""

import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from pkgkit import Venv  # noqa: E402


@pytest.fixture
def venv(tmp_path):
    """A fresh virtualenv of the given CPython (default: this one)."""
    return lambda python=sys.executable: Venv(python, tmp_path / "venv")
