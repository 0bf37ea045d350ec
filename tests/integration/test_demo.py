"""The demo runs every scene on a real server, and what it reports is what Redis holds.

The demo runs once per module (`demo`); each test checks one scene through a fresh client and
saver on the demo's key prefix, so the facts come from Redis, not from the demo's memory.
"""

from __future__ import annotations

import io
import re
import subprocess
import sys
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import cast

import pytest
import redis
from langchain_core.runnables import RunnableConfig

from projectors.schema import FIELDS
from streamsaver import StreamSaver
from streamsaver.cli.main import build_parser, main
from streamsaver.demo import DemoReport, run_demo
from streamsaver.demo.graphs import build_approval, build_chat
from streamsaver.log.events import CheckpointSaved, Event, WritesSaved
from streamsaver.log.stored import from_fields

SECTIONS = [
    "1. Memory across invocations",
    "2. Human in the loop",
    "3. Time travel",
    "4. A subgraph",
    "5. Parallel branches",
    "6. What is stored",
]


@dataclass
class Demo:
    report: DemoReport
    output: str
    saver: StreamSaver
    client: redis.Redis


@pytest.fixture(scope="module")
def demo(redis_url: str) -> Iterator[Demo]:
    out = io.StringIO()
    report = run_demo(redis_url, out=out)
    client = redis.Redis.from_url(redis_url)
    saver = StreamSaver(client, prefix=report.prefix)
    saver.setup()
    yield Demo(report, out.getvalue(), saver, client)
    client.close()


def thread(thread_id: str, checkpoint_ns: str | None = None) -> RunnableConfig:
    configurable = {"thread_id": thread_id}
    if checkpoint_ns is not None:
        configurable["checkpoint_ns"] = checkpoint_ns
    return {"configurable": configurable}


def log_of(demo: Demo, thread_id: str) -> list[Event]:
    key = demo.saver.core.keys.thread(thread_id).log
    entries = cast("list[tuple[bytes, dict[bytes, bytes]]]", demo.client.xrange(key))
    return [from_fields(fields) for _, fields in entries]


def test_prints_every_section_in_order_with_the_server_and_prefix(demo: Demo) -> None:
    positions = [demo.output.index(title) for title in SECTIONS]
    assert positions == sorted(positions)
    assert demo.report.server in demo.output
    assert demo.report.prefix in demo.output
    assert not demo.report.embedded


def test_memory_answers_from_earlier_turns_of_the_thread(demo: Demo) -> None:
    assert demo.report.memory.replies == [
        "bot: Nice to meet you, Ada.",
        "bot: Noted. You have told me 2 things so far.",
        "bot: Your name is Ada.",
    ]


def test_interrupt_pauses_and_the_resume_value_reaches_the_final_state(demo: Demo) -> None:
    facts = demo.report.approval
    assert facts.paused_before == ("review",)
    assert facts.asked["question"] == "Send this email?"
    state = build_approval(demo.saver).get_state(thread(facts.thread_id))
    assert state.values["decision"] == "yes, send it"
    assert state.values["status"] == "sent to Grace"
    assert state.next == ()
    channels = {
        w.channel
        for e in log_of(demo, facts.thread_id)
        if isinstance(e, WritesSaved)
        for w in e.writes
    }
    assert {"__interrupt__", "__resume__"} <= channels


def test_time_travel_forks_the_history_at_the_rewound_checkpoint(demo: Demo) -> None:
    facts = demo.report.time_travel
    history = list(demo.saver.list(thread(facts.thread_id, "")))
    children = [
        t
        for t in history
        if t.parent_config and t.parent_config["configurable"]["checkpoint_id"] == facts.fork_point
    ]
    assert len(children) == 2
    assert facts.original_answer == "bot: Your name is Ada."
    assert facts.forked_answer == "bot: Your name is Grace."
    latest = build_chat(demo.saver).get_state(thread(facts.thread_id))
    assert latest.values["messages"][-1] == "bot: Your name is Grace."
    assert "bot: Your name is Ada." not in latest.values["messages"]


def test_subgraph_checkpoints_are_stored_under_their_own_namespace(demo: Demo) -> None:
    facts = demo.report.subgraph
    stored = {
        t.config["configurable"]["checkpoint_ns"] for t in demo.saver.list(thread(facts.thread_id))
    }
    assert stored == set(facts.namespaces)
    (sub_ns,) = [ns for ns in stored if ns]
    assert sub_ns.startswith("research:")
    assert len(list(demo.saver.list(thread(facts.thread_id, sub_ns)))) >= 3
    logged = {
        e.checkpoint_ns for e in log_of(demo, facts.thread_id) if isinstance(e, CheckpointSaved)
    }
    assert logged == {"", sub_ns}
    assert facts.report == "[Solar Panels] Solar Panels grew 12%; Solar Panels has 3 rivals"


