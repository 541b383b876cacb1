"""Fixtures of the Cluster suite: one 3-master/3-replica cluster (redlease.testing.RedisCluster)
shared by the tests that leave it as they found it, a fresh one for each test that breaks it
(migration, failover), raw connections to its nodes; redlease clients come from tests/conftest.py
(`clients`)."""

import os
import sys

import pytest

from redlease.testing import RedisCluster

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from clusterkit import names_on_every_master  # noqa: E402


@pytest.fixture(scope="session")
def cluster():
    with RedisCluster() as c:
        yield c


@pytest.fixture
def own_cluster():
    """A cluster of its own, for a test that moves slots or kills a node."""
    with RedisCluster() as c:
        yield c


@pytest.fixture
def spread(cluster):
    """Lock names whose slots fall on each of the three masters (three per master)."""
    return names_on_every_master(cluster, "spread", 3)
