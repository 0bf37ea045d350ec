"""The shipped subscribers work on a real graph: the audit trail's hash chain verifies and
detects tampering; the analytics counts per-node steps, write sizes and interrupts exactly once;
and the CLI shows dead letters, lag, trims feeds and prints both examples' results."""

from __future__ import annotations

import json
import operator
from pathlib import Path
from typing import Annotated, Any, TypedDict

import pytest
import redis
from langgraph.graph import END, START, StateGraph
from langgraph.types import Command, interrupt

from streamsaver import StreamSaver
from streamsaver.cli.main import main
from streamsaver.examples.analytics import analytics_subscriber, node_of, report
from streamsaver.examples.audit import AuditTrail, audit_subscriber, verify
from streamsaver.feeds.subscriber import Subscriber


class Review(TypedDict):
    messages: Annotated[list[str], operator.add]


def run_review_graph(saver: StreamSaver, thread: str) -> None:
    """``draft`` writes; ``review`` interrupts for a human, then records the answer."""

    def draft(state: Review) -> dict[str, Any]:
        return {"messages": ["draft " + "x" * 100]}

    def review(state: Review) -> dict[str, Any]:
        return {"messages": [f"answer: {interrupt('publish?')}"]}

    builder = StateGraph(Review)
    builder.add_node("draft", draft)
    builder.add_node("review", review)
    builder.add_edge(START, "draft")
    builder.add_edge("draft", "review")
    builder.add_edge("review", END)
    graph = builder.compile(checkpointer=saver)
    cfg: Any = {"configurable": {"thread_id": thread}}
    graph.invoke({"messages": ["hi"]}, cfg)
    graph.invoke(Command(resume="yes"), cfg)


@pytest.fixture
def deployment(client: redis.Redis, prefix: str) -> StreamSaver:
    saver = StreamSaver(client, prefix=prefix, partitions=4)
    saver.setup()
    for thread in ("t1", "t2", "t3"):
        run_review_graph(saver, thread)
    return saver


def test_the_audit_trail_verifies_and_detects_tampering(client: redis.Redis, prefix: str, deployment: StreamSaver,
                                                        tmp_path: Path) -> None:
    trail = tmp_path / "audit.jsonl"
    stats = audit_subscriber(client, trail, prefix=prefix).run_burst()
    lines = trail.read_bytes().splitlines()
    assert stats.handled == len(lines) == sum(client.xlen(k) for k in client.scan_iter(f"{prefix}:log:*"))
    verdict = verify(trail)
    assert verdict.ok and verdict.lines == len(lines)
    # A re-delivery adds nothing; new events extend the chain.
    handler = AuditTrail(trail)
    Subscriber(client, "audit-again", handler, prefix=prefix).run_burst()
    run_review_graph(deployment, "t4")
    Subscriber(client, "audit", handler, prefix=prefix).run_burst()
    handler.close()
    assert verify(trail).ok and verify(trail).lines > len(lines) and len(handler.seen) == handler.count
    # Change one value, drop one line, swap two lines: each is caught at the right line.
    good = trail.read_bytes().splitlines()
    changed = json.loads(good[3])
    changed["thread"] = "someone-else"
    for tampered, line in (([*good[:3], json.dumps(changed, sort_keys=True).encode(), *good[4:]], 4),
                           ([*good[:5], *good[6:]], 6), ([*good[:2], good[3], good[2], *good[4:]], 3)):
        bad = tmp_path / f"bad-{line}.jsonl"
        bad.write_bytes(b"\n".join(tampered) + b"\n")
        verdict = verify(bad)
        assert not verdict.ok and verdict.broken_line == line
        assert main(["audit", "verify", str(bad)]) == 3
        with pytest.raises(ValueError, match="broken"):
            AuditTrail(bad)
    assert main(["audit", "verify", str(trail)]) == 0


def test_analytics_counts_steps_write_sizes_and_interrupts_once(client: redis.Redis, prefix: str, redis_url: str,
                                                                deployment: StreamSaver,
                                                                capsys: pytest.CaptureFixture[str]) -> None:
    analytics_subscriber(client, prefix=prefix, batch=3).run_burst()
    counted = report(client, prefix)
    # Counting again from the start (a re-delivery of everything) changes nothing.
    for p in range(4):
        client.xgroup_setid(f"{prefix}:feed:{{p{p}}}", "analytics", "0")
    analytics_subscriber(client, prefix=prefix).run_burst()
    assert report(client, prefix) == counted
    assert counted.nodes["draft"].steps == 3 and counted.nodes["review"].steps == 6  # interrupted, resumed
    assert counted.nodes["review"].interrupts == 3 and counted.nodes["draft"].interrupts == 0
    assert counted.nodes["draft"].bytes > 3 * 100
    assert counted.events["CheckpointSaved"] == sum(counted.checkpoints.values()) and counted.checkpoints["loop"] >= 6
    assert main(["analytics", "show", "--url", redis_url, "--prefix", prefix]) == 0
    out = capsys.readouterr().out
    assert "review" in out and "draft" in out
    assert node_of("~__pregel_pull, agent") == "agent" and node_of("") == "(unknown)"


def test_cli_lists_and_requeues_dead_letters_shows_lag_and_trims(client: redis.Redis, prefix: str, redis_url: str,
                                                                 deployment: StreamSaver,
                                                                 capsys: pytest.CaptureFixture[str]) -> None:
    def fail_on_t2(event: Any) -> None:
        if event.thread_id == "t2" and event.type == "CheckpointSaved":
            raise KeyError("no t2 here")

    Subscriber(client, "alerts", fail_on_t2, prefix=prefix, max_deliveries=2).run_burst()
    common = ["--url", redis_url, "--prefix", prefix]
    assert main(["dead-letters", "list", "--group", "alerts", "--json", *common]) == 0
    letters = json.loads(capsys.readouterr().out)
    assert letters and all(d["thread_id"] == "t2" and d["attempts"] == 2 and "KeyError" in d["error"]
                           for d in letters)
    assert main(["stats", "--partitions", "--json", *common]) == 0
    stats = json.loads(capsys.readouterr().out)
    assert stats["groups"]["alerts"] == {"pending": 0, "lag": 0, "dead_letters": len(letters)}
    assert {row["group"] for row in stats["partitions"]} == {"alerts"} and len(stats["partitions"]) == 4
    assert main(["dead-letters", "requeue", "--group", "alerts", *common]) == 1  # names nothing
    assert main(["dead-letters", "requeue", "--group", "alerts", letters[0]["id"], *common]) == 0
    assert "re-queued 1" in capsys.readouterr().out
    assert main(["stats", "--json", *common]) == 0
    stats = json.loads(capsys.readouterr().out)
    assert stats["groups"]["alerts"]["lag"] == 1 and stats["feed_entries"] == stats["events"] + 1
    # Only the re-queued entry, not yet delivered again, survives the trim.
    assert main(["trim-feeds", "--json", *common]) == 0
    assert json.loads(capsys.readouterr().out)["removed"] == stats["events"]
    assert sum(client.xlen(f"{prefix}:feed:{{p{p}}}") for p in range(4)) == 1
    assert sum(client.xlen(k) for k in client.scan_iter(f"{prefix}:log:*")) == stats["events"]
    assert main(["dead-letters", "requeue", "--group", "alerts", "--all", *common]) == 0
    assert main(["dead-letters", "list", "--group", "alerts", *common]) == 0
    assert "no dead letters" in capsys.readouterr().out.splitlines()[-1]
    for command in (["dead-letters", "--help"], ["trim-feeds", "--help"], ["audit", "--help"], ["analytics", "--help"]):
        assert main(command) == 0