def test_parallel_branches_run_in_one_step_and_fan_in(demo: Demo) -> None:
    facts = demo.report.parallel
    assert sorted(facts.fanned_out) == ["news", "weather"]
    assert facts.writers == ["news", "weather"]
    latest = demo.saver.get_tuple(thread(facts.thread_id))
    assert latest is not None
    notes = latest.checkpoint["channel_values"]["notes"]
    assert notes[0] == "trip to Lisbon" and len(notes) == 3
    assert {n.split(" ")[0] for n in notes[1:]} == {"weather", "news"}
    assert latest.checkpoint["channel_values"]["briefing"] == " | ".join(notes)


def test_logs_hold_checkpoint_and_writes_events_and_the_views_match_them(demo: Demo) -> None:
    stored = demo.report.stored
    for thread_id, counts in stored.events.items():
        logged = Counter(e.TYPE for e in log_of(demo, thread_id))
        assert logged == counts
        assert logged["CheckpointSaved"] > 0 and logged["WritesSaved"] > 0
    assert stored.full_docs == sum(c["CheckpointSaved"] for c in stored.events.values())
    latest = {(t, ns) for t, ns, _ in stored.shallow_docs}
    assert latest == {
        ("chat", ""),
        ("approval", ""),
        ("trip", ""),
        ("research", ""),
        *(("research", ns) for ns in demo.report.subgraph.namespaces),
    }
    for thread_id, ns, checkpoint_id in stored.shallow_docs:
        saved = demo.saver.get_tuple(thread(thread_id, ns))
        assert saved is not None and saved.config["configurable"]["checkpoint_id"] == checkpoint_id


def test_cli_demo_runs_the_demo_on_the_given_url(
    redis_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["demo", "--url", redis_url]) == 0
    out = capsys.readouterr().out
    assert all(title in out for title in SECTIONS)


def test_help_explains_the_tool_and_its_demo_command(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--help"]) == 0
    top = capsys.readouterr().out
    assert "event-sourced LangGraph checkpointer" in top and "demo" in top
    assert main(["demo", "--help"]) == 0
    sub = capsys.readouterr().out
    assert "usage: streamsaver demo" in sub and "--url" in sub and "REDIS_URL" in sub


def test_url_defaults_to_the_redis_url_environment_variable(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("REDIS_URL", "redis://example.invalid:6390/3")
    assert build_parser().parse_args(["demo"]).url == "redis://example.invalid:6390/3"
    monkeypatch.delenv("REDIS_URL")
    assert build_parser().parse_args(["demo"]).url is None


def test_usage_errors_and_unreachable_servers_give_exit_codes_not_tracebacks(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main([]) == 2
    assert main(["demo", "--no-such-option"]) == 2
    assert main(["demo", "--url", "redis://127.0.0.1:1/0"]) == 1
    assert "streamsaver: error:" in capsys.readouterr().err


def test_module_and_console_script_entry_points_answer_help() -> None:
    module = subprocess.run(
        [sys.executable, "-m", "streamsaver.demo", "--help"],
        check=False,
        capture_output=True,
        text=True,
    )
    assert module.returncode == 0 and "usage: streamsaver demo" in module.stdout
    script = Path(sys.executable).parent / "streamsaver"
    if not script.exists():
        pytest.skip("the streamsaver console script is not installed next to this interpreter")
    installed = subprocess.run([str(script), "--help"], check=False, capture_output=True, text=True)
    assert installed.returncode == 0 and "demo" in installed.stdout


def test_the_pointer_the_demo_shows_names_an_entry_of_the_thread_log(demo: Demo) -> None:
    match = re.search(r"HGET (\S+) (\S+) -> (\d+-\d+)", demo.output)
    assert match, "the demo shows one pointer of the view into the log"
    ptrs, field, entry_id = match.groups()
    assert demo.client.hget(ptrs, field).decode() == entry_id
    log = demo.saver.core.keys.thread("trip").log
    assert demo.client.xrange(log, entry_id, entry_id), "the pointer names a real log entry"


def test_the_digests_the_demo_says_the_index_queries_are_the_ones_it_indexes(demo: Demo) -> None:
    """The stored-document excerpt names the digest fields the index queries: exactly the
    indexed tag fields that hold digests (schema v4 keeps `ph` in documents, unindexed)."""
    line = next(line for line in demo.output.splitlines() if " are digests of " in line)
    named = set(line.split(" are digests of ")[0].split(" / "))
    indexed = {f["name"] for f in FIELDS if f["type"] == "tag" and not f.get("attrs", {}).get("no_index")}
    assert named == indexed - {"source"}  # `source` holds LangGraph's own word, not a digest
