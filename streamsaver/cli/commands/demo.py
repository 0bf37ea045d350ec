"""``streamsaver demo``: real LangGraph graphs on StreamSaver, and what they stored."""

from __future__ import annotations

import argparse
import dataclasses
import sys
from typing import Any

from streamsaver.cli.commands._shared import emit_json

__all__ = ["register"]


def _run(args: argparse.Namespace) -> int:
    try:
        from streamsaver.demo import run_demo
    except ModuleNotFoundError as exc:
        if exc.name != "langgraph":
            raise
        print("streamsaver: error: the demo needs langgraph: pip install 'streamsaver[demo]'", file=sys.stderr)
        return 1
    if not args.json:
        run_demo(args.url)
        return 0
    # The tour goes to standard error; standard output holds only the JSON of what it did.
    report = run_demo(args.url, out=sys.stderr)
    emit_json(_plain(dataclasses.asdict(report)))
    return 0


def _plain(value: Any) -> Any:
    """`value` with every mapping key a string (a scene keys some facts by tuples), for JSON."""
    if isinstance(value, dict):
        return {(k if isinstance(k, str) else " / ".join(map(str, k)) if isinstance(k, tuple) else str(k)): _plain(v)
                for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value


def register(commands: argparse._SubParsersAction[argparse.ArgumentParser], common: argparse.ArgumentParser) -> None:
    """Add ``demo``."""
    parser = commands.add_parser(
        "demo",
        parents=[common],
        help="run LangGraph graphs on streamsaver and show what is stored",
        description="Run deterministic LangGraph graphs (no LLM) on StreamSaver: memory across "
        "invocations, an interrupt and resume, time travel with a fork, a subgraph, parallel "
        "branches; then print the events in the thread logs and the documents in the views. "
        "Writes under a new random key prefix on every run (--prefix is not used). Without --url "
        "and REDIS_URL it starts an embedded Redis (pip install 'streamsaver[embedded]') and "
        "stops it at the end; needs langgraph (pip install 'streamsaver[demo]'). With --json, the tour goes to "
        "standard error and standard output gets one JSON document of what each scene did.",
    )
    parser.set_defaults(handler=_run)
