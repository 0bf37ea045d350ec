"""`SemanticRouterMiddleware`: sends a request to a registered handler or model by its similarity to
reference phrases kept in the Store (editable at run time; every edit is a store event, logged)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable, Mapping
from typing import Any

from langchain.agents.middleware import AgentMiddleware, ModelRequest, ModelResponse
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage

from streamsaver.errors import MiddlewareConfigError
from streamsaver.middleware.plumbing import Guard, MiddlewareStats, checked_store, last_human_text, note
from streamsaver.middleware.scope import digest, label
from streamsaver.middleware.vectors import checked_index, checked_threshold, distance

__all__ = ["Route", "SemanticRouterMiddleware"]

Route = BaseChatModel | Callable[[ModelRequest], AIMessage | str]
"""Where a routed request goes: another chat model (the call is made on it), or a function that
answers the request itself (the model is not called)."""
Handler = Callable[[ModelRequest], ModelResponse]


class SemanticRouterMiddleware(AgentMiddleware):
    """Routes each model call whose last human message is within `threshold` (cosine distance) of a
    reference phrase of a route; other calls go to the agent's own model.

    The phrases live in the Store under ``("streamsaver-router", name, route)``: `set_phrases`
    (`aset_phrases`) replaces a route's phrases at run time, as store puts and deletes.

    Args:
        store: a `StreamStore` or `AsyncStreamStore` made with a cosine ``index``.
        routes: route name -> `Route`.
        threshold: the largest cosine distance that routes.
        name: the router's name (its namespace in the Store).

    Raises:
        MiddlewareConfigError: no store or index, wrong dimensions, no routes, a bad threshold.
    """

    def __init__(self, store: Any, routes: Mapping[str, Route], *, threshold: float = 0.2,
                 name: str = "default") -> None:
        super().__init__()
        self.stats = MiddlewareStats()
        self.guard = Guard("SemanticRouterMiddleware", checked_store(store), self.stats)
        checked_index(store, "SemanticRouterMiddleware")
        if not routes or not all(isinstance(r, BaseChatModel) or callable(r) for r in routes.values()):
            raise MiddlewareConfigError("SemanticRouterMiddleware: routes maps names to chat models or functions")
        self.routes = dict(routes)
        self.threshold = checked_threshold(threshold, "SemanticRouterMiddleware")
        self.root = ("streamsaver-router", label(name))
        self.store = store

    def _edits(self, route: str, phrases: Iterable[str], old: list[Any]) -> list[tuple[str, dict[str, Any] | None]]:
        if route not in self.routes:
            raise MiddlewareConfigError(f"SemanticRouterMiddleware: no route named {route!r}")
        new = {digest(p): {"text": p, "route": route} for p in phrases}
        return [*((i.key, None) for i in old if i.key not in new), *new.items()]

    def set_phrases(self, route: str, phrases: Iterable[str]) -> None:
        """Make `phrases` the reference phrases of `route` (raises the store's errors: an edit)."""
        namespace = (*self.root, label(route))
        for key, value in self._edits(route, phrases, self.store.search(namespace, limit=1000)):
            if value is None:
                self.store.delete(namespace, key)
            else:
                self.store.put(namespace, key, value, index=["text"])

    async def aset_phrases(self, route: str, phrases: Iterable[str]) -> None:
        """`set_phrases` with the store's async methods."""
        namespace = (*self.root, label(route))
        for key, value in self._edits(route, phrases, await self.store.asearch(namespace, limit=1000)):
            if value is None:
                await self.store.adelete(namespace, key)
            else:
                await self.store.aput(namespace, key, value, index=["text"])

    def _route(self, found: list[Any]) -> Route | None:
        best = found[0] if found else None
        route = best.value.get("route") if best is not None else None
        if best is None or distance(best.score) > self.threshold or route not in self.routes:
            self.stats.count("misses")
            return None
        self.stats.count("hits")
        note("route", str(route))
        return self.routes[route]

    @staticmethod
    def _answered(route: Route, request: ModelRequest) -> ModelResponse | ModelRequest:
        if isinstance(route, BaseChatModel):
            return request.override(model=route)
        answer = route(request)
        return ModelResponse(result=[answer if isinstance(answer, AIMessage) else AIMessage(content=answer)])

    def wrap_model_call(self, request: ModelRequest, handler: Handler) -> ModelResponse | AIMessage:
        if self.guard.stays_out():
            return handler(request)
        text = last_human_text(request.messages)
        found = [] if text is None else self.guard.search(self.root, text, 1)
        route = self._route(found)
        routed = request if route is None else self._answered(route, request)
        return routed if isinstance(routed, ModelResponse) else handler(routed)

    async def awrap_model_call(
        self, request: ModelRequest, handler: Callable[[ModelRequest], Awaitable[ModelResponse]]
    ) -> ModelResponse | AIMessage:
        text = last_human_text(request.messages)
        found = [] if text is None else await self.guard.asearch(self.root, text, 1)
        route = self._route(found)
        routed = request if route is None else self._answered(route, request)
        return routed if isinstance(routed, ModelResponse) else await handler(routed)
