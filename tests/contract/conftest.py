"""The contract suite runs twice: on one Redis server, and on a Redis Cluster of three
primaries (`EmbeddedCluster`, started once per session; see tests/conftest.py). Every test of
this directory takes the server through `redis_url`, so each one runs on both."""

from __future__ import annotations

import pytest


@pytest.fixture(scope="session", params=["redis", "cluster"])
def redis_url(request: pytest.FixtureRequest, redis_url: str) -> str:
    if request.param == "cluster":
        return str(request.getfixturevalue("cluster_url"))
    return redis_url
