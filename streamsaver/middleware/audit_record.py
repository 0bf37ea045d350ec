"""What an audit event holds, built without I/O: a model or tool call's hashed input, sizes,
latency, cache outcome and error, as stream fields (``type v thread at name ms in in_bytes
out_bytes cache route error``)."""

from __future__ import annotations

import hashlib
import time
from typing import Any

import orjson

from streamsaver.log.audit import MODEL_CALLED, TOOL_CALLED

__all__ = ["MODEL_CALLED", "TOOL_CALLED", "fingerprint", "record"]

VERSION = 1


def _canonical(value: Any) -> bytes:
    return orjson.dumps(value, option=orjson.OPT_SORT_KEYS | orjson.OPT_NON_STR_KEYS, default=str)


def messages_form(messages: Any) -> list[Any]:
    """Messages as plain data (type and content) for hashing and sizing."""
    return [(getattr(m, "type", type(m).__name__), getattr(m, "content", m)) for m in messages or ()]


def fingerprint(value: Any) -> tuple[str, int]:
    """The blake2b-128 hex digest of `value`'s canonical JSON, and its size in bytes: the audit
    proves what was sent without keeping it."""
    data = _canonical(value)
    return hashlib.blake2b(data, digest_size=16).hexdigest(), len(data)


def record(kind: str, thread_id: str, name: str, started: float, sent: Any, answer: Any,
           notes: dict[str, str], error: BaseException | None) -> dict[str, str]:
    """The stream fields of one audit event; `started` is ``time.perf_counter()`` at the call."""
    digest, size_in = fingerprint(sent)
    size_out = fingerprint(answer)[1] if error is None else 0
    return {
        "type": kind, "v": str(VERSION), "thread": thread_id, "at": str(time.time_ns() // 1000), "name": name,
        "ms": f"{(time.perf_counter() - started) * 1000:.3f}", "in": digest, "in_bytes": str(size_in),
        "out_bytes": str(size_out), "cache": notes.get("cache", ""), "route": notes.get("route", ""),
        "memories": notes.get("memories", ""), "error": type(error).__name__ if error is not None else "",
    }
