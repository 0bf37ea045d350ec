"""A listing across threads returns exactly the matches, newest checkpoint id first, whatever the
ids: also when many ids share their first characters (they tie on the order key by which the
listing narrows the matches to the newest; see `list_window.lua`), and for ids of other
alphabets, across pages (130 matches are two pages), with `limit` and `before`, when a filter
matches nothing, on one server and merged from every primary of a cluster."""

from __future__ import annotations

import random
from collections.abc import AsyncIterator
from typing import Any

import pytest
from helpers import VARIANT_IDS, VARIANTS, SaverAdapter, config, new_checkpoint, open_adapter

from streamsaver.checkpoints import listing

TIED = "1f1e7380-c3e"  # 12 characters: ids that start with it share one order key
NEXT = "1f1e7380-c3f"
ODD = ["1f1e7380-c3e:9", "1f1e7380-c3e.1", "1f1e7380-c3", "1f1e7380-c3e", "zz-top", "A0", "1f1e7380-c3e-0"]


@pytest.fixture(params=VARIANTS, ids=VARIANT_IDS)
async def saver(request: pytest.FixtureRequest, redis_url: str, prefix: str) -> AsyncIterator[SaverAdapter]:
    kind, view = request.param
    async with open_adapter(kind, view, redis_url, prefix) as adapter:
        yield adapter


async def _threads(saver: SaverAdapter) -> dict[str, int]:
    """130 threads of one checkpoint each; most ids share their first 12 characters."""
    rng = random.Random(5)
    made: dict[str, int] = {}
    ids = [TIED + f"{rng.getrandbits(24):06x}" for _ in range(80)]
    ids += [NEXT + f"{rng.getrandbits(24):06x}" for _ in range(40)]
    ids += ["1f1e7380-c3d" + f"{rng.getrandbits(16):04x}" for _ in range(3)] + ODD
    for n, checkpoint_id in enumerate(ids):
        checkpoint, versions = new_checkpoint({"n": n})
        checkpoint["id"] = checkpoint_id
        await saver.put(config(f"t{n}"), checkpoint, {"group": n % 3, "all": True}, versions)
        made[checkpoint_id] = n % 3
    return made


def _ids(tuples: list[Any]) -> list[str]:
    return [t.config["configurable"]["checkpoint_id"] for t in tuples]


async def test_ids_sharing_prefixes_list_in_exact_order_with_filters_limits_and_before(saver: SaverAdapter) -> None:
    made = await _threads(saver)
    newest_first = sorted(made, reverse=True)
    for wanted, matching in [
        ({"all": True}, newest_first),
        ({"group": 0}, [c for c in newest_first if made[c] == 0]),
        ({"group": 2}, [c for c in newest_first if made[c] == 2]),
        ({"group": 7}, []),
    ]:
        assert _ids(await saver.list(None, filter=wanted)) == matching
        for limit in (1, 7, 45):
            assert _ids(await saver.list(None, filter=wanted, limit=limit)) == matching[:limit]
        for before in [
            newest_first[3],
            newest_first[len(newest_first) // 2],
            newest_first[-1],
            TIED,
            "1f1e7380-c3e:9",
            "zz",
        ]:
            older = [c for c in matching if c < before]
            got = await saver.list(None, filter=wanted, before={"configurable": {"checkpoint_id": before}})
            assert _ids(got) == older, (wanted, before)
            limited = await saver.list(None, filter=wanted, before={"configurable": {"checkpoint_id": before}}, limit=5)
            assert _ids(limited) == older[:5]


async def test_the_same_listings_through_windows_of_the_newest_matches(
    saver: SaverAdapter, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The same listings with the sort-all threshold at 0, so that every page of every listing
    (two pages, `before`, limits, several primaries' windows merged, the saver's remembered
    windows reused) goes through a window search: the suite's deployments hold fewer matches
    than the threshold, which would otherwise sort them all."""
    monkeypatch.setattr(listing, "SORT_ALL_BELOW", 0)
    await test_ids_sharing_prefixes_list_in_exact_order_with_filters_limits_and_before(saver)
