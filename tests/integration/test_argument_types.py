"""Arguments of the wrong type are refused with `InvalidInputError` before anything is written
(invariant 7), not with a TypeError or AttributeError from deep inside, nor stored as something
else: a plain string where a list of ids is expected would otherwise mean one id per character."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest
import redis
from helpers import (
    VARIANT_IDS,
    VARIANTS,
    SaverAdapter,
    config,
    new_checkpoint,
    open_adapter,
    snapshot,
)

from streamsaver import AsyncStreamSaver
from streamsaver.errors import InvalidInputError


@pytest.fixture(params=VARIANTS, ids=VARIANT_IDS)
async def saver(request: pytest.FixtureRequest, redis_url: str, prefix: str) -> AsyncIterator[SaverAdapter]:
    kind, view = request.param
    async with open_adapter(kind, view, redis_url, prefix, partitions=1) as adapter:
        yield adapter


BAD_WRITES: dict[str, Any] = {
    "a string": "ab",
    "a mapping": {"a": 1},
    "none": None,
    "a one-item pair": [("a",)],
    "a three-item pair": [("a", 1, 2)],
    "a channel that is not a string": [(1, 2)],
    "a pair that is a string": ["ab"],
}


@pytest.mark.parametrize("writes", BAD_WRITES.values(), ids=BAD_WRITES.keys())
async def test_writes_that_are_not_channel_value_pairs_are_refused(
    saver: SaverAdapter, client: redis.Redis, prefix: str, writes: Any
) -> None:
    saved, _ = await saver.save("t1", {"a": 1})
    before = snapshot(client, prefix)

    with pytest.raises(InvalidInputError):
        await saver.put_writes(saved, writes, "task1")

    assert snapshot(client, prefix) == before


@pytest.mark.parametrize("metadata", [[("a", 1)], "step", 5], ids=["a list", "a string", "an int"])
async def test_metadata_that_is_not_a_mapping_is_refused(
    saver: SaverAdapter, client: redis.Redis, prefix: str, metadata: Any
) -> None:
    await saver.save("t1", {"a": 1})
    before = snapshot(client, prefix)
    checkpoint, versions = new_checkpoint({"a": 2})

    with pytest.raises(InvalidInputError):
        await saver.put(config("t1"), checkpoint, metadata, versions)

    assert snapshot(client, prefix) == before


@pytest.mark.parametrize("checkpoint_id", [123, None, b"1f0-ab"], ids=["an int", "none", "bytes"])
async def test_a_checkpoint_id_that_is_not_a_string_is_refused(
    saver: SaverAdapter, client: redis.Redis, prefix: str, checkpoint_id: Any
) -> None:
    await saver.save("t1", {"a": 1})
    before = snapshot(client, prefix)
    checkpoint, versions = new_checkpoint({"a": 2})
    checkpoint["id"] = checkpoint_id

    with pytest.raises(InvalidInputError):
        await saver.put(config("t1"), checkpoint, {}, versions)

    assert snapshot(client, prefix) == before


@pytest.mark.parametrize("limit", ["2", 1.5, True, -1], ids=["a string", "a float", "a bool", "negative"])
async def test_a_limit_that_is_not_a_count_is_refused(saver: SaverAdapter, limit: Any) -> None:
    await saver.save("t1", {"a": 1})

    with pytest.raises(InvalidInputError):
        await saver.list(config("t1"), limit=limit)
    with pytest.raises(InvalidInputError):
        await saver.list(None, limit=limit)


async def _call(saver: SaverAdapter, method: str, *args: Any, **kw: Any) -> None:
    if isinstance(saver.saver, AsyncStreamSaver):
        await getattr(saver.saver, "a" + method)(*args, **kw)
    else:
        getattr(saver.saver, method)(*args, **kw)


@pytest.mark.parametrize(
    ("method", "kw"),
    [("prune", {}), ("prune", {"strategy": "delete"}), ("retain", {"keep_last": 1}), ("delete_for_runs", {})],
    ids=["prune", "prune-delete", "retain", "delete_for_runs"],
)
async def test_a_single_string_where_a_list_of_ids_is_expected_is_refused(
    saver: SaverAdapter, client: redis.Redis, prefix: str, method: str, kw: dict[str, Any]
) -> None:
    # Thread "t" and run "r" exist: 't' iterated as characters would be a real id.
    first, checkpoint = await saver.save("t", {"a": 1}, metadata={"run_id": "r"})  # type: ignore[typeddict-unknown-key]
    await saver.save("t", {"a": 2}, parent=first, previous=checkpoint, metadata={"run_id": "r"})  # type: ignore[typeddict-unknown-key]
    before = snapshot(client, prefix)

    with pytest.raises(InvalidInputError, match="string"):
        await _call(saver, method, "t" if method != "delete_for_runs" else "r", **kw)

    assert snapshot(client, prefix) == before


@pytest.mark.parametrize(
    "partitions", [True, "16", 4.0, 0, -2, 16385], ids=["a bool", "a string", "a float", "zero", "negative", "too many"]
)
@pytest.mark.parametrize("kind", ["sync", "async"])
async def test_a_partition_count_that_is_not_an_int_in_range_is_refused(
    redis_url: str, prefix: str, kind: str, partitions: Any
) -> None:
    with pytest.raises(InvalidInputError, match="partitions"):
        async with open_adapter(kind, "full", redis_url, prefix, setup=False, partitions=partitions):
            pass


async def test_a_task_path_that_is_not_a_string_is_refused(
    saver: SaverAdapter, client: redis.Redis, prefix: str
) -> None:
    saved, _ = await saver.save("t1", {"a": 1})
    before = snapshot(client, prefix)

    with pytest.raises(InvalidInputError):
        await saver.put_writes(saved, [("a", 2)], "task1", 5)  # type: ignore[arg-type]

    assert snapshot(client, prefix) == before


@pytest.mark.parametrize("new_versions", [["a"], "a"], ids=["a list", "a string"])
async def test_new_versions_that_are_not_a_mapping_are_refused(
    saver: SaverAdapter, client: redis.Redis, prefix: str, new_versions: Any
) -> None:
    await saver.save("t1", {"a": 1})
    before = snapshot(client, prefix)
    checkpoint, _ = new_checkpoint({"a": 2})

    with pytest.raises(InvalidInputError):
        await saver.put(config("t1"), checkpoint, {}, new_versions)

    assert snapshot(client, prefix) == before


@pytest.mark.parametrize(
    ("cfg", "kw"),
    [
        ("t1", {}),
        (config("t1"), {"filter": [("a", 1)]}),
        (config("t1"), {"filter": "a"}),
        (config("t1"), {"before": "some-id"}),
    ],
    ids=["config-a-string", "filter-a-list", "filter-a-string", "before-a-string"],
)
async def test_list_arguments_of_the_wrong_type_are_refused(saver: SaverAdapter, cfg: Any, kw: dict[str, Any]) -> None:
    await saver.save("t1", {"a": 1})

    with pytest.raises(InvalidInputError):
        await saver.list(cfg, **kw)


async def test_a_config_that_is_not_a_mapping_is_refused(saver: SaverAdapter) -> None:
    with pytest.raises(InvalidInputError):
        await saver.get_tuple("t1")  # type: ignore[arg-type]
