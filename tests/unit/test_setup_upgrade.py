"""`setup.upgrading`: an index of an older schema of the deployment's views means an upgrade is
under way (setup then waits for the new indexes' scans); nothing else does."""

from __future__ import annotations

from streamsaver.log.indexes import upgrading
from streamsaver.log.keys import INDEX_SCHEMA_VERSION, Keyspace

OLDER, CURRENT = INDEX_SCHEMA_VERSION - 1, INDEX_SCHEMA_VERSION


def test_an_older_index_of_a_view_on_any_primary_is_an_upgrade() -> None:
    keyspace = Keyspace("app", 16)
    assert upgrading(keyspace, ["full"], [set(), {f"app:full:idx:v{OLDER}"}])
    assert upgrading(keyspace, ["shallow"], [{f"app:shallow:idx:v{OLDER}:{{i2}}:0123abcd"}])


def test_current_indexes_other_views_and_other_deployments_are_not() -> None:
    keyspace = Keyspace("app", 16)
    others = {
        f"app:full:idx:v{CURRENT}",
        f"app:full:idx:v{CURRENT}:{{i0}}:node",
        f"app:shallow:idx:v{OLDER}",
        f"app2:full:idx:v{OLDER}",
        f"x:app:full:idx:v{OLDER}",
        f"app:full:idx:v{OLDER}0",
    }
    assert not upgrading(keyspace, ["full"], [others])
    assert not upgrading(keyspace, ["full", "shallow"], [set()])
