"""A listing across threads sorts only a window of the newest matches (``_window.lua``, in
``list_window.lua`` and ``list_page.lua``), and the page it returns is exactly the page a sort of
every match gives: whatever the ids (time-ordered uuids, ids tying on their order key, ids of
other alphabets, ids far from the clock), the filter (many, few or no matches), `before`, offset
and page size, wherever the window starts and whether it is sorted before any count (a fresh
remembered one); ``list_page.lua`` returns the checkpoints of exactly those rows."""

from __future__ import annotations

import random
from typing import Any

import orjson
import pytest
import redis
from helpers import config, new_checkpoint
from langgraph.checkpoint.base.id import uuid6

from streamsaver import StreamSaver
from streamsaver.checkpoints import listing
from streamsaver.checkpoints.listing import SORT_ALL_BELOW
from streamsaver.log.codec import ORDER_KEY_MAX, escape, metadata_tags, order_key
from streamsaver.log.keys import Keyspace
from streamsaver.scripts import LIST_PAGE, LIST_WINDOW

WHOLE = 2**53
"""The width the script reports when its window is the whole index."""


def _uuid6(ticks: int) -> str:
    """A version-6 uuid for a time in 100 ns ticks (LangGraph's id layout)."""
    return f"{ticks >> 28:08x}-{(ticks >> 12) & 0xFFFF:04x}-6{ticks & 0xFFF:03x}-8000-000000000000"


NOW = int(str(uuid6()).replace("-", "")[:15], 16)  # the current time in ticks, from a real uuid6


def _ids(rng: random.Random) -> list[str]:
    """~200 ids: uuids of the last hour and of years ago, a burst tying on the order key, ids
    above every uuid, ids of other alphabets, and a few ids shared by two threads."""
    ids = [_uuid6(NOW - rng.randrange(36_000_000_000)) for _ in range(70)]  # the last hour
    ids += [_uuid6(NOW - 10**15 - rng.randrange(10**14)) for _ in range(20)]  # ~3 years ago
    tied = _uuid6(NOW - 50_000_000)[:12]
    ids += [tied + f"{rng.getrandbits(24):06x}" for _ in range(40)]
    ids += ["ffff" + str(n) for n in range(10)] + ["zz-top", "~last", "Zed", "A0", "0", "", ".", "1f:9", "é", "字"]
    ids += [rng.choice(ids) for _ in range(15)]
    return ids


@pytest.fixture(scope="module")
def stored(redis_url: str) -> tuple[redis.Redis, str, list[tuple[str, str, str, int]]]:
    """A deployment of one checkpoint per thread; rows ``(id, thread, ns, group)``."""
    client = redis.Redis.from_url(redis_url)
    prefix = f"window{random.randrange(10**9)}"
    saver = StreamSaver(client, prefix=prefix)
    saver.setup()
    rng = random.Random(11)
    rows = []
    for n, checkpoint_id in enumerate(_ids(rng)):
        checkpoint, versions = new_checkpoint({"n": n})
        checkpoint["id"] = checkpoint_id
        thread, ns, group = f"t{n:03d}", "" if n % 5 else "sub", n % 4
        saver.put(config(thread, ns), checkpoint, {"group": group, "all": True}, versions)
        rows.append((checkpoint_id, thread, ns, group))
    return client, prefix, rows


def _page(client: redis.Redis, prefix: str, filter: dict[str, Any], before: str, offset: int, size: int,
          top: int, width: int, sort_all_below: int = 0, fresh: bool = False,
          read: bool = False) -> tuple[int, list[tuple[str, str, str]]]:
    """One script call (``list_page.lua`` when `read`, checking that each checkpoint it read is
    its row's); by default it sorts all matches only when a window could hold them all, so that
    these few hundred checkpoints exercise the window search."""
    query = " ".join(f"@mt:{{{t}}}" for t in metadata_tags(sorted(filter.items()))) or "*"
    args = [query, before, order_key(before) if before else "", offset, size, top, width, sort_all_below, int(fresh),
            "0", "", ""]
    index = Keyspace(prefix).index("full")
    if read:
        width_used, reply, checkpoints = client.execute_command(
            *LIST_PAGE.evalsha_args([index], [*args, prefix, "full"])
        )
    else:
        width_used, reply = client.execute_command(*LIST_WINDOW.evalsha_args([index], args))
    found = []
    for row in reply[1:]:
        fields = {row[i].decode(): row[i + 1].decode() for i in range(0, len(row), 2)}
        found.append((fields["checkpoint_id"], fields["tk"], fields["nk"]))
    if read:
        docs = [orjson.loads(checkpoint[0]) for checkpoint in checkpoints]
        assert [(d["checkpoint_id"], escape(d["thread_id"]), escape(d["checkpoint_ns"])) for d in docs] == found
    return int(width_used), found


