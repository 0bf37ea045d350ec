"""A listing across threads, page by page (one ``list_page.lua`` call a page on one server),
is exactly a sort of every match, newest id first, whatever the filter, `before` and limit; a
fresh remembered window (the same filter listed again at once) changes nothing; and threads
deleted between two pages never make a checkpoint come twice, out of order, or from outside
the filter, nor skip one still there: the next page starts after the last row returned."""

from __future__ import annotations

import random
from typing import Any

import pytest
import redis
from helpers import config, new_checkpoint

from streamsaver import StreamSaver
from streamsaver.checkpoints.listing import PAGE
from streamsaver.log.codec import escape

Row = tuple[str, str, str]


@pytest.fixture(scope="module")
def saved(redis_url: str) -> tuple[redis.Redis, str, list[tuple[Row, int]]]:
    """~2.5 pages of threads, a third with two checkpoints, some in a subgraph namespace; each
    checkpoint ``((id, thread, ns), group)``."""
    client = redis.Redis.from_url(redis_url)
    prefix = f"across{random.randrange(10**9)}"
    saver = StreamSaver(client, prefix=prefix)
    saver.setup()
    rows = []
    for n in range(PAGE * 5 // 2):
        thread, ns, previous = f"t{n:03d}", "" if n % 7 else "sub", None
        for step in range(1 + (n % 3 == 0)):
            checkpoint, versions = new_checkpoint({"n": n, "step": step}, previous)
            saved_config = saver.put(config(thread, ns), checkpoint, {"group": n % 3, "all": True}, versions)
            rows.append(((saved_config["configurable"]["checkpoint_id"], thread, ns), n % 3))
            previous = checkpoint
    return client, prefix, rows


def _sorted(rows: list[tuple[Row, int]], filter: dict[str, Any], before: str) -> list[Row]:
    matching = [r for r, group in rows if filter.get("group", group) == group and (not before or r[0] < before)]
    matching.sort(key=lambda r: (escape(r[1]), escape(r[2])))
    matching.sort(key=lambda r: r[0], reverse=True)
    return matching


def _row(t: Any) -> Row:
    c = t.config["configurable"]
    return c["checkpoint_id"], c["thread_id"], c["checkpoint_ns"]


def test_pages_equal_a_full_sort_of_the_matches(saved: tuple[redis.Redis, str, list[tuple[Row, int]]]) -> None:
    client, prefix, rows = saved
    saver = StreamSaver(client, prefix=prefix)
    rng = random.Random(5)
    ids = sorted(r[0] for r, _ in rows)
    for case in range(24):
        filter = rng.choice([{}, {"all": True}, {"group": rng.randrange(3)}, {"group": 7}])
        before = rng.choice(["", "", rng.choice(ids)])
        limit = rng.choice([None, None, 1, 10, PAGE, PAGE + 7])
        expected = _sorted(rows, filter, before)[:limit]
        for _ in range(2):  # the second listing starts from the window the first remembered
            listed = saver.list(None, filter=filter, before=config("x", None, before) if before else None, limit=limit)
            assert [_row(t) for t in listed] == expected, (case, filter, before, limit)


def test_threads_deleted_between_pages_skip_none_left(redis_url: str) -> None:
    client = redis.Redis.from_url(redis_url)
    prefix = f"deleting{random.randrange(10**9)}"
    saver = StreamSaver(client, prefix=prefix)
    saver.setup()
    by_thread: dict[str, list[Row]] = {}
    rng = random.Random(9)
    for n in range(PAGE * 2 + 30):
        thread = f"t{n:03d}"
        checkpoint, versions = new_checkpoint({"n": n})
        saved_config = saver.put(config(thread), checkpoint, {"all": True}, versions)
        by_thread[thread] = [(saved_config["configurable"]["checkpoint_id"], thread, "")]
    expected = _sorted([(r, 0) for found in by_thread.values() for r in found], {}, "")

    listing = saver.list(None, filter={"all": True})
    first = [_row(next(listing)) for _ in range(PAGE)]
    gone = rng.sample(sorted(by_thread), 60)
    for thread in gone:
        saver.delete_thread(thread)
    rest = [_row(t) for t in listing]

    assert first == expected[:PAGE]
    left = [r for r in expected[PAGE:] if r[1] not in gone]
    assert rest == left  # in order, each once, none deleted, none skipped
    client.close()
