"""`setup.upgrading`: an index of an older schema of the deployment's views means an upgrade is
under way (setup then waits for the new indexes' scans); nothing else does."""

from __future__ import annotations

from streamsaver.log.indexes import index_schema_version, upgrading
from streamsaver.log.keys import INDEX_SCHEMA_VERSION, STORE_VIEW, Keyspace

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


def test_each_view_has_its_own_schema_version() -> None:
    """A view's version is its entry in `VIEW_SCHEMA_VERSIONS`, else the default: the store's
    items index moved to v5 first, the checkpoint views followed (schema v5: no ``source``,
    ``step``); a v4 index of either is an upgrade under way, a v5 one is current."""
    keyspace = Keyspace("app", 16)
    assert index_schema_version(STORE_VIEW) == 5 and index_schema_version("full") == CURRENT
    assert keyspace.index(STORE_VIEW) == "app:items:idx:v5"
    assert keyspace.index("full") == f"app:full:idx:v{CURRENT}"
    assert upgrading(keyspace, [STORE_VIEW], [{"app:items:idx:v4"}])
    assert CURRENT == 5 and upgrading(keyspace, ["full"], [{"app:full:idx:v4"}])
    assert not upgrading(keyspace, [STORE_VIEW], [{"app:items:idx:v5", f"app:full:idx:v{CURRENT}"}])
    assert not upgrading(keyspace, ["full", STORE_VIEW], [{f"app:full:idx:v{CURRENT}", "app:items:idx:v5"}])
