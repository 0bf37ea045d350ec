"""Listings that sort several threads or namespaces (across threads; one thread without a
namespace) page by a keyset cursor: each page starts strictly after the last row returned, in
the listing's order (checkpoint id DESC, then thread and namespace as keys spell them ASC), not
at an offset. So checkpoints deleted between two pages (threads deleted, runs deleted) shift
nothing past the page: every checkpoint left that is older than the rows already returned comes
exactly once, in order, on a single server and on Redis Cluster (each index its own cursor),
also where one id repeats across many threads (`copy_thread` copies ids) across a page edge."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
import redis
from helpers import config, new_checkpoint, sync_client

from streamsaver import StreamSaver
from streamsaver.checkpoints.listing import PAGE
from streamsaver.log.codec import escape

Row = tuple[str, str, str]



def _row(t: Any) -> Row:
    c = t.config["configurable"]
    return c["checkpoint_id"], c["thread_id"], c["checkpoint_ns"]


def _order(rows: list[Row]) -> list[Row]:
    """The listing's order: id DESC, then thread and namespace as keys spell them ASC."""
    return sorted(sorted(rows, key=lambda r: (escape(r[1]), escape(r[2]))), key=lambda r: r[0], reverse=True)


@pytest.fixture(params=["server", "cluster"])
def client(request: pytest.FixtureRequest, redis_url: str) -> Iterator[Any]:
    url = request.getfixturevalue("cluster_url") if request.param == "cluster" else redis_url
    c = sync_client(url)
    yield c
    c.close()


def test_threads_deleted_between_pages_skip_none_of_those_left(client: Any, prefix: str) -> None:
    saver = StreamSaver(client, prefix=prefix)
    saver.setup()
    rows: list[Row] = []
    for n in range(PAGE * 2 + 30):
        thread, ns = f"t{n:03d}", "" if n % 5 else "sub"  # a few in a subgraph namespace
        checkpoint, versions = new_checkpoint({"n": n})
        saved = saver.put(config(thread, ns), checkpoint, {"all": True}, versions)
        rows.append((saved["configurable"]["checkpoint_id"], thread, ns))
    expected = _order(rows)

    listing = saver.list(None, filter={"all": True})
    first = [_row(next(listing)) for _ in range(PAGE)]
    # the newest threads, every one of them on the page already returned: an offset would now
    # point past as many rows never returned
    gone = {r[1] for r in first[: PAGE // 2]}
    for thread in sorted(gone):
        saver.delete_thread(thread)
    rest = [_row(t) for t in listing]

    assert first == expected[:PAGE]
    assert rest == expected[PAGE:]


def test_one_id_in_many_threads_pages_by_thread_past_deletions(client: Any, prefix: str) -> None:
    saver = StreamSaver(client, prefix=prefix)
    saver.setup()
    previous, rows = None, []
    for step in range(2):
        checkpoint, versions = new_checkpoint({"step": step}, previous)
        saved = saver.put(config("source"), checkpoint, {"all": True}, versions)
        rows.append((saved["configurable"]["checkpoint_id"], "source", ""))
        previous = checkpoint
    copies = [f"copy{n:03d}" for n in range(PAGE + 20)]
    for thread in copies:
        saver.copy_thread("source", thread)
    expected = _order(rows + [(r[0], thread, "") for thread in copies for r in rows])
    assert expected[PAGE - 1][0] == expected[PAGE][0]  # the newest id spans the page edge

    listing = saver.list(None, filter={"all": True})
    first = [_row(next(listing)) for _ in range(PAGE)]
    gone = {r[1] for r in first[::3]}  # among the threads the first page ended in
    for thread in sorted(gone):
        saver.delete_thread(thread)
    rest = [_row(t) for t in listing]

    assert first == expected[:PAGE]
    assert rest == [r for r in expected[PAGE:] if r[1] not in gone]


def test_runs_deleted_between_pages_of_one_thread_without_a_namespace_skip_none(
    client: Any, prefix: str
) -> None:
    saver = StreamSaver(client, prefix=prefix)
    saver.setup()
    total, newest = PAGE * 2 + 50, PAGE // 2
    previous: dict[str, Any] = {}
    rows: list[Row] = []
    for i in range(total):
        ns = "" if i % 4 else "sub"
        checkpoint, versions = new_checkpoint({"i": i}, previous.get(ns))
        run = "r-new" if i >= total - newest else "r-old"
        saved = saver.put(config("t", ns), checkpoint, {"run_id": run}, versions)
        rows.append((saved["configurable"]["checkpoint_id"], "t", ns))
        previous[ns] = checkpoint
    expected = _order(rows)

    listing = saver.list(config("t", None))  # every namespace of the thread
    first = [_row(next(listing)) for _ in range(PAGE)]
    saver.delete_for_runs(["r-new"])  # the newest, all of them on the page already returned
    rest = [_row(t) for t in listing]

    assert first == expected[:PAGE]
    assert rest == expected[PAGE:]


def test_ids_threads_and_namespaces_that_keys_escape_page_by_the_same_cursor(redis_url: str, prefix: str) -> None:
    """A thread id and a namespace that keys escape (`%`, a space, non-ASCII) page by the same
    cursor: the escaped spelling is what the index sorts and the cursor compares."""
    client = redis.Redis.from_url(redis_url)
    saver = StreamSaver(client, prefix=prefix)
    saver.setup()
    rows: list[Row] = []
    checkpoint, versions = new_checkpoint({"x": 0})
    for n in range(PAGE + 30):
        thread = f"t {n % 7}%é'\"{n:03d}"
        ns = ["", "a b", "é"][n % 3]
        saved = saver.put(config(thread, ns), checkpoint, {"all": True}, versions)  # one id, many rows
        rows.append((saved["configurable"]["checkpoint_id"], thread, ns))
    expected = _order(rows)

    listing = saver.list(None, filter={"all": True})
    first = [_row(next(listing)) for _ in range(PAGE)]
    gone = {r[1] for r in first[::2]}
    for thread in sorted(gone):
        saver.delete_thread(thread)
    rest = [_row(t) for t in listing]

    assert first == expected[:PAGE]
    assert rest == [r for r in expected[PAGE:] if r[1] not in gone]
    client.close()
