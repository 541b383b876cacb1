"""Fixtures for the Python suite (server, raw and make_client come from tests/conftest.py)."""

import pytest


@pytest.fixture
def client(make_client):
    return make_client()
