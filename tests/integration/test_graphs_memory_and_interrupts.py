"""Real LangGraph graphs keep a conversation per thread and pause for a human, on every saver.

Each test runs over sync/async x full/shallow (see `graph_harness`); where a final value is
asserted, the same graph and inputs on ``InMemorySaver`` give the same value.
"""

from __future__ import annotations

import asyncio
import operator
from typing import Annotated, Any, TypedDict

import redis.asyncio
from graph_harness import Driver, Harness, harness_fixture, kind_fixture, thread, view_fixture  # noqa: F401
from langgraph.checkpoint.base import empty_checkpoint
from langgraph.graph import END, START, StateGraph
from langgraph.types import Command, interrupt

from streamsaver import AsyncStreamSaver


class Chat(TypedDict):
    messages: Annotated[list[str], operator.add]


class Review(TypedDict):
    messages: Annotated[list[str], operator.add]
    approved: str


def echo_graph() -> StateGraph:
    """One node answering the last message: every turn adds the input and ``echo:<input>``."""

    def reply(state: Chat) -> dict[str, Any]:
        return {"messages": [f"echo:{state['messages'][-1]}"]}

    graph = StateGraph(Chat)
    graph.add_node("reply", reply)
    graph.add_edge(START, "reply")
    graph.add_edge("reply", END)
    return graph


QUESTION = {"question": "publish?", "draft": "draft"}


def review_graph() -> StateGraph:
    """``draft`` writes a draft; ``review`` asks a human (`interrupt`) and records the answer."""

    def draft(state: Review) -> dict[str, Any]:
        return {"messages": ["draft"]}

    def review(state: Review) -> dict[str, Any]:
        answer = interrupt({"question": "publish?", "draft": state["messages"][-1]})
        return {"approved": answer, "messages": [f"published:{answer}"]}

    graph = StateGraph(Review)
    graph.add_node("draft", draft)
    graph.add_node("review", review)
    graph.add_edge(START, "draft")
    graph.add_edge("draft", "review")
    graph.add_edge("review", END)
    return graph


async def chat(driver: Driver, turns: dict[str, list[str]]) -> dict[str, list[str]]:
    """Play `turns` (thread id -> its inputs, turn by turn); the final messages of each thread."""
    final = {}
    for thread_id, inputs in turns.items():
        for text in inputs:
            final[thread_id] = (await driver.invoke({"messages": [text]}, thread(thread_id)))["messages"]
    return final


async def test_turns_on_one_thread_accumulate_and_other_threads_stay_apart(h: Harness) -> None:
    driver = await h.driver(echo_graph)
    turns = {"alice": ["hi", "again"], "bob": ["other"]}

    final = await chat(driver, turns)

    assert final == {
        "alice": ["hi", "echo:hi", "again", "echo:again"],
        "bob": ["other", "echo:other"],
    }
    assert final == await chat(h.reference(echo_graph), turns)
    assert (await driver.state(thread("alice"))).values["messages"] == final["alice"]
    assert (await driver.state(thread("bob"))).values["messages"] == final["bob"]


async def test_a_new_saver_continues_the_conversation_from_redis(h: Harness) -> None:
    reference = h.reference(echo_graph)
    await chat(await h.driver(echo_graph), {"alice": ["hi"]})
    await chat(reference, {"alice": ["hi", "again"]})

    later = await h.driver(echo_graph, await h.new_saver())
    final = await chat(later, {"alice": ["again"]})

    assert final["alice"] == ["hi", "echo:hi", "again", "echo:again"]
    state, expected = await later.state(thread("alice")), await reference.state(thread("alice"))
    assert (state.values, state.metadata["step"]) == (expected.values, expected.metadata["step"])


async def test_an_interrupt_stops_the_run_and_a_resume_completes_it(h: Harness) -> None:
    driver, reference = await h.driver(review_graph), h.reference(review_graph)
    config = thread()

    for d in (driver, reference):
        stopped = await d.invoke({"messages": ["start"]}, config)
        assert [i.value for i in stopped["__interrupt__"]] == [QUESTION]
        assert stopped["messages"] == ["start", "draft"]

    paused = await driver.state(config)
    assert paused.next == ("review",)
    assert [i.value for task in paused.tasks for i in task.interrupts] == [QUESTION]
    assert [i.value for i in paused.interrupts] == [QUESTION]
    assert paused.values == (await reference.state(config)).values

    done = await driver.invoke(Command(resume="yes"), config)

    assert done == {"messages": ["start", "draft", "published:yes"], "approved": "yes"}
    assert done == await reference.invoke(Command(resume="yes"), config)
    after = await driver.state(config)
    assert (after.next, after.tasks, after.interrupts) == ((), (), ())


