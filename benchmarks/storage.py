"""Section 3, storage: bytes per checkpoint in growing conversations, everything counted.

Each saver starts empty; the section weighs it, writes ``storage_threads`` conversations of
``storage_steps`` steps each (the micro ops' conversation: two ~500-byte messages more per step,
three pending writes), weighs it again and divides the growth by the checkpoints written.
Redis savers are weighed by the server's ``used_memory`` (keys, streams, JSON documents, search
indexes and the server's own bookkeeping of them), SQLite by its file once the WAL is folded in,
Postgres by ``pg_total_relation_size`` of its tables (with indexes and TOAST). For StreamSaver
the growth is also split by key family (``MEMORY USAGE`` of every key; what no key holds, such
as the search indexes, is the rest).
"""

from __future__ import annotations

from collections import defaultdict
from contextlib import closing

import redis

from benchmarks.fill import fill
from benchmarks.plan import Context, progress
from benchmarks.report import ratio, table
from benchmarks.savers import Environment, SaverSpec
from benchmarks.workload import Workload
from streamsaver import StreamSaver

__all__ = ["run_storage"]

WEIGHED_BY = {
    "redis": "Redis used_memory",
    "sqlite": "file bytes",
    "postgres": "table + index + TOAST bytes",
}


def _family(key: bytes) -> str:
    parts = key.decode(errors="replace").split(":")
    if len(parts) > 2 and parts[1] in ("full", "shallow"):
        return ":".join(parts[1:3])
    return parts[1] if len(parts) > 1 else parts[0]


def _key_bytes(url: str) -> dict[str, int]:
    """``MEMORY USAGE`` (exact) of every key, summed by key family."""
    found: dict[str, int] = defaultdict(int)
    with closing(redis.Redis.from_url(url)) as client:
        keys = list(client.scan_iter(count=1000))
        pipe = client.pipeline(transaction=False)
        for key in keys:
            pipe.memory_usage(key, samples=0)
        for key, size in zip(keys, pipe.execute(), strict=True):
            found[_family(key)] += int(size or 0)
    return dict(found)


def _measure(ctx: Context, env: Environment, spec: SaverSpec) -> tuple[int, int, dict[str, int]]:
    """(growth in bytes, checkpoints written, growth by key family for StreamSaver)."""
    opened = spec.open(env)
    workload = Workload(opened.saver.get_next_version, ctx.seed, (0, 0), 1)
    before = opened.stored_bytes() or 0
    families_before = (
        _key_bytes(env.servers[-1].url) if isinstance(opened.saver, StreamSaver) else {}
    )
    conversations = [workload.conversation("grow") for _ in range(ctx.plan.storage_threads)]
    written = fill(opened, (c for _ in range(ctx.plan.storage_steps) for c in conversations), pipelined=False)
    after = opened.stored_bytes() or 0
    families = {}
    if isinstance(opened.saver, StreamSaver):
        families_after = _key_bytes(env.servers[-1].url)
        families = {k: v - families_before.get(k, 0) for k, v in families_after.items()}
    return after - before, written, families


def _breakdown(name: str, growth: int, written: int, families: dict[str, int]) -> list[str]:
    rest = growth - sum(families.values())
    rows = [*sorted(families.items(), key=lambda kv: -kv[1]), ("rest (indexes, overhead)", rest)]
    body = [
        [family, f"{size / written / 1024:.2f}", f"{size / growth:.0%}"] for family, size in rows
    ]
    return [
        "",
        f"#### Where {name}'s bytes go (per checkpoint)",
        "",
        *table(["key family", "KiB / checkpoint", "share"], body),
    ]


def run_storage(ctx: Context) -> list[str]:
    """Weigh every chosen sync saver that stores anywhere (async twins store the same)."""
    specs = [s for s in ctx.pick(api="sync") if s.backend != "memory"]
    results = {}
    breakdowns: list[str] = []
    with ctx.environment("storage") as env:
        for spec in specs:
            growth, written, families = _measure(ctx, env, spec)
            results[spec.key] = (growth, written)
            if families:
                breakdowns += _breakdown(spec.name, growth, written, families)
            progress(f"storage: {spec.name} {growth / written / 1024:.1f} KiB per checkpoint")
    base = results[specs[0].key][0] / results[specs[0].key][1]
    body = [
        [
            spec.name,
            WEIGHED_BY[spec.backend],
            f"{results[spec.key][1]:,}",
            f"{results[spec.key][0] / 2**20:.2f}",
            ratio(results[spec.key][0] / results[spec.key][1], base, "{:.1f}", 1 / 1024),
        ]
        for spec in specs
    ]
    p = ctx.plan
    return [
        "## 3. Storage per checkpoint",
        "",
        (
            f"{p.storage_threads} growing conversations of {p.storage_steps} steps each (2 to "
            f"{2 * p.storage_steps} messages of ~500 bytes, 3 pending writes a step), written into "
            "an empty saver; growth divided by checkpoints written. Shallow savers keep only the "
            "latest checkpoint, so theirs is not comparable with the full-history savers'."
        ),
        "",
        *table(["saver", "weighed by", "checkpoints", "growth, MiB", "KiB / checkpoint"], body),
        *breakdowns,
        "",
    ]
