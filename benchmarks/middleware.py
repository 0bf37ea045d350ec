"""The agent middleware, measured on a real ``create_agent`` graph and the embedded Redis:

* the semantic cache's and the tool cache's overhead on a miss, and the time a hit saves, against
  the same agent without middleware (p50 / p99 of ``agent.invoke``, milliseconds);
* the semantic cache's false-hit rate (near misses served) and hit rate (paraphrases served) at
  thresholds 0.05 / 0.1 / 0.2 on a fixed set of pairs embedded by the deterministic bag-of-words
  embeddings, and its cross-tenant hits (each stored question asked again by another tenant).

    python -m benchmarks.middleware [--n 200] [--model-ms 20] [--tool-ms 20]

`--model-ms` and `--tool-ms` make the fake model and the tool sleep that long per call, as a
remote model or API would: what a hit saves grows with them; the overhead of a miss does not
(run with both at 0 to see the overhead alone).
"""

from __future__ import annotations

import argparse
import statistics
import time
import uuid
from collections.abc import Callable, Sequence
from typing import Any

import redis
from langchain.agents import create_agent
from langchain_core.tools import tool

from streamsaver import StreamStore
from streamsaver.demo.fake_agent import BagOfWordsEmbeddings, ScriptedChatModel
from streamsaver.middleware import SemanticCacheMiddleware, ToolCacheMiddleware
from streamsaver.server.embedded import EmbeddedRedis

PARAPHRASES = [
    ("What is the capital of France?", "Tell me the capital of France"),
    ("How do I reset my password?", "password reset: how do I do it?"),
    ("What are your opening hours?", "opening hours?"),
    ("How much does shipping to Canada cost?", "Canada shipping cost?"),
    ("Can I return a damaged item?", "return damaged item"),
    ("Where is my order?", "my order: where is it?"),
    ("How do I cancel my subscription?", "cancel subscription please"),
    ("What is the weather like in Berlin today?", "Berlin weather like today?"),
    ("Do you ship internationally?", "do you ship internationally"),
    ("What payment methods do you accept?", "which payment methods accepted?"),
    ("How do I change my email address?", "change email address"),
    ("Is the store open on Sunday?", "store open Sunday?"),
]
NEAR_MISSES = [
    ("What is the capital of France?", "What is the capital of Spain?"),
    ("How do I reset my password?", "How do I reset my router?"),
    ("How much does shipping to Canada cost?", "How much does shipping to Mexico cost?"),
    ("Can I return a damaged item?", "Can I exchange a damaged item?"),
    ("How do I cancel my subscription?", "How do I pause my subscription?"),
    ("What is the weather like in Berlin today?", "What is the weather like in Munich today?"),
    ("What payment methods do you accept?", "What shipping methods do you accept?"),
    ("How do I change my email address?", "How do I change my postal address?"),
    ("Is the store open on Sunday?", "Is the store open on Monday?"),
    ("Which laptop has the best battery life for travel and work?",
     "Which tablet has the best battery life for travel and work?"),
    ("Recommend a vegetarian pasta recipe with mushrooms and spinach",
     "Recommend a vegetarian pasta recipe with mushrooms and bacon"),
    ("Book a table for two at an Italian restaurant tonight at eight",
     "Book a table for four at an Italian restaurant tonight at eight"),
]
THRESHOLDS = (0.05, 0.1, 0.2)


class SlowModel(ScriptedChatModel):
    """The scripted model, `delay_s` slower per call (a remote model's latency)."""

    delay_s: float = 0.0

    def _generate(self, messages: Any, stop: Any = None, run_manager: Any = None, **kwargs: Any) -> Any:
        time.sleep(self.delay_s)
        return super()._generate(messages, stop, run_manager, **kwargs)


def _ms(samples: Sequence[float]) -> tuple[float, float]:
    ordered = sorted(samples)
    return statistics.median(ordered) * 1000, ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))] * 1000


def _warm(agent: Any) -> Any:
    """`agent` after ten calls outside the measured sets (compiled paths, warm connections)."""
    _timed(agent, [f"warm up z{i}q" for i in range(5)] + [f"weather in Warm{chr(97 + i)}" for i in range(5)])
    return agent


def _timed(agent: Any, questions: Sequence[str], user: str = "u", tenant: str = "t") -> list[float]:
    out = []
    for q in questions:
        start = time.perf_counter()
        agent.invoke({"messages": [{"role": "user", "content": q}]}, context={"user_id": user, "tenant_id": tenant})
        out.append(time.perf_counter() - start)
    return out


