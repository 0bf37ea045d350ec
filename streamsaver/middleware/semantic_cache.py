"""`SemanticCacheMiddleware`: final answers of the model, served again for a request near in meaning,
within one scope: (tenant or user, model identity, system prompt, tool set)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable
from typing import Any

from langchain.agents.middleware import AgentMiddleware, ModelRequest, ModelResponse
from langchain_core.messages import AIMessage, AnyMessage, HumanMessage, ToolMessage

from streamsaver.middleware.plumbing import Guard, MiddlewareStats, checked_store, context_of, note
from streamsaver.middleware.scope import ScopePolicy, digest
from streamsaver.middleware.tool_cache import checked_ttl
from streamsaver.middleware.vectors import checked_index, checked_threshold, distance

__all__ = ["SemanticCacheMiddleware", "model_identity"]

Handler = Callable[[ModelRequest], ModelResponse]


def model_identity(model: Any) -> str:
    """What tells models apart: the class and the model name it was made with."""
    name = getattr(model, "model_name", None) or getattr(model, "model", None) or getattr(model, "model_id", "")
    return f"{type(model).__module__}.{type(model).__qualname__}:{name}"


def _turn(messages: list[AnyMessage]) -> list[AnyMessage]:
    """The messages after the last human message (this turn's tool calls and results)."""
    for i in range(len(messages) - 1, -1, -1):
        if isinstance(messages[i], HumanMessage):
            return messages[i + 1:]
    return messages


class SemanticCacheMiddleware(AgentMiddleware):
    """Answers the first model call of a turn with a cached final answer when a request of the same
    scope was within `threshold` (cosine distance) of this one.

    The scope is the namespace policy's labels (no tenant or user ever sees another's entries) and a
    digest of the model's identity, the system prompt and the names of the tools, so another model,
    prompt or tool set never hits. Only final answers (no tool calls) are stored, and only when this
    turn used no tool, or only the tools named in `deterministic_tools`. Entries are store items
    under ``(*scope, "llm-cache", digest)``, embedded by the store's own index (its ``embed``),
    expiring `ttl_s` seconds after they were written.

    Args:
        store: a `StreamStore` or `AsyncStreamStore` made with a cosine ``index``.
        threshold: the largest cosine distance that still hits (0.1: near paraphrases).
        ttl_s: seconds an entry lives (None: until erased).
        scope: the namespace policy.
        deterministic_tools: tools whose results do not change: answers built on them are cached.
        model_id: what identifies a model (default `model_identity`).

    Raises:
        MiddlewareConfigError: no store or no index on it, wrong dimensions, a bad threshold or TTL,
            an unknown policy.
    """

    def __init__(self, store: Any, *, threshold: float = 0.1, ttl_s: float | None = 3600,
                 scope: ScopePolicy | str = "user", deterministic_tools: Iterable[str] = (),
                 model_id: Callable[[Any], str] = model_identity) -> None:
        super().__init__()
        self.stats = MiddlewareStats()
        self.guard = Guard("SemanticCacheMiddleware", checked_store(store), self.stats)
        checked_index(store, "SemanticCacheMiddleware")
        self.threshold = checked_threshold(threshold, "SemanticCacheMiddleware")
        self.ttl = checked_ttl(ttl_s)
        self.scope = ScopePolicy.of(scope)
        self.deterministic = frozenset(deterministic_tools)
        self.model_id = model_id

    def namespace(self, request: ModelRequest) -> tuple[str, ...] | None:
        """The namespace of the request's scope; None when the context names no scope."""
        labels = self.scope.labels(context_of(request.runtime))
        if labels is None:
            return None
        system = request.system_message.text if request.system_message is not None else ""
        tools = sorted(t.get("name", "") if isinstance(t, dict) else t.name for t in request.tools)
        return (*labels, "llm-cache", digest(self.model_id(request.model), str(system), *tools))

    def _question(self, request: ModelRequest) -> tuple[tuple[str, ...], str] | None:
        messages = request.messages
        if request.response_format is not None or not messages:
            return None
        namespace = self.namespace(request)
        prompt = next((str(m.text) for m in reversed(messages) if isinstance(m, HumanMessage)), None)
        return None if namespace is None or prompt is None else (namespace, prompt)

    def _answer(self, found: list[Any]) -> ModelResponse | None:
        best = found[0] if found else None
        if best is None or distance(best.score) > self.threshold or not isinstance(best.value.get("answer"), str):
            self.stats.count("misses")
            note("cache", "miss")
            return None
        self.stats.count("hits")
        note("cache", "hit")
        return ModelResponse(result=[AIMessage(content=best.value["answer"],
                                               response_metadata={"streamsaver_cache": "hit"})])

    def _entry(self, request: ModelRequest, response: Any, prompt: str) -> dict[str, Any] | None:
        result = getattr(response, "result", None)
        last = result[-1] if result else None
        if not isinstance(last, AIMessage) or last.tool_calls or not isinstance(last.content, str):
            return None
        used = {m.name for m in _turn(request.messages) if isinstance(m, ToolMessage)}
        if not used <= self.deterministic:
            return None
        return {"prompt": prompt, "answer": last.content}

    def wrap_model_call(self, request: ModelRequest, handler: Handler) -> ModelResponse | AIMessage:
        if self.guard.stays_out():
            return handler(request)
        question = self._question(request)
        if question is None:
            self.stats.count("skipped")
            return handler(request)
        namespace, prompt = question
        if isinstance(request.messages[-1], HumanMessage):
            found = self.guard.search(namespace, prompt, 1)
            answer = self._answer(found)
            if answer is not None:
                return answer
        response = handler(request)
        entry = self._entry(request, response, prompt)
        if entry is not None:
            key = digest(prompt)
            self.guard.write(lambda s: s.put(namespace, key, entry, index=["prompt"], ttl=self.ttl))
        return response

    async def awrap_model_call(
        self, request: ModelRequest, handler: Callable[[ModelRequest], Awaitable[ModelResponse]]
    ) -> ModelResponse | AIMessage:
        question = self._question(request)
        if question is None:
            self.stats.count("skipped")
            return await handler(request)
        namespace, prompt = question
        if isinstance(request.messages[-1], HumanMessage):
            found = await self.guard.asearch(namespace, prompt, 1)
            answer = self._answer(found)
            if answer is not None:
                return answer
        response = await handler(request)
        entry = self._entry(request, response, prompt)
        if entry is not None:
            key = digest(prompt)
            await self.guard.awrite(lambda s: s.aput(namespace, key, entry, index=["prompt"], ttl=self.ttl))
        return response
