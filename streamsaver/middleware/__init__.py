"""Agent middleware for LangChain 1.x agents (``create_agent(model, tools, middleware=[...])``) on
streamsaver's Store and thread logs: a semantic response cache, a tool result cache, memory from the
Store, a semantic router and an audit of every model and tool call. Each has sync and async hooks.

Installed with ``pip install 'streamsaver[middleware]'`` (langchain); ``import streamsaver`` and the
savers never import this package, so the checkpointer's install stays lean. See docs/middleware.md.
"""

from __future__ import annotations

from streamsaver.middleware.audit import AuditMiddleware, erase_audit, read_audit
from streamsaver.middleware.memory import StoreMemoryMiddleware
from streamsaver.middleware.plumbing import MiddlewareStats, ScopePolicy
from streamsaver.middleware.router import SemanticRouterMiddleware
from streamsaver.middleware.semantic_cache import SemanticCacheMiddleware
from streamsaver.middleware.tool_cache import ToolCacheMiddleware, ToolCachePolicy

__all__ = [
    "AuditMiddleware",
    "MiddlewareStats",
    "ScopePolicy",
    "SemanticCacheMiddleware",
    "SemanticRouterMiddleware",
    "StoreMemoryMiddleware",
    "ToolCacheMiddleware",
    "ToolCachePolicy",
    "erase_audit",
    "read_audit",
]
