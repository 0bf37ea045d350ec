"""The worker of `benchmarks.ab`: runs in a process of one source tree, measures on request.

Started by `benchmarks.ab` with that tree first on ``sys.path`` (its ``streamsaver`` and
``projectors`` are imported before this harness), it opens the savers asked for on the servers
the parent started, through the tree's public API (`benchmarks.savers`' factories), and answers
JSON lines on stdin with JSON lines on its stdout until stdin ends.
"""

from __future__ import annotations

import asyncio
import gc
import json
import os
import sys
import tempfile
from collections import Counter
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from benchmarks.measure import Settings, Subject, iterate, open_subject
from benchmarks.savers import Environment, catalog

if TYPE_CHECKING:
    from streamsaver.server.embedded import EmbeddedRedis

__all__ = ["PACKAGES", "serve"]

PACKAGES = ("streamsaver", "projectors")
"""The tree's packages: every module of them must come from the tree."""


@dataclass(frozen=True)
class _Address:
    url: str


@dataclass
class _Served(Environment):
    """An environment whose servers the parent started: factories get their URLs in order."""

    urls: list[str] = field(default_factory=list)

    def redis_server(self) -> EmbeddedRedis:
        return cast("EmbeddedRedis", _Address(self.urls.pop(0)))  # factories only read `.url`


def _loaded(tree: Path) -> dict[str, Any]:
    """How many modules of the tree's packages are loaded, and which came from elsewhere."""
    names = [n for n in sys.modules if n.split(".")[0] in PACKAGES]
    files = {n: getattr(sys.modules[n], "__file__", None) for n in names}
    outside = [f"{n}: {f}" for n, f in files.items() if f and tree not in Path(f).resolve().parents]
    return {"loaded": len(names), "outside": outside}


def _round(subject: Subject, count: int) -> dict[str, Any]:
    """`count` iterations of every op: seconds per op, and wrong results per op."""
    samples: dict[str, list[float]] = {}
    failures = Counter[str]()
    gc.collect()
    for _ in range(count):
        for name, seconds, right in iterate(subject):
            samples.setdefault(name, []).append(seconds)
            failures[name] += not right
    return {"samples": samples, "failures": failures}


def serve(tree: str, config: str) -> None:
    """The worker: open the savers, then answer requests (JSON lines) on stdin until EOF."""
    replies = os.fdopen(os.dup(1), "w")
    os.dup2(2, 1)  # anything else printed goes to stderr, not into the replies

    def reply(message: dict[str, Any]) -> None:
        replies.write(json.dumps(message) + "\n")
        replies.flush()

    from streamsaver import __file__ as imported  # the tree's: imported before this module

    asked = json.loads(config)
    settings = Settings(**{**asked["settings"], "prefill": tuple(asked["settings"]["prefill"])})
    with ExitStack() as stack, tempfile.TemporaryDirectory() as tmp:
        env = _Served(stack, Path(tmp), asyncio.new_event_loop(), urls=list(asked["urls"]))
        specs = catalog(None)
        subjects = [open_subject(env, specs[key], settings) for key in asked["savers"]]
        reply({"imported": imported})
        for line in sys.stdin:
            request = json.loads(line)
            if request.get("check"):
                reply(_loaded(Path(tree).resolve()))
            else:
                reply(_round(subjects[request["saver"]], request["count"]))
