"""Every key of a thread shares one slot; distinct threads and namespaces never share a key."""

from __future__ import annotations

import re

import pytest

from streamsaver.errors import ConfigurationError
from streamsaver.log.keys import Keyspace, partition_of


def _slot_tag(key: str) -> str:
    match = re.search(r"\{([^}]*)\}", key)
    assert match, key
    return match.group(1)


def test_all_keys_of_a_thread_share_the_partition_hash_tag() -> None:
    ks = Keyspace("app", 16)
    t = ks.thread("user:{42} ünïcode")
    keys = [t.log, t.feed, t.positions, t.namespaces("full"), t.in_ns("full", "ids", "sub:1"),
            t.per_checkpoint("full", "cp", "sub:1", "c{1}"), t.in_ns("shallow", "cp", "")]
    assert {_slot_tag(k) for k in keys} == {f"p{partition_of('user:{42} ünïcode', 16)}"}
    assert all(k.startswith("app:") for k in keys)


def test_thread_and_namespace_boundaries_cannot_be_forged() -> None:
    ks = Keyspace()
    a = ks.thread("a:b").per_checkpoint("full", "cp", "c", "1")
    b = ks.thread("a").per_checkpoint("full", "cp", "b:c", "1")
    assert a != b


def test_partition_is_stable_and_in_range() -> None:
    assert partition_of("thread-1", 16) == partition_of("thread-1", 16)
    assert {partition_of(f"t{i}", 4) for i in range(200)} == {0, 1, 2, 3}


@pytest.mark.parametrize("prefix", ["", "a b", "x{y}", "a::b", ":a"])
def test_prefixes_that_could_break_keys_are_refused(prefix: str) -> None:
    with pytest.raises(ConfigurationError):
        Keyspace(prefix)


def test_partition_count_is_bounded() -> None:
    with pytest.raises(ConfigurationError):
        Keyspace("p", 0)


def test_index_names_carry_the_schema_version() -> None:
    assert Keyspace("p").index("full").startswith("p:full:idx:v")
