"""Output that fits: ``inspect`` within the terminal's width, with the append time and the last
message of each checkpoint, ``--limit``; ``tail --thread/--type/--json``. Run as the real
commands against the embedded server."""

from __future__ import annotations

import json
from typing import Annotated, Any

import pytest
import redis
from langchain_core.messages import AIMessage, AnyMessage, HumanMessage
from langgraph.graph import START, StateGraph
from langgraph.graph.message import add_messages
from typing_extensions import TypedDict

from streamsaver import StreamSaver
from streamsaver.cli.commands._table import fitted_widths, table
from streamsaver.cli.main import main
from streamsaver.ops.preview import entry_time


class Chat(TypedDict):
    messages: Annotated[list[AnyMessage], add_messages]


def _reply(state: Chat) -> dict[str, Any]:
    return {"messages": [AIMessage(f"answer number {len(state['messages'])} " + "with many words " * 8)]}


@pytest.mark.parametrize("deltas", [True, False], ids=["deltas", "full-values"])
def test_inspect_shows_time_and_last_message_and_fits_the_terminal(
    deltas: bool, client: redis.Redis, prefix: str, redis_url: str, capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    saver = StreamSaver(client, prefix=prefix, deltas=deltas)
    saver.setup()
    graph = StateGraph(Chat).add_node("reply", _reply).add_edge(START, "reply").compile(checkpointer=saver)
    thread = {"configurable": {"thread_id": "chat"}}
    for text in ("first question", "second question", "third question"):
        graph.invoke({"messages": [HumanMessage(text)]}, thread)  # type: ignore[arg-type]
    monkeypatch.setattr("streamsaver.cli.commands.inspect.terminal_width", lambda: 120)

    assert main(["inspect", "chat", "--url", redis_url, "--prefix", prefix]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert main(["inspect", "chat", "--limit", "2", "--json", "--url", redis_url, "--prefix", prefix]) == 0
    rows = json.loads(capsys.readouterr().out)

    assert all(len(line) <= 120 for line in lines) and "last message" in lines[0]
    assert lines[-1].startswith("times are UTC, on 20")
    assert len(rows) == 2 and rows[-1]["preview"].startswith("ai: answer number 5 with many words")
    assert rows[0]["preview"] == "human: third question"
    assert rows[-1]["time"] == entry_time(rows[-1]["entry_id"]) and rows[-1]["time"][:2] == "20"
    assert any("ai: answer" in line for line in lines)


def test_a_table_narrows_its_widest_columns_first_and_keeps_narrow_ones() -> None:
    widths = fitted_widths([4, 60, 30, 8], ["step", "preview", "writes", "bytes"], 60)
    text = table(["step", "preview"], [[1, "x" * 80]], width=30)

    assert sum(widths) + 2 * 3 <= 60 and widths[0] == 4 and widths[3] == 8
    assert all(len(line) <= 30 for line in text.splitlines()) and text.splitlines()[2].endswith("...")
    assert table(["a"], [["y" * 70]], width=None).splitlines()[2] == "y" * 45 + "..."  # max_width 48


def test_tail_follows_only_the_threads_and_types_asked_for(
    client: redis.Redis, prefix: str, redis_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    from helpers import config, new_checkpoint

    saver = StreamSaver(client, prefix=prefix)
    saver.setup()
    for thread in ("a", "b", "a"):
        checkpoint, versions = new_checkpoint({"n": 1})
        saved = saver.put(config(thread), checkpoint, {"step": 1}, versions)
        saver.put_writes(saved, [("n", 2)], "task")
    base = ["tail", "--from-start", "--json", "--url", redis_url, "--prefix", prefix]

    assert main([*base, "--thread", "a", "--type", "WritesSaved", "--count", "2"]) == 0
    events = [json.loads(line) for line in capsys.readouterr().out.splitlines()]

    assert [(e["thread"], e["type"]) for e in events] == [("a", "WritesSaved"), ("a", "WritesSaved")]