async def test_a_paused_run_resumes_from_a_new_saver_on_the_same_prefix(h: Harness) -> None:
    config = thread()
    first = await h.driver(review_graph)
    await first.invoke({"messages": ["start"]}, config)

    second = await h.driver(review_graph, await h.new_saver())
    paused = await second.state(config)
    assert paused.next == ("review",)
    assert [i.value for task in paused.tasks for i in task.interrupts] == [QUESTION]

    done = await second.invoke(Command(resume="no"), config)

    assert done == {"messages": ["start", "draft", "published:no"], "approved": "no"}
    assert (await first.state(config)).values == done
    elsewhere = await h.driver(review_graph, await h.new_saver(prefix=f"{h.prefix}x"))
    assert (await elsewhere.state(config)).values == {}


async def test_writes_saved_before_their_checkpoint_are_kept_with_it(h: Harness) -> None:
    """LangGraph saves a step's writes concurrently with the step's checkpoint, so a saver may
    get them first (the interrupt of a paused run often comes so). Here that order, made fixed."""
    saver = await h.new_saver()

    async def call(method: str, *args: Any) -> Any:
        if h.is_async:
            return await getattr(saver, f"a{method}")(*args)
        return getattr(saver, method)(*args)

    first, second = empty_checkpoint(), empty_checkpoint()
    root: Any = {"configurable": {"thread_id": "early", "checkpoint_ns": ""}}
    first_config = await call("put", root, first, {"source": "loop", "step": 0}, {})
    await call("put_writes", first_config, [("ch", "of first")], "task1")
    second_config = {"configurable": {**first_config["configurable"], "checkpoint_id": second["id"]}}

    await call("put_writes", second_config, [("ch", "of second")], "task2")

    held = await call("get_tuple", root)
    assert held.config == first_config
    assert held.pending_writes == ([("task1", "ch", "of first")] if h.view == "full" else [])

    await call("put", first_config, second, {"source": "loop", "step": 1}, {})

    latest = await call("get_tuple", root)
    assert latest.config == second_config
    assert latest.pending_writes == [("task2", "ch", "of second")]


async def test_history_holds_every_checkpoint_in_full_and_only_the_latest_in_shallow(h: Harness) -> None:
    driver, reference = await h.driver(echo_graph), h.reference(echo_graph)
    config = thread()
    for d in (driver, reference):
        await chat(d, {config["configurable"]["thread_id"]: ["hi", "again"]})

    history = await driver.history(config)
    latest = await driver.state(config)

    if h.view == "full":
        expected = await reference.history(config)
        assert [(s.metadata["step"], s.values) for s in history] == [
            (s.metadata["step"], s.values) for s in expected
        ]
    else:
        assert len(history) == 1
    assert history[0].config == latest.config
    assert history[0].values == {"messages": ["hi", "echo:hi", "again", "echo:again"]}


async def test_64_concurrent_threads_each_keep_exactly_their_own_messages(
    redis_url: str, prefix: str, view: str
) -> None:
    client = redis.asyncio.Redis.from_url(redis_url)  # default settings: the pool holds 100
    try:
        saver = AsyncStreamSaver(client, view=view, prefix=prefix)  # set up lazily, by 64 at once
        driver = Driver(echo_graph().compile(checkpointer=saver), saver, is_async=True)
        names = [f"user{i}" for i in range(64)]

        async def converse(name: str) -> list[str]:
            turns = {name: [f"{name}/{turn}" for turn in range(3)]}
            return (await chat(driver, turns))[name]

        finals = await asyncio.gather(*(converse(n) for n in names))

        for name, final in zip(names, finals, strict=True):
            assert final == [m for t in range(3) for m in (f"{name}/{t}", f"echo:{name}/{t}")]
            assert (await driver.state(thread(name))).values["messages"] == final
    finally:
        await client.aclose()
