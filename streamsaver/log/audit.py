"""The agent audit's events (written by `streamsaver.middleware.audit`, read by ``inspect`` and
``Subscriber(..., domain="audit")``): their type names, kept apart from the thread log's events.

An audit event is one entry of the thread's audit stream (``P:audit:{pN}:<thread>``) and one
copy in its partition's audit feed (``P:afeed:{pN}``); its stream fields are plain text:
``type v thread at name ms in in_bytes out_bytes cache route memories error``.
"""

from __future__ import annotations

__all__ = ["AUDIT_TYPES", "MODEL_CALLED", "TOOL_CALLED"]

MODEL_CALLED = "ModelCalled"
"""An agent called its chat model (or a cache or route answered in its place)."""
TOOL_CALLED = "ToolCalled"
"""An agent called a tool (or the tool cache answered in its place)."""
AUDIT_TYPES = frozenset({MODEL_CALLED, TOOL_CALLED})
