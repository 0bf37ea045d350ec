"""Which tool calls the tool result cache may answer: decided from the tool's own annotations,
the call's argument names, the tool's name and the user's allow and deny lists (pure)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from streamsaver.errors import MiddlewareConfigError

__all__ = ["SIDE_EFFECT_PREFIXES", "VOLATILE_ARGS", "ToolCachePolicy"]

SIDE_EFFECT_PREFIXES = ("send", "post", "create", "update", "delete", "remove", "write", "set", "put", "add",
                        "insert", "book", "buy", "pay", "cancel", "charge", "transfer", "submit", "execute", "run")
"""Name prefixes of tools that act on the world (``send_email``, ``create_ticket``...): not cached
unless the tool says it is read-only or idempotent, or the allow list names it."""
VOLATILE_ARGS = ("now", "timestamp", "time", "date", "nonce", "random", "seed", "request_id", "idempotency_key")
"""Argument names whose presence makes a call's result belong to its moment: never cached."""


def _names(values: Iterable[str] | None, what: str) -> frozenset[str]:
    if values is None:
        return frozenset()
    if isinstance(values, str) or not all(isinstance(v, str) and v for v in values):
        raise MiddlewareConfigError(f"{what} is a collection of non-empty names, not {values!r}")
    return frozenset(values)


@dataclass(frozen=True)
class ToolCachePolicy:
    """The rules, in the order they decide: the deny list refuses; a volatile argument refuses;
    the allow list admits; the tool's ``metadata["cacheable"]`` (True or False) decides; a
    ``destructiveHint`` refuses; a ``readOnlyHint`` or ``idempotentHint`` admits (MCP's tool
    annotations, read from the tool's ``metadata`` or its ``annotations``); a side-effect name
    prefix refuses; otherwise `cache_unannotated` decides.

    Raises:
        MiddlewareConfigError: a list that is not a collection of names.
    """

    allow: Iterable[str] | None = None
    deny: Iterable[str] | None = None
    volatile_args: Iterable[str] = VOLATILE_ARGS
    side_effect_prefixes: Iterable[str] = SIDE_EFFECT_PREFIXES
    cache_unannotated: bool = True
    _sets: dict[str, frozenset[str]] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        sets = {name: _names(getattr(self, name), name)
                for name in ("allow", "deny", "volatile_args", "side_effect_prefixes")}
        object.__setattr__(self, "_sets", sets)

    def cacheable(self, tool_name: str, args: Mapping[str, Any], tool: Any) -> bool:
        """Whether a call of `tool_name` (the `tool` object, None if unknown) with `args` may be cached."""
        sets = self._sets
        if tool_name in sets["deny"] or any(arg.lower() in sets["volatile_args"] for arg in args):
            return False
        if tool_name in sets["allow"]:
            return True
        hints = _hints(tool)
        if isinstance(hints.get("cacheable"), bool):
            return bool(hints["cacheable"])
        if hints.get("destructiveHint") is True:
            return False
        if hints.get("readOnlyHint") is True or hints.get("idempotentHint") is True:
            return True
        lowered = tool_name.lower()
        if any(lowered == p or lowered.startswith((p + "_", p + "-")) for p in sets["side_effect_prefixes"]):
            return False
        return self.cache_unannotated


def _hints(tool: Any) -> dict[str, Any]:
    """The tool's annotations: its ``metadata`` over its ``annotations`` (an object or a dict)."""
    out: dict[str, Any] = {}
    annotations = getattr(tool, "annotations", None)
    if isinstance(annotations, Mapping):
        out.update(annotations)
    elif annotations is not None:
        out.update({k: getattr(annotations, k) for k in ("readOnlyHint", "idempotentHint", "destructiveHint")
                    if getattr(annotations, k, None) is not None})
    metadata = getattr(tool, "metadata", None)
    if isinstance(metadata, Mapping):
        out.update(metadata)
    return out