def _expected(rows: list[tuple[str, str, str, int]], filter: dict[str, Any], before: str, offset: int,
              size: int) -> list[tuple[str, str, str]]:
    matching = [
        (cid, escape(thread), escape(ns)) for cid, thread, ns, group in rows
        if filter.get("group", group) == group and (not before or cid.encode() < before.encode())
    ]
    # checkpoint_id descending (bytes), then thread and namespace as keys spell them, ascending
    matching.sort(key=lambda r: (r[1], r[2]))
    matching.sort(key=lambda r: r[0].encode(), reverse=True)
    return matching[offset : offset + size]


def test_every_page_equals_a_full_sort_wherever_the_window_starts(
    stored: tuple[redis.Redis, str, list[tuple[str, str, str, int]]],
) -> None:
    client, prefix, rows = stored
    rng = random.Random(3)
    known = sorted({cid for cid, *_ in rows})
    tops = [order_key(str(uuid6())), 0, ORDER_KEY_MAX, order_key(known[len(known) // 2])]
    for case in range(400):
        filter = rng.choice([{}, {"all": True}, {"group": rng.randrange(4)}, {"group": 9}])
        before = rng.choice(["", "", rng.choice(known), rng.choice(known) + "0", "1f", "zzz", "0"])
        if before and not all(c.isascii() and (c.isalnum() or c in "._:-") for c in before):
            before = ""
        offset, size = rng.choice([0, 0, 1, 7, 40, 150]), rng.choice([1, 3, 10, 100])
        top, width = rng.choice(tops), rng.choice([1, 361, 19**6, WHOLE])
        few = rng.choice([0, 0, 0, 60, SORT_ALL_BELOW])
        fresh, read = rng.random() < 0.5, rng.random() < 0.5
        _, found = _page(client, prefix, filter, before, offset, size, top, width, few, fresh, read)
        assert found == _expected(rows, filter, before, offset, size), (
            case, filter, before, offset, size, top, width, fresh
        )


def test_the_newest_page_of_recent_uuid_ids_sorts_a_narrow_window(
    stored: tuple[redis.Redis, str, list[tuple[str, str, str, int]]],
) -> None:
    client, prefix, rows = stored
    width, found = _page(client, prefix, {"group": 1}, "", 0, 3, order_key(str(uuid6())), 361)

    assert found == _expected(rows, {"group": 1}, "", 0, 3)
    assert 0 < width < order_key(_uuid6(NOW)) - order_key(_uuid6(NOW - 10**15))  # years of ids left out


def test_a_window_grows_to_the_whole_index_when_the_matches_are_fewer_than_the_page(
    stored: tuple[redis.Redis, str, list[tuple[str, str, str, int]]],
) -> None:
    client, prefix, rows = stored
    width, found = _page(client, prefix, {"group": 2}, "", 0, 1000, order_key(str(uuid6())), 1)

    assert width == WHOLE
    assert found == _expected(rows, {"group": 2}, "", 0, 1000) and len(found) == sum(r[3] == 2 for r in rows)


def test_no_match_is_an_empty_page(stored: tuple[redis.Redis, str, list[tuple[str, str, str, int]]]) -> None:
    client, prefix, _ = stored
    assert _page(client, prefix, {"group": 9}, "", 0, 10, order_key(str(uuid6())), 361) == (WHOLE, [])


def test_ids_above_the_guess_are_found_by_searching_upward(
    stored: tuple[redis.Redis, str, list[tuple[str, str, str, int]]],
) -> None:
    """Ids newer than the clock (other alphabets) lie above the guessed newest key: the window
    moves up until it holds no more than a few pages' worth, and still holds the page."""
    client, prefix, rows = stored
    width, found = _page(client, prefix, {}, "", 0, 2, order_key(str(uuid6())), 361)

    assert found == _expected(rows, {}, "", 0, 2) and found[0][0] == "字"
    assert width < 0  # the window starts above the guess


def test_a_window_below_before_grows_to_the_whole_index_when_it_holds_too_few(
    stored: tuple[redis.Redis, str, list[tuple[str, str, str, int]]],
) -> None:
    """Many matches, but fewer below `before` than the page: the window grows down to the
    lowest key and becomes the whole index (bounded above by `before`'s key)."""
    client, prefix, rows = stored
    before = sorted({cid for cid, *_ in rows if cid})[4]
    width, found = _page(client, prefix, {}, before, 0, 10, order_key(str(uuid6())), 1)

    assert width == WHOLE
    assert found == _expected(rows, {}, before, 0, 10) and 0 < len(found) < 10


def test_fewer_matches_than_the_sort_all_threshold_are_sorted_without_a_window(
    stored: tuple[redis.Redis, str, list[tuple[str, str, str, int]]],
) -> None:
    client, prefix, rows = stored
    width, found = _page(client, prefix, {}, "", 0, 3, order_key(str(uuid6())), 361, SORT_ALL_BELOW)

    assert len(rows) < SORT_ALL_BELOW and width == WHOLE
    assert found == _expected(rows, {}, "", 0, 3)


def test_a_first_window_that_holds_the_page_is_used_without_walking_the_matches(
    stored: tuple[redis.Redis, str, list[tuple[str, str, str, int]]],
) -> None:
    """A remembered window that holds the page answers at once, even where the matches are few
    enough to sort whole: the probe that walks up to `SORT_ALL_BELOW` of them only decides what
    to do when the first window does not hold the page."""
    client, prefix, rows = stored
    keys = sorted((order_key(cid) for cid, _, _, group in rows if group == 1), reverse=True)
    # a lowest key whose window [low, +inf] holds the page of 3 and fewer than the 12 matches
    # a window may hold (ids sharing their first 12 characters share a key)
    low = next(k for k in keys if 3 <= sum(x >= k for x in keys) < 12)
    width = keys[0] - low
    used, found = _page(client, prefix, {"group": 1}, "", 0, 3, keys[0], width, SORT_ALL_BELOW)

    assert len(rows) < SORT_ALL_BELOW and used == width
    assert found == _expected(rows, {"group": 1}, "", 0, 3)


def _index_queries(client: redis.Redis) -> int:
    return int(client.info("commandstats").get("cmdstat_FT.AGGREGATE", {}).get("calls", 0))


@pytest.mark.parametrize("read", [False, True])
def test_a_fresh_window_that_holds_the_page_is_sorted_without_counting(
    stored: tuple[redis.Redis, str, list[tuple[str, str, str, int]]], read: bool,
) -> None:
    """Three index queries for a counted window (the `ck` check, a count, the sort), two for a
    fresh one: a full page from it is the page. A fresh window too narrow for the page gives a
    short page, and the script searches as without it."""
    client, prefix, rows = stored
    keys = sorted((order_key(cid) for cid, _, _, group in rows if group == 1), reverse=True)
    low = next(k for k in keys if 3 <= sum(x >= k for x in keys) < 12)
    queries = []
    for fresh in (False, True):
        before = _index_queries(client)
        used, found = _page(client, prefix, {"group": 1}, "", 0, 3, keys[0], keys[0] - low, 0, fresh, read)
        queries.append(_index_queries(client) - before)
        assert used == keys[0] - low and found == _expected(rows, {"group": 1}, "", 0, 3)

    assert queries == [3, 2]
    _, found = _page(client, prefix, {"group": 1}, "", 0, 3, keys[0], 1, 0, True, read)
    assert found == _expected(rows, {"group": 1}, "", 0, 3)


@pytest.mark.parametrize("page", [1, 3, 7, 40])
def test_a_listing_pages_by_its_cursor_through_tied_ids_and_ids_a_filter_cannot_quote(
    stored: tuple[redis.Redis, str, list[tuple[str, str, str, int]]], monkeypatch: pytest.MonkeyPatch, page: int
) -> None:
    """Small pages put page edges among ids repeated across threads (the cursor's tk and nk
    order them) and after ids outside ``[A-Za-z0-9._:-]`` (the next page counts on from the
    last cursor instead): page by page, the listing is still the full sort."""
    client, prefix, rows = stored
    monkeypatch.setattr(listing, "PAGE", page)
    saver = StreamSaver(client, prefix=prefix)
    for filter in ({}, {"group": 1}):
        listed = [
            (c["checkpoint_id"], escape(c["thread_id"]), escape(c["checkpoint_ns"]))
            for c in (t.config["configurable"] for t in saver.list(None, filter=filter))
        ]
        assert listed == _expected(rows, filter, "", 0, len(rows)), (page, filter)
