"""The demo's long-term memory scene: facts told on one thread are found by meaning on another,
for the same user only, and what it reports is what the store holds."""

from __future__ import annotations

import io

import redis

from streamsaver import StreamSaver, StreamStore
from streamsaver.demo.memory_store import ASKED, DIMS, TOLD, WordEmbeddings, long_term_memory
from streamsaver.demo.show import Show


def test_facts_told_on_one_thread_are_recalled_on_another(redis_url: str, prefix: str) -> None:
    client = redis.Redis.from_url(redis_url)
    saver = StreamSaver(client, prefix=prefix)
    saver.setup()
    index = {"dims": DIMS, "embed": WordEmbeddings(), "fields": ["text"]}
    store = StreamStore(client, prefix=prefix, index=index)  # type: ignore[arg-type]
    store.setup()
    facts = long_term_memory(saver, store, Show(io.StringIO()))
    fresh = StreamStore(client, prefix=prefix, index=index)  # type: ignore[arg-type]
    held = sorted(item.value["text"] for item in fresh.search(("users", "ada", "facts"), limit=10))
    assert facts.stored == held == sorted(TOLD) and facts.prefix == prefix
    for question, fact in zip(ASKED, TOLD, strict=True):
        assert facts.answers[question] == f"You told me: {fact}"
    assert facts.other_user_answer == "I do not know that about you yet."
    assert fresh.search(("users", "bob"), limit=10) == []
    threads = {config.config["configurable"]["thread_id"] for config in saver.list(None)}
    assert {"memory-1", "memory-2", "memory-3"} <= threads
