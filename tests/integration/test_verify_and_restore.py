"""Disaster recovery: `verify` tells whether the views say exactly what the logs say, and
point-in-time restore gives a new thread holding another thread's history as it was at a moment.

Verify folds every log afresh into scratch keys and compares them with the live views key by
key; it reports every tampering (a changed document, a lost pointer, a stray or a deleted key, a
wrong position), exits 1 then and 0 only when all is equal, and never leaves scratch keys.
Restore copies a thread's events up to a log entry or a time into a new thread through the
normal append path: the new thread shows the checkpoint, metadata, values and pending writes the
source showed at that moment, none of the later history, and goes on running as a thread.
"""

from __future__ import annotations

import io
import json
import operator
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from typing import Annotated, Any, TypedDict

import pytest
import redis
from helpers import new_checkpoint, snapshot
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import CheckpointTuple
from langgraph.graph import END, START, StateGraph
from langgraph.types import Command, StateSnapshot, interrupt

from streamsaver import StreamSaver
from streamsaver.cli.main import main
from streamsaver.demo import run_demo
from streamsaver.errors import ConfigurationError, EventDecodeError, InvalidInputError
from streamsaver.ops.replay import Replayer
from streamsaver.ops.restore import log_bound, restore_thread
from streamsaver.ops.verify import verify

EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)


@pytest.fixture
def demo(redis_url: str) -> str:
    """The prefix of a deployment written by real graphs (4 threads, subgraphs, interrupts)."""
    return run_demo(redis_url, out=io.StringIO()).prefix


def cli(redis_url: str, prefix: str, *args: str) -> int:
    return main([*args, "--url", redis_url, "--prefix", prefix])


def scratch_keys(client: redis.Redis, prefix: str) -> set[bytes]:
    return set(client.scan_iter(match=f"{prefix}:verify.*", count=1000))


def first_key(client: redis.Redis, pattern: str) -> bytes:
    return min(client.scan_iter(match=pattern, count=1000))


def view_and_position_keys(client: redis.Redis, prefix: str) -> set[bytes]:
    return {
        key
        for kind in ("full", "shallow", "pos")
        for key in client.scan_iter(match=f"{prefix}:{kind}:*", count=1000)
    }


# verify ---------------------------------------------------------------------------------------


def test_the_views_real_graphs_wrote_match_what_their_logs_give(
    client: redis.Redis, redis_url: str, demo: str, capsys: pytest.CaptureFixture[str]
) -> None:
    report = verify(client, demo)

    assert report.matches and report.differences == []
    assert report.threads == 4 and report.events > 0
    assert report.keys_compared == report.equal == len(view_and_position_keys(client, demo))
    assert scratch_keys(client, demo) == set()

    assert cli(redis_url, demo, "verify") == 0
    assert "the views match the logs" in capsys.readouterr().out
    assert cli(redis_url, demo, "verify", "--json") == 0
    assert json.loads(capsys.readouterr().out)["matches"] is True
    assert scratch_keys(client, demo) == set()


def test_each_tampering_is_reported_with_what_differs_and_the_exit_code_is_1(
    client: redis.Redis, redis_url: str, demo: str, capsys: pytest.CaptureFixture[str]
) -> None:
    document = first_key(client, f"{demo}:full:cp:*")
    client.execute_command("JSON.SET", document, "$.metadata.step", 99)
    pointers = first_key(client, f"{demo}:full:ptrs:*")
    field = min(client.hkeys(pointers))
    client.hdel(pointers, field)
    stray = f"{demo}:shallow:writes:{{p0}}:nobody:".encode()
    client.hset(stray, "@cid", "made-up")
    deleted = first_key(client, f"{demo}:shallow:cp:*")
    client.delete(deleted)
    position = first_key(client, f"{demo}:pos:*")
    client.hset(position, "full", "1-1")

    report = verify(client, demo)

    assert not report.matches
    assert (report.different, report.extra, report.missing) == (3, 1, 1)
    assert report.keys_compared == report.equal + 5
    found = {d.key.encode(): d for d in report.differences}
    assert set(found) == {document, pointers, stray, deleted, position}
    assert found[document].kind == "different"
    assert "$.metadata.step is 99, the logs give" in found[document].detail
    assert found[pointers].detail.startswith(f"field {field.decode()} missing (the logs give ")
    assert found[stray].kind == "extra" and "no logged event accounts for" in found[stray].detail
    assert found[deleted].kind == "missing" and "the logs give a JSON document" in found[deleted].detail
    assert found[position].detail.startswith("field full is 1-1, the logs give ")
    assert scratch_keys(client, demo) == set()

    assert cli(redis_url, demo, "verify", "--json") == 1
    printed = json.loads(capsys.readouterr().out)
    assert printed["matches"] is False and printed["different"] == 3
    assert {d["key"].encode() for d in printed["differences"]} == set(found)
    assert cli(redis_url, demo, "verify", "--max-differences", "2") == 1
    text = capsys.readouterr().out
    assert "1 missing, 1 extra, 3 different" in text and "... and 3 more" in text
    assert "the views DIFFER from the logs" in text

    full_only = verify(client, demo, ["full"])
    assert (full_only.different, full_only.extra, full_only.missing) == (3, 0, 0)

    assert cli(redis_url, demo, "replay") == 0
    assert cli(redis_url, demo, "verify") == 0
    assert scratch_keys(client, demo) == set()


