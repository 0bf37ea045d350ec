"""The log core is generic over domains: a domain is data (views with their projector, read call
and index; the repeat probe; the erasing event), and the append, apply, rewrite and TTL calls
are built from it alone. Checkpoints are the first domain; a toy second one goes through the
same calls without any code of its own."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from projectors import PROJECTORS
from projectors.domain import CHECKPOINTS
from streamsaver.checkpoints import append, ttl
from streamsaver.errors import InvalidInputError
from streamsaver.log import append as log_append
from streamsaver.log import ttl as log_ttl
from streamsaver.log.domain import Domain, View
from streamsaver.log.events import CheckpointSaved, Event, ThreadDeleted, WritesSaved
from streamsaver.log.keys import Keyspace, ViewName
from streamsaver.log.rewrite import rewrite_call
from streamsaver.scripts import ERASE

KS = Keyspace("p", 4)


def _count(event: Event, keyspace: Keyspace) -> list[tuple[str | bytes, ...]]:
    """A toy view: one counter hash per thread, purged by the thread's deletion."""
    key = keyspace.thread(event.thread_id).base("counts", "n")
    if isinstance(event, ThreadDeleted):
        return [("SS.PURGE", key, "", "", "", "")]
    return [("HINCRBY", key, event.TYPE, "1")]


def _no_read(keyspace: Keyspace, thread_id: str, ns: str, doc: str) -> list[str | bytes | int]:
    return []


def _no_probe(event: Event, keyspace: Keyspace, views: Sequence[ViewName]) -> None:
    return None


TOY = Domain(
    "toy", (View("counts", _count, _no_read),), held_entry=_no_probe, erase=ThreadDeleted, scripts=CHECKPOINTS.scripts
)


def test_checkpoint_views_are_one_registry() -> None:
    assert CHECKPOINTS.view_names == ("full", "shallow")
    assert dict(PROJECTORS) == {v.name: v.project for v in CHECKPOINTS.views}
    assert CHECKPOINTS.view("full").keeps_history and not CHECKPOINTS.view("shallow").keeps_history
    assert all(view.index_fields for view in CHECKPOINTS.views)


def test_view_names_are_validated_by_their_domain() -> None:
    assert append.view_of("shallow") == "shallow"
    with pytest.raises(InvalidInputError, match="view must be 'full' or 'shallow', not 'counts'"):
        CHECKPOINTS.view_of("counts")
    with pytest.raises(InvalidInputError, match="view must be 'counts'"):
        TOY.view_of("full")
    with pytest.raises(InvalidInputError, match="projections must include it"):
        CHECKPOINTS.projections_of(["shallow"], "full")


def test_the_checkpoint_append_is_the_log_core_append_with_its_domain() -> None:
    event = WritesSaved("t", "", "c1", "task", "", ())
    assert append.append_call(event, KS, ("full",)) == log_append.append_call(CHECKPOINTS, event, KS, ("full",))
    assert ttl.ttl_block(KS, "t", 5) == log_ttl.ttl_block(CHECKPOINTS, KS, "t", 5)


def test_a_second_domain_goes_through_the_same_calls() -> None:
    event = ThreadDeleted("t")
    command = log_append.append_call(TOY, event, KS, ("counts",))
    keys = KS.thread("t")
    # runs on a full server; declares the positions again (no repeat probe) and the key its op names
    assert command[:8] == [
        "EVALSHA", ERASE.sha, "5", keys.log, keys.feed, keys.positions, keys.positions, keys.base("counts", "n")
    ]
    # erases ("1"), then one view block: its name, one command of 6 arguments
    assert command[-11:] == ["1", "1", "counts", "1", "6", "SS.PURGE", keys.base("counts", "n"), "", "", "", ""]
    assert TOY.erase_stems("counts", "t", KS) == [keys.base("counts", "n"), "", "", "", ""]
    assert log_ttl.ttl_block(TOY, KS, "t", 7) == [7, 1, keys.base("counts", "n"), "", "", "", ""]
    rewrite = rewrite_call(TOY, KS, ("counts",), "t", guard="", replace_log=None, entries=[], pointers=False)
    assert "counts" in rewrite and "HINCRBY" not in rewrite


def test_the_repeat_probe_is_the_domains() -> None:
    saved = CheckpointSaved("t", "", "c1", None, {}, {}, append.EMPTY, ())
    assert CHECKPOINTS.held_entry(saved, KS, ("shallow",)) == (
        KS.thread("t").in_ns("shallow", "ptrs", ""), "@body", "c1"
    )
    assert TOY.held_entry(saved, KS, ("counts",)) is None
