"""`AuditMiddleware`: every model and tool call of an agent becomes an event in the thread's audit
stream, beside its thread log (same partition, same hash tag), and a copy in the partition's audit
feed that consumer groups follow (an audit and cost feed).

The audit stream is a stream of its own (``P:audit:{pN}:thread``, feed ``P:afeed:{pN}``), not a new
event kind in the thread log: the thread log's readers (projectors, replay, verify, the history
scripts) stay unchanged and byte-identical. One event is one round trip (a MULTI/EXEC of two XADDs).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from langchain.agents.middleware import AgentMiddleware, ModelRequest, ModelResponse
from langgraph.config import get_config
from langgraph.prebuilt.tool_node import ToolCallRequest
from redis.asyncio import Redis as AsyncRedis

from streamsaver.errors import MiddlewareConfigError
from streamsaver.middleware.audit_record import MODEL_CALLED, TOOL_CALLED, messages_form, record
from streamsaver.middleware.plumbing import CALL_NOTES, FAILURES, MiddlewareStats, log
from streamsaver.middleware.semantic_cache import model_identity

__all__ = ["AuditMiddleware", "erase_audit", "read_audit"]

R = TypeVar("R")
FEED_MAXLEN = 100_000
"""The audit feed keeps about this many recent events per partition (the thread streams keep all)."""


def _model_thread(request: ModelRequest) -> str | None:
    info = getattr(request.runtime, "execution_info", None)
    thread = getattr(info, "thread_id", None)
    if thread is None:
        try:
            thread = get_config().get("configurable", {}).get("thread_id")
        except RuntimeError:
            return None
    return str(thread) if thread is not None else None


def _tool_thread(request: ToolCallRequest) -> str | None:
    config = getattr(request.runtime, "config", None) or {}
    thread = config.get("configurable", {}).get("thread_id")
    return str(thread) if thread is not None else None


class AuditMiddleware(AgentMiddleware):
    """Records each model and tool call (hashed input, sizes, latency, cache hit or miss, route,
    error) in its thread's audit stream. Put it first in ``middleware=[...]`` so it sees what the
    caches and the router inside it did. A call outside a thread (no ``thread_id``) is not recorded;
    a failed write is logged and counted (`stats.errors`), never raised.

    Args:
        saver: the agent's `StreamSaver` or `AsyncStreamSaver`, set up (its client and keys: no
            second pool). A sync saver serves ``invoke`` and ``ainvoke``; an async one ``ainvoke``.

    Raises:
        MiddlewareConfigError: not a streamsaver saver.
    """

    def __init__(self, saver: Any) -> None:
        super().__init__()
        if not hasattr(saver, "redis") or not hasattr(getattr(saver, "core", None), "keys"):
            raise MiddlewareConfigError(f"AuditMiddleware needs a streamsaver saver, not {type(saver).__name__}")
        self.saver = saver
        self.stats = MiddlewareStats()
        self.is_async = isinstance(saver.redis, AsyncRedis)

    def _queue(self, pipe: Any, fields: dict[str, str]) -> Any:
        """The event's commands on `pipe` (a MULTI): the thread's stream, the partition's feed, and
        with the saver's ``default_ttl`` the thread's expiry, so the audit goes with the thread."""
        keys = self.saver.core.keys.thread(fields["thread"])
        pipe.xadd(keys.audit, fields)
        pipe.xadd(keys.audit_feed, fields, maxlen=FEED_MAXLEN, approximate=True)
        if self.saver.core.ttl_ms:
            pipe.pexpire(keys.audit, self.saver.core.ttl_ms)
        return pipe

    def _write(self, fields: dict[str, str]) -> None:
        self._queue(self.saver.redis.pipeline(transaction=True), fields).execute()
        self.stats.count("stored")

    async def _awrite(self, fields: dict[str, str]) -> None:
        if not self.is_async:
            await asyncio.to_thread(self._write, fields)
            return
        await self._queue(self.saver.redis.pipeline(transaction=True), fields).execute()
        self.stats.count("stored")

    def _failed(self, exc: BaseException) -> None:
        self.stats.count("errors")
        self.stats.last_error = f"{type(exc).__name__}: {exc}"
        log.warning("AuditMiddleware: an audit event was not written: %s", self.stats.last_error)

    def _run(self, kind: str, thread: str | None, name: str, sent: Any, call: Callable[[], R]) -> R:
        if thread is None or self.is_async:
            self.stats.count("skipped")
            return call()
        notes: dict[str, str] = {}
        token, started, answer, error = CALL_NOTES.set(notes), time.perf_counter(), None, None
        try:
            answer = call()
            return answer
        except BaseException as exc:
            error = exc
            raise
        finally:
            CALL_NOTES.reset(token)
            try:
                self._write(record(kind, thread, name, started, sent, _form(answer), notes, error))
            except FAILURES as exc:
                self._failed(exc)

    async def _arun(self, kind: str, thread: str | None, name: str, sent: Any, call: Callable[[], Awaitable[R]]) -> R:
        if thread is None:
            self.stats.count("skipped")
            return await call()
        notes: dict[str, str] = {}
        token, started, answer, error = CALL_NOTES.set(notes), time.perf_counter(), None, None
        try:
            answer = await call()
            return answer
        except BaseException as exc:
            error = exc
            raise
        finally:
            CALL_NOTES.reset(token)
            try:
                await self._awrite(record(kind, thread, name, started, sent, _form(answer), notes, error))
            except FAILURES as exc:
                self._failed(exc)

    def wrap_model_call(self, request: ModelRequest, handler: Callable[[ModelRequest], ModelResponse]) -> Any:
        return self._run(MODEL_CALLED, _model_thread(request), model_identity(request.model),
                         messages_form(request.messages), lambda: handler(request))

    async def awrap_model_call(
        self, request: ModelRequest, handler: Callable[[ModelRequest], Awaitable[ModelResponse]]
    ) -> Any:
        return await self._arun(MODEL_CALLED, _model_thread(request), model_identity(request.model),
                                messages_form(request.messages), lambda: handler(request))

    def wrap_tool_call(self, request: ToolCallRequest, handler: Callable[[ToolCallRequest], Any]) -> Any:
        call = request.tool_call
        return self._run(TOOL_CALLED, _tool_thread(request), call["name"], call.get("args"), lambda: handler(request))

    async def awrap_tool_call(
        self, request: ToolCallRequest, handler: Callable[[ToolCallRequest], Awaitable[Any]]
    ) -> Any:
        call = request.tool_call
        return await self._arun(TOOL_CALLED, _tool_thread(request), call["name"], call.get("args"),
                                lambda: handler(request))


def _form(answer: Any) -> Any:
    """A call's answer as plain data: a model response's messages, a tool message's content."""
    if answer is None:
        return None
    result = getattr(answer, "result", None)
    if result is not None:
        return messages_form(result)
    return getattr(answer, "content", str(answer))


def erase_audit(saver: Any, thread_id: str) -> int:
    """Delete the audit stream of `thread_id` alone (``delete_thread`` erases it with the thread's
    log in one atomic call); its copies in the partition's audit feed age out with the feed's cap.
    1 if it existed."""
    return int(saver.redis.delete(saver.core.keys.thread(thread_id).audit))


def read_audit(saver: Any, thread_id: str) -> list[dict[str, str]]:
    """The audit events of `thread_id`, oldest first (a sync saver's client), each with its ``id``."""
    entries = saver.redis.xrange(saver.core.keys.thread(thread_id).audit)
    return [{"id": entry_id.decode(), **{k.decode(): v.decode() for k, v in fields.items()}}
            for entry_id, fields in entries]