TOOL_DELAY_S = [0.0]
"""How long `get_weather` takes (``--tool-ms``), as a remote API would."""


@tool
def get_weather(city: str) -> str:
    """The weather in a city."""
    time.sleep(TOOL_DELAY_S[0])
    return f"sunny in {city}"


def latency(store: StreamStore, n: int, model_s: float) -> list[tuple[str, float, float]]:
    """(case, p50 ms, p99 ms) of each case. The cases are interleaved request by request (the same
    question without middleware, then a miss, then a hit), so a drift of the machine's load
    touches them alike."""
    model = SlowModel(delay_s=model_s)
    agent: Callable[..., Any] = lambda mw: _warm(create_agent(model, [get_weather], middleware=mw))  # noqa: E731
    semantic, tools = SemanticCacheMiddleware(store), ToolCacheMiddleware(store)
    plain, cached, tooled = agent([]), agent([semantic]), agent([tools])
    samples: dict[str, list[float]] = {}
    for i in range(n):
        question, city = f"question w{i}a w{i}b w{i}c", f"weather in City{''.join(chr(97 + int(d)) for d in str(i))}"
        for case, target, text in (("no middleware, answer", plain, question), ("semantic cache, miss", cached,
                                   question), ("semantic cache, hit", cached, question),
                                   ("no middleware, tool call", plain, city), ("tool cache, miss", tooled, city),
                                   ("tool cache, hit", tooled, city)):
            samples.setdefault(case, []).extend(_timed(target, [text]))
    assert (semantic.stats.hits, tools.stats.hits, semantic.stats.errors, tools.stats.errors) == (n, n, 0, 0), (
        semantic.stats, tools.stats)
    return [(case, *_ms(times)) for case, times in samples.items()]


def accuracy(store: StreamStore) -> list[tuple[float, int, int, int]]:
    """(threshold, paraphrases served, near misses served, cross-tenant hits) per threshold."""
    rows = []
    for threshold in THRESHOLDS:
        cache = SemanticCacheMiddleware(store, threshold=threshold, scope="tenant+user")
        agent = create_agent(ScriptedChatModel(), [], middleware=[cache])
        served = []
        for pairs in (PARAPHRASES, NEAR_MISSES):
            before = cache.stats.hits
            for stored, probe in pairs:
                tenant = uuid.uuid4().hex[:8]
                _timed(agent, [stored], tenant=tenant)
                _timed(agent, [probe], tenant=tenant)
            served.append(cache.stats.hits - before)
        before = cache.stats.hits
        for stored, _ in PARAPHRASES + NEAR_MISSES:
            tenant = uuid.uuid4().hex[:8]
            _timed(agent, [stored], tenant=tenant)
            _timed(agent, [stored], tenant=tenant + "-other")
        rows.append((threshold, served[0], served[1], cache.stats.hits - before))
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--n", type=int, default=200, help="requests per latency case (default 200)")
    parser.add_argument("--model-ms", type=float, default=20.0, help="the fake model's latency per call")
    parser.add_argument("--tool-ms", type=float, default=20.0, help="the tool's latency per call")
    args = parser.parse_args()
    TOOL_DELAY_S[0] = args.tool_ms / 1000
    with EmbeddedRedis() as server:
        client = redis.Redis.from_url(server.url)
        store = StreamStore(client, prefix=f"bench-{uuid.uuid4().hex[:6]}",
                            index={"dims": 256, "embed": BagOfWordsEmbeddings()})
        store.setup()
        print(f"agent.invoke latency, ms (n={args.n}, fake model {args.model_ms} ms, tool {args.tool_ms} ms per call)")
        print(f"  {'case':28} {'p50':>8} {'p99':>8}")
        for case, p50, p99 in latency(store, args.n, args.model_ms / 1000):
            print(f"  {case:28} {p50:8.2f} {p99:8.2f}")
        print(f"semantic cache: {len(PARAPHRASES)} paraphrase pairs, {len(NEAR_MISSES)} near-miss pairs")
        print(f"  {'threshold':>9} {'paraphrases served':>19} {'false hits':>11} {'cross-tenant hits':>18}")
        for threshold, para, false, cross in accuracy(store):
            print(f"  {threshold:9.2f} {para:>12}/{len(PARAPHRASES):<6} {false:>4}/{len(NEAR_MISSES):<6} {cross:>18}")
        client.close()


if __name__ == "__main__":
    main()
