"""`StoreMemoryMiddleware`: the user's memories from the Store, injected into the system message of
each model call; new facts optionally written back as store puts (events: audited, erasable)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable
from functools import partial
from typing import Any

from langchain.agents.middleware import AgentMiddleware, ModelRequest, ModelResponse
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage
from langgraph.store.base import BaseStore

from streamsaver.errors import MiddlewareConfigError
from streamsaver.middleware.plumbing import Guard, MiddlewareStats, checked_store, context_of, last_human_text, note
from streamsaver.middleware.scope import ScopePolicy, digest
from streamsaver.middleware.tool_cache import checked_ttl
from streamsaver.middleware.vectors import checked_index, checked_threshold, distance

__all__ = ["StoreMemoryMiddleware"]

Handler = Callable[[ModelRequest], ModelResponse]
HEADER = "What you remember about this user:"


def _put(store: BaseStore, *, namespace: tuple[str, ...], key: str, value: dict[str, Any], ttl: float | None) -> None:
    store.put(namespace, key, value, index=["text"], ttl=ttl)


async def _aput(store: BaseStore, *, namespace: tuple[str, ...], key: str, value: dict[str, Any],
                ttl: float | None) -> None:
    await store.aput(namespace, key, value, index=["text"], ttl=ttl)


class StoreMemoryMiddleware(AgentMiddleware):
    """Before each model call, searches ``(*scope, "memories")`` for the last human message and
    adds the `limit` nearest memories (those within `threshold`, a cosine distance) to the system
    message. A memory is an item whose value has a ``"text"``; `remember` (a function of the human
    message's text giving the facts to keep) writes each fact back as a put, once per turn.

    Args:
        store: a `StreamStore` or `AsyncStreamStore` made with a cosine ``index``.
        scope: the namespace policy (whose memories).
        limit: the most memories injected.
        threshold: the largest cosine distance of an injected memory.
        remember: facts to write back from a human message (None: read only).
        ttl_s: seconds a written fact lives (None: until erased).

    Raises:
        MiddlewareConfigError: no store or index, wrong dimensions, a bad limit, threshold or TTL.
    """

    def __init__(self, store: Any, *, scope: ScopePolicy | str = "user", limit: int = 3, threshold: float = 0.6,
                 remember: Callable[[str], Iterable[str]] | None = None, ttl_s: float | None = None) -> None:
        super().__init__()
        self.stats = MiddlewareStats()
        self.guard = Guard("StoreMemoryMiddleware", checked_store(store), self.stats)
        checked_index(store, "StoreMemoryMiddleware")
        if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
            raise MiddlewareConfigError(f"StoreMemoryMiddleware: limit is a positive int, not {limit!r}")
        self.limit, self.remember = limit, remember
        self.threshold = checked_threshold(threshold, "StoreMemoryMiddleware")
        self.ttl = checked_ttl(ttl_s)
        self.scope = ScopePolicy.of(scope)

    def _query(self, request: ModelRequest) -> tuple[tuple[str, ...], str] | None:
        labels = self.scope.labels(context_of(request.runtime))
        text = last_human_text(request.messages)
        return None if labels is None or text is None else ((*labels, "memories"), text)

    def _inject(self, request: ModelRequest, found: list[Any]) -> ModelRequest:
        texts = [str(i.value["text"]) for i in found
                 if distance(i.score) <= self.threshold and isinstance(i.value.get("text"), str)]
        if not texts:
            self.stats.count("misses")
            return request
        self.stats.count("hits")
        note("memories", str(len(texts)))
        base = str(request.system_message.text) + "\n\n" if request.system_message is not None else ""
        block = "\n".join(f"- {t}" for t in texts)
        return request.override(system_message=SystemMessage(content=f"{base}{HEADER}\n{block}"))

    def _facts(self, request: ModelRequest, text: str) -> list[tuple[str, dict[str, Any]]]:
        if self.remember is None or not isinstance(request.messages[-1], HumanMessage):
            return []
        return [(digest(fact), {"text": fact}) for fact in self.remember(text) if fact]

    def wrap_model_call(self, request: ModelRequest, handler: Handler) -> ModelResponse | AIMessage:
        if self.guard.stays_out():
            return handler(request)
        query = self._query(request)
        if query is None:
            self.stats.count("skipped")
            return handler(request)
        namespace, text = query
        found = self.guard.search(namespace, text, self.limit)
        response = handler(self._inject(request, found))
        for key, value in self._facts(request, text):
            self.guard.write(partial(_put, namespace=namespace, key=key, value=value, ttl=self.ttl))
        return response

    async def awrap_model_call(
        self, request: ModelRequest, handler: Callable[[ModelRequest], Awaitable[ModelResponse]]
    ) -> ModelResponse | AIMessage:
        query = self._query(request)
        if query is None:
            self.stats.count("skipped")
            return await handler(request)
        namespace, text = query
        found = await self.guard.asearch(namespace, text, self.limit)
        response = await handler(self._inject(request, found))
        for key, value in self._facts(request, text):
            await self.guard.awrite(partial(_aput, namespace=namespace, key=key, value=value, ttl=self.ttl))
        return response