def test_scratch_keys_are_deleted_also_when_verification_stops_midway(client: redis.Redis, demo: str) -> None:
    class Stop(Exception):
        pass

    seen: list[set[bytes]] = []

    def stop_after_the_first_log(events: int) -> None:
        seen.append(scratch_keys(client, demo))
        raise Stop

    with pytest.raises(Stop):
        verify(client, demo, progress=stop_after_the_first_log)

    assert seen[0], "the first log was folded into scratch keys"
    assert scratch_keys(client, demo) == set()


def test_a_log_verify_cannot_read_is_an_error_not_a_verdict(
    client: redis.Redis, redis_url: str, demo: str, capsys: pytest.CaptureFixture[str]
) -> None:
    saver = StreamSaver(client, prefix=demo)
    saver.setup()
    client.xadd(saver.core.keys.thread("broken").log, {"type": "SomethingNew", "v": "1", "thread": "broken"})

    with pytest.raises(EventDecodeError, match="unknown event type 'SomethingNew'"):
        verify(client, demo)
    assert scratch_keys(client, demo) == set()

    assert cli(redis_url, demo, "verify") == 1
    assert "unknown event type 'SomethingNew'" in capsys.readouterr().err
    assert scratch_keys(client, demo) == set()


def test_verify_refuses_a_prefix_without_a_deployment(
    client: redis.Redis, redis_url: str, prefix: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(ConfigurationError, match="no streamsaver deployment"):
        verify(client, prefix)
    with pytest.raises(InvalidInputError, match="view must be"):
        verify(client, prefix, ["everything"])
    assert cli(redis_url, prefix, "verify") == 1
    assert "no streamsaver deployment" in capsys.readouterr().err


# restore --------------------------------------------------------------------------------------


class Trail(TypedDict):
    trail: Annotated[list[str], operator.add]


def approval_graph(saver: StreamSaver) -> Any:
    """``a -> b``; ``b`` waits for an answer (an interrupt) and appends it."""

    def a(state: Trail) -> dict[str, Any]:
        return {"trail": ["a"]}

    def b(state: Trail) -> dict[str, Any]:
        return {"trail": [f"b:{interrupt('go on?')}"]}

    graph = StateGraph(Trail)
    graph.add_node("a", a)
    graph.add_node("b", b)
    graph.add_edge(START, "a")
    graph.add_edge("a", "b")
    graph.add_edge("b", END)
    return graph.compile(checkpointer=saver)


def config(thread_id: str, checkpoint_id: str | None = None) -> RunnableConfig:
    configurable = {"thread_id": thread_id, "checkpoint_ns": ""}
    if checkpoint_id is not None:
        configurable["checkpoint_id"] = checkpoint_id
    return {"configurable": configurable}


@dataclass(frozen=True)
class Moment:
    """What a thread showed at one moment, and the id of its last log entry then."""

    last_entry: str
    latest: CheckpointTuple
    history: list[StateSnapshot]


@dataclass(frozen=True)
class Story:
    saver: StreamSaver
    graph: Any
    moments: list[Moment]


def moment(client: redis.Redis, story_saver: StreamSaver, graph: Any, thread_id: str) -> Moment:
    [(entry, _)] = client.xrevrange(story_saver.core.keys.thread(thread_id).log, count=1)
    latest = story_saver.get_tuple(config(thread_id))
    assert latest is not None
    return Moment(entry.decode(), latest, list(graph.get_state_history(config(thread_id))))


def let_the_server_clock_pass(client: redis.Redis, entry_id: str) -> None:
    """Wait until the server's clock is past the millisecond of `entry_id`, so that entries
    appended from now on carry a later time (entry ids take the server's clock)."""
    millis = int(entry_id.split("-")[0])
    while True:
        seconds, micros = client.time()
        if seconds * 1000 + micros // 1000 > millis:
            return


@pytest.fixture
def sync_saver(client: redis.Redis, prefix: str) -> StreamSaver:
    """A saver of a deployment keeping both views inline (a restore rebuilds both)."""
    saver = StreamSaver(client, prefix=prefix, projections=("full", "shallow"))
    saver.setup()
    return saver


@pytest.fixture
def story(client: redis.Redis, sync_saver: StreamSaver) -> Story:
    """Thread ``source``: asked (interrupted), answered, asked again; a `Moment` after each."""
    graph = approval_graph(sync_saver)
    moments = []
    for step in ({"trail": ["in"]}, Command(resume="yes"), {"trail": ["again"]}):
        graph.invoke(step, config("source"))
        moments.append(moment(client, sync_saver, graph, "source"))
        let_the_server_clock_pass(client, moments[-1].last_entry)
    return Story(sync_saver, graph, moments)


def checkpoint_id(snapshot_or_config: Any) -> str:
    cfg = getattr(snapshot_or_config, "config", snapshot_or_config)
    return str(cfg["configurable"]["checkpoint_id"])


def renamed(cfg: RunnableConfig | None, thread_id: str) -> RunnableConfig | None:
    if cfg is None:
        return None
    return {"configurable": {**cfg["configurable"], "thread_id": thread_id}}


def history_facts(history: list[StateSnapshot]) -> list[tuple[Any, ...]]:
    return [(checkpoint_id(s), s.values, s.next, s.metadata, s.tasks, s.interrupts) for s in history]


def assert_restored_as_it_was(story: Story, into: str, then: Moment) -> None:
    restored = story.saver.get_tuple(config(into))
    assert restored is not None
    assert restored.config == renamed(then.latest.config, into)
    assert restored.checkpoint == then.latest.checkpoint
    assert restored.metadata == then.latest.metadata
    assert restored.pending_writes == then.latest.pending_writes
    assert restored.parent_config == renamed(then.latest.parent_config, into)
    assert history_facts(list(story.graph.get_state_history(config(into)))) == history_facts(then.history)
    later = {checkpoint_id(s) for s in story.moments[-1].history} - {checkpoint_id(s) for s in then.history}
    assert later and all(story.saver.get_tuple(config(into, cid)) is None for cid in later)


def test_a_thread_restored_at_a_log_entry_is_the_thread_as_it_was_then(
    client: redis.Redis, story: Story
) -> None:
    asked = story.moments[0]
    assert asked.latest.pending_writes, "the interrupt is a pending write of the latest checkpoint"
    before = story.saver.get_tuple(config("source"))

    report = restore_thread(story.saver, "source", at=asked.last_entry, into="copy")

    assert report.last_source_entry == asked.last_entry and report.into == "copy"
    assert report.events == len(client.xrange(story.saver.core.keys.thread("source").log, "-", asked.last_entry))
    assert report.checkpoints == len(asked.history)
    assert_restored_as_it_was(story, "copy", asked)
    assert story.saver.get_tuple(config("source")) == before

    resumed = story.graph.invoke(Command(resume="no"), config("copy"))
    assert resumed["trail"] == ["in", "a", "b:no"]
    assert story.saver.get_tuple(config("source")) == before


def test_a_thread_restored_at_a_time_is_the_thread_as_it_was_then(
    client: redis.Redis, redis_url: str, prefix: str, story: Story, capsys: pytest.CaptureFixture[str]
) -> None:
    answered = story.moments[1]
    millis = int(answered.last_entry.split("-")[0])
    at = EPOCH + timedelta(milliseconds=millis)

    restore_thread(story.saver, "source", at=at, into="copy-at-a-datetime")
    restore_thread(client, "source", at=millis, into="copy-at-epoch-ms", prefix=prefix)
    assert cli(redis_url, prefix, "restore", "source", "--at", at.isoformat(), "--into", "copy-cli", "--json") == 0
    printed = json.loads(capsys.readouterr().out)

    assert printed["last_source_entry"] == answered.last_entry
    assert printed["views"] == ["full", "shallow"]
    for into in ("copy-at-a-datetime", "copy-at-epoch-ms", "copy-cli"):
        assert_restored_as_it_was(story, into, answered)
    assert verify(client, prefix).matches


def test_restoring_a_thread_with_subgraphs_copies_every_namespace(client: redis.Redis, demo: str) -> None:
    saver = StreamSaver(client, prefix=demo)
    saver.setup()
    [(last, _)] = client.xrevrange(saver.core.keys.thread("research").log, count=1)

    restore_thread(saver, "research", at=last.decode(), into="research copy {1}")

    def stored(thread_id: str) -> list[tuple[Any, ...]]:
        tuples = saver.list({"configurable": {"thread_id": thread_id}})
        return [(t.config["configurable"]["checkpoint_ns"], t.checkpoint, t.metadata, t.pending_writes) for t in tuples]

    assert stored("research copy {1}") == stored("research")
    assert len({ns for ns, *_ in stored("research")}) == 2, "the root graph and a subgraph"
    assert verify(client, demo).matches


def test_restore_refuses_bad_requests_and_changes_nothing(
    client: redis.Redis, redis_url: str, prefix: str, story: Story, capsys: pytest.CaptureFixture[str]
) -> None:
    asked = story.moments[0].last_entry
    before = snapshot(client, prefix)
    refusals: list[tuple[dict[str, Any], str]] = [
        ({"into": "source"}, "thread 'source' already exists"),
        ({"at": "1-0"}, "thread 'source' has no events up to 1-0"),
        ({"at": 0}, "has no events up to 0"),
        ({"thread_id": "nobody"}, "thread 'nobody' has no events up to"),
        ({"at": "yesterday"}, "cannot read 'yesterday' as a point in time"),
        ({"at": "1-2-3"}, "cannot read '1-2-3' as a point in time"),
        ({"at": str(2**64)}, "as a point in time"),
        ({"at": datetime(2024, 6, 10, 9, 30)}, "has no timezone"),
        ({"at": datetime(1969, 12, 31, tzinfo=timezone.utc)}, "before 1970"),
        ({"at": -5}, "cannot be negative"),
        ({"into": b"bytes"}, "thread_id must be a string"),
        ({"projections": ["everything"]}, "view must be 'full' or 'shallow'"),
        ({"projections": []}, "at least one view"),
    ]
    for change, message in refusals:
        request: dict[str, Any] = {"thread_id": "source", "at": asked, "into": "new"} | change
        with pytest.raises(InvalidInputError, match=message.replace("(", r"\(")):
            restore_thread(story.saver, **request)
    with pytest.raises(ConfigurationError, match="no streamsaver deployment"):
        restore_thread(client, "source", at=asked, into="new", prefix=f"{prefix}-none")

    assert cli(redis_url, prefix, "restore", "source", "--at", "yesterday", "--into", "new") == 1
    assert "cannot read 'yesterday' as a point in time" in capsys.readouterr().err
    assert cli(redis_url, prefix, "restore", "source", "--at", asked, "--into", "source") == 1
    assert "already exists" in capsys.readouterr().err
    assert cli(redis_url, prefix, "restore", "source", "--at", asked) == 2
    assert snapshot(client, prefix) == before


@pytest.mark.parametrize(
    ("at", "bound"),
    [
        ("1718000000000-3", "1718000000000-3"),
        (" 1718000000000 ", "1718000000000"),
        (1718000000000, "1718000000000"),
        ("2024-06-10T06:13:20Z", "1718000000000"),
        ("2024-06-10T08:13:20.0009+02:00", "1718000000000"),
        (datetime(2024, 6, 10, 6, 13, 20, 999, tzinfo=timezone.utc), "1718000000000"),
    ],
)
def test_a_point_in_time_is_a_log_entry_id_or_the_last_entry_of_a_millisecond(at: Any, bound: str) -> None:
    assert log_bound(at) == bound


@pytest.mark.parametrize("kept", [("full",), ("shallow",)], ids=["full-only", "shallow-only"])
def test_verify_and_replay_default_to_the_views_the_deployment_keeps(
    client: redis.Redis, redis_url: str, prefix: str, kept: tuple[str, ...]
) -> None:
    saver = StreamSaver(client, prefix=prefix, view=kept[0], projections=kept)
    saver.setup()
    checkpoint, versions = new_checkpoint({"a": 1})
    saver.put(config("t"), checkpoint, {}, versions)
    other = "shallow" if kept == ("full",) else "full"

    assert verify(client, prefix).views == kept and verify(client, prefix).matches
    assert cli(redis_url, prefix, "verify") == 0
    Replayer.open(client, prefix).rebuild()
    assert cli(redis_url, prefix, "replay") == 0
    assert not list(client.scan_iter(match=f"{prefix}:{other}:*"))
    assert verify(client, prefix).matches
