"""The streamsaver demo: real LangGraph graphs on `StreamSaver`, then a look at what is stored.

Scenes, each on its own thread and each printed under its own title: memory across invocations,
a human-in-the-loop interrupt and resume, time travel with a fork, a subgraph with its own
checkpoint namespace, parallel branches; then the thread logs (XRANGE) and the view documents
(FT.SEARCH, JSON.GET). The graphs are deterministic, so a run needs no model and no network.

Run it with ``streamsaver demo [--url URL]`` or ``python -m streamsaver.demo [--url URL]``;
call it with `run_demo`, which returns a `DemoReport` of the facts each scene produced.
LangGraph is imported on first use of `run_demo`, so ``--help`` answers at once.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from streamsaver.demo.run import DemoReport, run_demo

__all__ = ["DemoReport", "run_demo"]


def __getattr__(name: str) -> Any:
    if name in __all__:
        return getattr(import_module("streamsaver.demo.run"), name)
    raise AttributeError(f"module 'streamsaver.demo' has no attribute {name!r}")
