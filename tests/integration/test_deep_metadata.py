"""Metadata nested deeper than a checkpoint document may hold is refused before any write."""

from __future__ import annotations

import enum
from typing import Any

import pytest
import redis
from helpers import config, new_checkpoint, snapshot

from streamsaver import StreamSaver
from streamsaver.checkpoints.metadata import MAX_METADATA_DEPTH
from streamsaver.errors import InvalidInputError


def _nested(levels: int) -> Any:
    value: Any = "leaf"
    for _ in range(levels):
        value = {"k": value}
    return value


def test_too_deep_metadata_is_refused_and_nothing_is_written(
    sync_saver: StreamSaver, client: redis.Redis, prefix: str
) -> None:
    before = snapshot(client, prefix)
    checkpoint, versions = new_checkpoint({"messages": ["a"]})
    with pytest.raises(InvalidInputError, match="nested deeper"):
        sync_saver.put(config("deep"), checkpoint, {"deep": _nested(MAX_METADATA_DEPTH)}, versions)
    assert snapshot(client, prefix) == before


def test_metadata_as_deep_as_allowed_round_trips(sync_saver: StreamSaver) -> None:
    checkpoint, versions = new_checkpoint({"messages": ["a"]})
    metadata = {"deep": _nested(MAX_METADATA_DEPTH - 1)}
    saved = sync_saver.put(config("deep"), checkpoint, metadata, versions)
    got = sync_saver.get_tuple(saved)
    assert got is not None and got.metadata["deep"] == metadata["deep"]


class _Deep(enum.Enum):
    """orjson writes an Enum as its value: metadata may nest inside one."""

    VALUE = _nested(MAX_METADATA_DEPTH + 1)


def test_too_deep_metadata_inside_an_enum_is_refused_and_nothing_is_written(
    sync_saver: StreamSaver, client: redis.Redis, prefix: str
) -> None:
    before = snapshot(client, prefix)
    checkpoint, versions = new_checkpoint({"messages": ["a"]})
    with pytest.raises(InvalidInputError, match="nested deeper"):
        sync_saver.put(config("deep"), checkpoint, {"deep": _Deep.VALUE}, versions)
    assert snapshot(client, prefix) == before


@pytest.mark.parametrize(
    ("raw", "match"),
    [
        (b"NaN", "valid JSON"),  # short: the length bound spares the walk, not the parse
        (b'{"a": [1, 2', "valid JSON"),
        (b'{"pad": "' + b"x" * 300 + b'", "bad": NaN}', "valid JSON"),  # long: the walk meets it
        (b"[" * (MAX_METADATA_DEPTH + 1) + b"]" * (MAX_METADATA_DEPTH + 1), "nested deeper"),
    ],
    ids=["short-nan", "short-broken", "long-nan", "too-deep"],
)
def test_raw_json_in_metadata_is_checked_like_the_rest_and_nothing_is_written(
    sync_saver: StreamSaver, client: redis.Redis, prefix: str, raw: bytes, match: str
) -> None:
    """An ``orjson.Fragment`` is written into the document as it is: bad or too deep JSON there
    made RedisJSON refuse the document after the log entry was written."""
    import orjson

    before = snapshot(client, prefix)
    checkpoint, versions = new_checkpoint({"messages": ["a"]})
    with pytest.raises(InvalidInputError, match=match):
        sync_saver.put(config("raw"), checkpoint, {"raw": orjson.Fragment(raw)}, versions)
    assert snapshot(client, prefix) == before


def test_valid_raw_json_in_metadata_round_trips(sync_saver: StreamSaver) -> None:
    import orjson

    checkpoint, versions = new_checkpoint({"messages": ["a"]})
    saved = sync_saver.put(config("raw"), checkpoint, {"raw": orjson.Fragment(b'{"a": [1, {"b": null}]}')}, versions)
    got = sync_saver.get_tuple(saved)
    assert got is not None and got.metadata["raw"] == {"a": [1, {"b": None}]}
