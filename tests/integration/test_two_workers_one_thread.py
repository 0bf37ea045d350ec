"""Two workers on one thread, with a real graph: worker A freezes inside its model call, worker B
resumes the thread and finishes, then A thaws and writes.

Each worker is its own saver on its own client (two processes, as far as Redis can tell). Through
claimed writers (`claim_write_ownership`), B's answer stays the thread's tip and A's graph fails
with `StaleWriteOwnerError`; with plain savers (the control) A's late checkpoint becomes the tip
and B's answer is lost while both report success, which is what the fence exists to prevent.
"""

from __future__ import annotations

import threading
import uuid
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any, TypedDict

import pytest
import redis
from langchain_core.runnables import RunnableConfig
from langgraph.graph import END, START, StateGraph
from langgraph.pregel import Pregel

from streamsaver import StreamSaver
from streamsaver.errors import StaleWriteOwnerError


class State(TypedDict, total=False):
    question: str
    answer: str


def graph(model: Callable[[State], State], checkpointer: Any) -> Pregel:
    builder = StateGraph(State)
    builder.add_node("model", model)
    builder.add_edge(START, "model")
    builder.add_edge("model", END)
    return builder.compile(checkpointer=checkpointer, interrupt_before=["model"])


@pytest.fixture
def workers(redis_url: str, prefix: str) -> Iterator[tuple[StreamSaver, StreamSaver]]:
    clients = [redis.Redis.from_url(redis_url), redis.Redis.from_url(redis_url)]
    savers = (StreamSaver(clients[0], prefix=prefix), StreamSaver(clients[1], prefix=prefix))
    savers[0].setup()
    yield savers
    for client in clients:
        client.close()


def run_frozen_worker(
    saver: StreamSaver, fenced: bool, config: RunnableConfig
) -> tuple[Future[Any], threading.Event, threading.Event, ThreadPoolExecutor]:
    """Worker A resumes the thread; its model call signals `frozen` and waits for `thaw`."""
    frozen, thaw = threading.Event(), threading.Event()

    def slow_model(state: State) -> State:
        frozen.set()
        thaw.wait()
        return {"answer": "A's answer"}

    writer = saver.claim_write_ownership(config["configurable"]["thread_id"]) if fenced else saver
    pool = ThreadPoolExecutor(1)
    run = pool.submit(graph(slow_model, writer).invoke, None, config, durability="sync")
    return run, frozen, thaw, pool


def two_workers(workers: tuple[StreamSaver, StreamSaver], fenced: bool) -> tuple[RunnableConfig, Future[Any], Any]:
    saver_a, saver_b = workers
    config: RunnableConfig = {"configurable": {"thread_id": f"chat-{uuid.uuid4().hex[:8]}"}}
    asked = saver_b.claim_write_ownership(config["configurable"]["thread_id"]) if fenced else saver_b
    graph(lambda s: {"answer": "never"}, asked).invoke({"question": "q"}, config, durability="sync")

    run_a, frozen, thaw, pool = run_frozen_worker(saver_a, fenced, config)
    assert frozen.wait(60), "worker A never reached its model call"
    writer_b = saver_b.claim_write_ownership(config["configurable"]["thread_id"]) if fenced else saver_b
    answer_b = graph(lambda s: {"answer": "B's answer"}, writer_b).invoke(None, config, durability="sync")
    thaw.set()
    pool.shutdown(wait=True)
    return config, run_a, answer_b


def test_a_thawed_superseded_worker_is_refused_and_the_new_owners_answer_stays(
    workers: tuple[StreamSaver, StreamSaver],
) -> None:
    config, run_a, answer_b = two_workers(workers, fenced=True)

    with pytest.raises(StaleWriteOwnerError):
        run_a.result()
    assert answer_b["answer"] == "B's answer"
    reader = workers[0]
    tip = reader.get_tuple(config)
    assert tip is not None and tip.checkpoint["channel_values"]["answer"] == "B's answer"
    history = list(reader.list(config))
    assert "A's answer" not in [t.checkpoint["channel_values"].get("answer") for t in history]
    assert "A's answer" not in [write[2] for t in history for write in t.pending_writes or []]


def test_control_without_claims_the_late_worker_forks_the_chain_and_wins(
    workers: tuple[StreamSaver, StreamSaver],
) -> None:
    """What happens without the fence: both succeed, and the thread answers with A's stale run."""
    config, run_a, answer_b = two_workers(workers, fenced=False)

    assert run_a.result()["answer"] == "A's answer"
    assert answer_b["answer"] == "B's answer"
    tip = workers[0].get_tuple(config)
    assert tip is not None and tip.checkpoint["channel_values"]["answer"] == "A's answer"
