"""`ToolCacheMiddleware`: an exact cache of tool results in the Store, keyed by the tool's name
and its canonical arguments, within the caller's scope (tenant or user)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import orjson
from langchain.agents.middleware import AgentMiddleware
from langchain_core.messages import ToolMessage
from langgraph.prebuilt.tool_node import ToolCallRequest
from langgraph.types import Command

from streamsaver.errors import MiddlewareConfigError
from streamsaver.middleware.cacheability import ToolCachePolicy
from streamsaver.middleware.plumbing import Guard, MiddlewareStats, checked_store, context_of, note
from streamsaver.middleware.scope import ScopePolicy, digest, label

__all__ = ["ToolCacheMiddleware", "ToolCachePolicy", "canonical_args", "checked_ttl"]

Result = ToolMessage | Command[Any]


def canonical_args(args: Any) -> str:
    """The arguments as canonical JSON (keys sorted): equal arguments, equal text."""
    return orjson.dumps(args, option=orjson.OPT_SORT_KEYS | orjson.OPT_NON_STR_KEYS, default=str).decode()


def checked_ttl(ttl_s: float | None) -> float | None:
    """`ttl_s` seconds as the Store's minutes (None: never expires).

    Raises:
        MiddlewareConfigError: not a positive number.
    """
    if ttl_s is None:
        return None
    if isinstance(ttl_s, bool) or not isinstance(ttl_s, (int, float)) or ttl_s <= 0:
        raise MiddlewareConfigError(f"ttl_s is a positive number of seconds or None, not {ttl_s!r}")
    return ttl_s / 60


class ToolCacheMiddleware(AgentMiddleware):
    """Answers a repeated tool call from the Store instead of running the tool.

    A call is looked up when `policy` finds it cacheable (`ToolCachePolicy`) and the runtime
    context names its scope; a result is stored only when the tool returned a ``ToolMessage``
    whose status is not ``"error"``: a tool that raised is never cached. Entries live under
    ``(*scope, "tool-cache", tool)`` keyed by a digest of the canonical arguments, expire `ttl_s`
    seconds after they were written (reads do not renew them), and are store events like any
    other put (audited, erased with the scope's ``purge``).

    Args:
        store: a `StreamStore` or `AsyncStreamStore`.
        ttl_s: seconds an entry lives (None: until erased).
        policy: the cacheability rules.
        scope: the namespace policy (``"user"``, ``"tenant"``, ``"tenant+user"`` or a `ScopePolicy`).

    Raises:
        MiddlewareConfigError: no store, a bad TTL, an unknown policy.
    """

    def __init__(self, store: Any, *, ttl_s: float | None = 3600, policy: ToolCachePolicy | None = None,
                 scope: ScopePolicy | str = "user") -> None:
        super().__init__()
        self.stats = MiddlewareStats()
        self.guard = Guard("ToolCacheMiddleware", checked_store(store), self.stats)
        self.ttl = checked_ttl(ttl_s)
        self.policy = policy or ToolCachePolicy()
        self.scope = ScopePolicy.of(scope)

    def address(self, request: ToolCallRequest) -> tuple[tuple[str, ...], str] | None:
        """The (namespace, key) of the call's entry; None when it is not to be cached."""
        call = request.tool_call
        name, args = call["name"], call.get("args") or {}
        labels = self.scope.labels(context_of(request.runtime))
        if labels is None or not self.policy.cacheable(name, args, request.tool):
            return None
        return (*labels, "tool-cache", label(name)), digest(name, canonical_args(args))

    def _hit(self, item: Any, request: ToolCallRequest) -> ToolMessage | None:
        value = item.value if item is not None else None
        if not isinstance(value, dict) or "content" not in value:
            self.stats.count("misses")
            note("cache", "miss")
            return None
        self.stats.count("hits")
        note("cache", "hit")
        return ToolMessage(content=value["content"], tool_call_id=request.tool_call["id"] or "",
                           name=request.tool_call["name"], response_metadata={"streamsaver_cache": "hit"})

    @staticmethod
    def _entry(result: Result) -> dict[str, Any] | None:
        if not isinstance(result, ToolMessage) or result.status == "error":
            return None
        return {"content": result.content}

    def wrap_tool_call(self, request: ToolCallRequest, handler: Callable[[ToolCallRequest], Result]) -> Result:
        if self.guard.stays_out():
            return handler(request)
        address = self.address(request)
        if address is None:
            self.stats.count("skipped")
            return handler(request)
        namespace, key = address
        hit = self._hit(self.guard.run(lambda s: s.get(namespace, key, refresh_ttl=False), None), request)
        if hit is not None:
            return hit
        result = handler(request)
        entry = self._entry(result)
        if entry is not None:
            self.guard.write(lambda s: s.put(namespace, key, entry, index=False, ttl=self.ttl))
        return result

    async def awrap_tool_call(
        self, request: ToolCallRequest, handler: Callable[[ToolCallRequest], Awaitable[Result]]
    ) -> Result:
        address = self.address(request)
        if address is None:
            self.stats.count("skipped")
            return await handler(request)
        namespace, key = address
        hit = self._hit(await self.guard.arun(lambda s: s.aget(namespace, key, refresh_ttl=False), None), request)
        if hit is not None:
            return hit
        result = await handler(request)
        entry = self._entry(result)
        if entry is not None:
            await self.guard.awrite(lambda s: s.aput(namespace, key, entry, index=False, ttl=self.ttl))
        return result
