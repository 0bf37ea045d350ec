"""The middleware benchmark runs (its figures are measured by ``python -m benchmarks.middleware``,
not asserted here), and the semantic cache never serves one tenant's answer to another."""

from __future__ import annotations

from benchmarks.middleware import NEAR_MISSES, PARAPHRASES, THRESHOLDS, accuracy, latency
from streamsaver import StreamStore


def test_the_latency_cases_run_and_every_hit_is_a_hit(store: StreamStore) -> None:
    cases = [case for case, _, _ in latency(store, 3, 0.0)]
    assert cases == ["no middleware, answer", "semantic cache, miss", "semantic cache, hit",
                     "no middleware, tool call", "tool cache, miss", "tool cache, hit"]


def test_no_threshold_serves_another_tenant(store: StreamStore) -> None:
    rows = accuracy(store)
    assert [r[0] for r in rows] == list(THRESHOLDS)
    assert all(cross == 0 for *_, cross in rows)
    assert all(0 <= para <= len(PARAPHRASES) and 0 <= false <= len(NEAR_MISSES) for _, para, false, _ in rows)
    served = [para for _, para, _, _ in rows]
    assert served == sorted(served), "a wider threshold serves at least as many paraphrases"
