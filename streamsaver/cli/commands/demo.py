"""``streamsaver demo``: real LangGraph graphs on StreamSaver, and what they stored."""

from __future__ import annotations

import argparse
import sys

__all__ = ["register"]


def _run(args: argparse.Namespace) -> int:
    try:
        from streamsaver.demo import run_demo
    except ModuleNotFoundError as exc:
        if exc.name != "langgraph":
            raise
        print("streamsaver: error: the demo needs langgraph: pip install 'streamsaver[demo]'", file=sys.stderr)
        return 1
    run_demo(args.url)
    return 0


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
        "stops it at the end; needs langgraph (pip install 'streamsaver[demo]').",
    )
    parser.set_defaults(handler=_run)
