"""The demo's long-term memory scene: an agent that remembers facts about a user across threads
through `StreamStore`, with a deterministic embedding (no model download, no network).

The agent (one LangGraph node, no LLM) saves every user line that states a fact (``I like ...``,
``my ... is ...``) in the store under ``("users", <user_id>, "facts")``, and answers a question
by searching that namespace by meaning: the fact nearest the question. The user's id comes from
the run's config (``configurable.user_id``), the thread's from ``thread_id``: facts told on one
thread are found on another, never by another user.
"""

from __future__ import annotations

import hashlib
import math
import re
import uuid
from dataclasses import dataclass
from typing import Any

from langchain_core.embeddings import Embeddings
from langchain_core.runnables import RunnableConfig
from langgraph.graph import START, StateGraph
from langgraph.graph.state import CompiledStateGraph
from langgraph.store.base import BaseStore

from streamsaver.demo.graphs import ChatState, Saver
from streamsaver.demo.show import Show
from streamsaver.memory.sync import StreamStore

__all__ = ["DIMS", "MemoryStoreFacts", "WordEmbeddings", "build_memory_agent", "long_term_memory"]

DIMS = 64
_FACT = re.compile(r"^(i like|i love|i live|i work|my \w+ is|my \w+ are)\b", re.IGNORECASE)
_STOP = frozenset({"i", "my", "is", "are", "a", "an", "the", "do", "what", "to", "of", "me", "you", "who", "where"})


class WordEmbeddings(Embeddings):
    """A deterministic bag-of-words embedding: each word (stop words left out, a plural's ``s``
    dropped) hashed to one of `DIMS` dimensions, the vector normalised. Texts that share words
    are near; no download."""

    def _vector(self, text: str) -> list[float]:
        vector = [0.0] * DIMS
        for word in re.findall(r"[a-z]+", text.lower()):
            if word not in _STOP:
                stem = word[:-1] if word.endswith("s") and len(word) > 3 else word
                vector[int.from_bytes(hashlib.blake2b(stem.encode(), digest_size=4).digest(), "big") % DIMS] += 1.0
        norm = math.sqrt(sum(x * x for x in vector)) or 1.0
        return [x / norm for x in vector]

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return [self._vector(text) for text in texts]

    def embed_query(self, text: str) -> list[float]:
        return self._vector(text)


def _remember_or_recall(state: ChatState, config: RunnableConfig, *, store: BaseStore) -> dict[str, Any]:
    user = config["configurable"]["user_id"]
    line = state["messages"][-1].removeprefix("user: ")
    facts = ("users", user, "facts")
    if _FACT.match(line):
        store.put(facts, uuid.uuid4().hex[:8], {"text": line})
        return {"messages": ["bot: I will remember that."]}
    found = store.search(facts, query=line, limit=1)
    if not found or not found[0].score:
        return {"messages": ["bot: I do not know that about you yet."]}
    return {"messages": [f"bot: You told me: {found[0].value['text']}"]}


def build_memory_agent(saver: Saver, store: BaseStore) -> CompiledStateGraph[Any, Any, Any, Any]:
    """One ``agent`` node that saves a user's facts in `store` and answers from them."""
    builder = StateGraph(ChatState)
    builder.add_node("agent", _remember_or_recall)
    builder.add_edge(START, "agent")
    return builder.compile(checkpointer=saver, store=store)


@dataclass(frozen=True)
class MemoryStoreFacts:
    """The long-term memory scene: the facts the store holds for the user, the answers on a new
    thread, and the answer another user gets to the same question."""

    user_id: str
    prefix: str
    """The key prefix of the scene's saver and store."""
    stored: list[str]
    answers: dict[str, str]
    other_user_answer: str


TOLD = ("I like green tea.", "My dog is called Rex.", "I live in Lisbon.")
ASKED = ("What do I like to drink?", "What is my dog called?", "Where do I live?")
"""Questions about `TOLD`, in its order."""


def _say(graph: CompiledStateGraph[Any, Any, Any, Any], user: str, thread: str, line: str) -> str:
    config: RunnableConfig = {"configurable": {"thread_id": thread, "user_id": user}}
    return str(graph.invoke({"messages": [f"user: {line}"]}, config)["messages"][-1]).removeprefix("bot: ")


def long_term_memory(saver: Saver, store: BaseStore, show: Show) -> MemoryStoreFacts:
    """Tell the agent facts on one thread, ask about them on another, and as another user."""
    show.title("Long-term memory: facts about a user, across threads (StreamStore)")
    graph, user = build_memory_agent(saver, store), "ada"
    for line in TOLD:
        _say(graph, user, "memory-1", line)
    show.say(f"Thread 'memory-1', user {user!r}: told {len(TOLD)} facts; each is an ItemPut in the store's log.")
    answers = {line: _say(graph, user, "memory-2", line) for line in ASKED}
    show.say("Thread 'memory-2' (new), same user: asked by meaning (search(query=...), deterministic embedding).")
    show.table(["question", "answer"], answers.items())
    other = _say(graph, "bob", "memory-3", ASKED[0])
    show.say(f"User 'bob' asks {ASKED[0]!r}: {other}")
    stored = sorted(item.value["text"] for item in store.search(("users", user, "facts"), limit=10))
    if isinstance(store, StreamStore):
        show.say(f"Its saver and store write under {store.core.prefix + ':*'!r}.")
    return MemoryStoreFacts(user, store.core.prefix if isinstance(store, StreamStore) else "", stored, answers, other)
