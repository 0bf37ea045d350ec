"""What the views' indexes hold (projectors/schema.py, schema v5): every field a query searches,
and no entry per checkpoint for a field no query searches. A value unique to each document (the
checkpoint id, the parent's digest) costs the index a tag entry of its own (~400 bytes a
checkpoint either, ~600 both), which is what `checkpoint_id` (sorted on and compared in FILTER only) and `ph`
(never queried) cost until schema v3; `source` and `step` (every metadata filter is a query on
`mt`) cost each put a JSONPath lookup and an index update until schema v4."""

from __future__ import annotations

import redis
from helpers import config, new_checkpoint

from streamsaver import StreamSaver
from streamsaver.log.keys import Keyspace


def _attributes(client: redis.Redis, index: str) -> dict[str, list[str]]:
    info = client.execute_command("FT.INFO", index)
    info = info if isinstance(info, dict) else dict(zip(info[::2], info[1::2], strict=True))
    out = {}
    for attribute in info[b"attributes"]:
        words = [w.decode() if isinstance(w, bytes) else str(w) for w in attribute]
        out[words[words.index("attribute") + 1]] = words
    return out


def test_the_index_searches_what_queries_use_and_only_sorts_the_checkpoint_id(redis_url: str, prefix: str) -> None:
    client = redis.Redis.from_url(redis_url, protocol=2)
    saver = StreamSaver(client, prefix=prefix, projections=("full", "shallow"))
    saver.setup()
    for view in ("full", "shallow"):
        attributes = _attributes(client, Keyspace(prefix).index(view))
        assert "ph" not in attributes
        assert {"SORTABLE", "NOINDEX"} <= set(attributes["checkpoint_id"])
        for searched in ("th", "nh", "rh", "mt", "ck"):
            assert "NOINDEX" not in attributes[searched], searched
        assert set(attributes) == {"th", "nh", "rh", "mt", "ck", "checkpoint_id", "tk", "nk"}


def test_pages_sort_and_filter_by_checkpoint_id_without_indexing_it(redis_url: str, prefix: str) -> None:
    """Across threads (sorted by id, `before` a FILTER on the id) and within one thread."""
    client = redis.Redis.from_url(redis_url)
    saver = StreamSaver(client, prefix=prefix)
    saver.setup()
    saved = []
    for i in range(6):
        checkpoint, versions = new_checkpoint({"i": i})
        saved.append(
            saver.put(config(f"t{i % 2}"), checkpoint, {"kind": "k"}, versions)["configurable"]["checkpoint_id"]
        )
    newest_first = sorted(saved, reverse=True)

    across = [t.config["configurable"]["checkpoint_id"] for t in saver.list(None, filter={"kind": "k"})]
    below = [
        t.config["configurable"]["checkpoint_id"]
        for t in saver.list(None, filter={"kind": "k"}, before=config("t0", checkpoint_id=newest_first[1]))
    ]
    in_thread = [
        t.config["configurable"]["checkpoint_id"] for t in saver.list(config("t1"), filter={"kind": "k"}, limit=2)
    ]

    assert across == newest_first
    assert below == newest_first[2:]
    assert in_thread == [c for c in newest_first if c in saved[1::2]][:2]
