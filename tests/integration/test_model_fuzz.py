"""Savers agree with a model (LangGraph's `InMemorySaver`) over random work, deltas included.

Random puts of growing message lists (stored as deltas, `streamsaver.log.deltas`) across ~20 threads
and two namespaces, forks from old checkpoints, writes, and in between `prune`,
`delete_for_runs`, `copy_thread` and `delete_thread`, by a sync and an async saver on the same
deployment (their delta memories go stale for each other). After each step some random listings
(across threads or one, with filter, before, limit, full and shallow view) and `get_tuple` calls
must return exactly what the model holds. Seeded: each seed runs the same operations.

`InMemorySaver` implements neither copy nor prune nor delete_for_runs: `Model` does them on its
storage as the contract (docs/contract.md) states them.
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from typing import Any

import pytest
import redis
import redis.asyncio
from helpers import async_client, config, sync_client
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import Checkpoint, CheckpointTuple, empty_checkpoint
from langgraph.checkpoint.memory import InMemorySaver

from streamsaver import AsyncStreamSaver, StreamSaver
from streamsaver.checkpoints.core import SaverCore
from streamsaver.log.codec import escape

WORDS = " ".join(["agent", "tool", "call", "result", "graph", "node", "message", "redis"] * 6)
NAMESPACES = ("", "sub:1")


class Model(InMemorySaver):
    """`InMemorySaver` with the maintenance operations done on its storage."""

    def _checkpoints(self) -> Iterator[tuple[str, str, str]]:
        for thread, by_ns in self.storage.items():
            for ns, by_id in by_ns.items():
                for cid in by_id:
                    yield thread, ns, cid

    def drop(self, thread: str, ns: str, cid: str) -> None:
        del self.storage[thread][ns][cid]
        self.writes.pop((thread, ns, cid), None)

    def delete_for_runs(self, run_ids: Any) -> None:
        for thread, ns, cid in list(self._checkpoints()):
            metadata = self.serde.loads_typed(self.storage[thread][ns][cid][1])
            if metadata.get("run_id") in run_ids:
                self.drop(thread, ns, cid)

    def prune(self, thread_ids: Any, *, strategy: str = "keep_latest") -> None:
        for thread in thread_ids:
            for ns, by_id in list(self.storage.get(thread, {}).items()):
                latest = max(by_id) if by_id else None
                for cid in list(by_id):
                    if strategy == "delete" or cid != latest:
                        self.drop(thread, ns, cid)

    def copy_thread(self, source: str, target: str) -> None:
        for ns, by_id in self.storage.get(source, {}).items():
            self.storage[target][ns].update(by_id)
        for (thread, ns, cid), writes in list(self.writes.items()):
            if thread == source:
                self.writes[(target, ns, cid)] = dict(writes)
        for (thread, ns, ch, version), blob in list(self.blobs.items()):
            if thread == source:
                self.blobs[(target, ns, ch, version)] = blob

    def everything(self) -> list[CheckpointTuple]:
        return list(self.list(None))


def _order(t: CheckpointTuple) -> tuple[str, str, str]:
    c = t.config["configurable"]
    return c["checkpoint_id"], escape(c["thread_id"]), escape(c["checkpoint_ns"])


def _sorted(tuples: list[CheckpointTuple]) -> list[CheckpointTuple]:
    """Newest id first; among equal ids (a copy keeps its source's ids) thread then namespace
    ascending, as the index sorts them."""
    by_id = sorted(
        tuples,
        key=lambda t: (
            escape(t.config["configurable"]["thread_id"]),
            escape(t.config["configurable"]["checkpoint_ns"]),
        ),
    )
    return sorted(by_id, key=lambda t: t.config["configurable"]["checkpoint_id"], reverse=True)


def _latest_only(tuples: list[CheckpointTuple]) -> list[CheckpointTuple]:
    latest: dict[tuple[str, str], CheckpointTuple] = {}
    for t in tuples:
        c = t.config["configurable"]
        key = (c["thread_id"], c["checkpoint_ns"])
        if key not in latest or c["checkpoint_id"] > latest[key].config["configurable"]["checkpoint_id"]:
            latest[key] = t
    return list(latest.values())


def _comparable(t: CheckpointTuple) -> tuple[Any, ...]:
    c = t.config["configurable"]
    return (
        c["thread_id"], c["checkpoint_ns"], c["checkpoint_id"],
        t.checkpoint["channel_values"], t.checkpoint["channel_versions"],
        t.metadata, t.parent_config["configurable"]["checkpoint_id"] if t.parent_config else None,
        sorted(t.pending_writes or []),
    )


class Run:
    """One seeded run: the operations, the model, and the checks."""

    def __init__(self, seed: int, savers: dict[str, Any], threads: int) -> None:
        self.rng = random.Random(seed)
        self.savers = savers
        self.model = Model()
        self.threads = [f"t{n}" for n in range(threads)]
        self.heads: dict[tuple[str, str], Checkpoint] = {}
        self.known: dict[tuple[str, str, str], Checkpoint] = {}
        self.copies = 0
        self.checks = 0

    async def call(self, kind: str, method: str, *args: Any, **kwargs: Any) -> Any:
        saver = self.savers[kind]
        if isinstance(saver, AsyncStreamSaver):
            if method == "list":
                return [t async for t in saver.alist(*args, **kwargs)]
            return await getattr(saver, "a" + method)(*args, **kwargs)
        if method == "list":
            return list(saver.list(*args, **kwargs))
        return getattr(saver, method)(*args, **kwargs)

    def _writer(self, thread: str) -> str:
        # mostly the thread's own saver (its delta memory holds the thread), sometimes another
        writers = ["sync-full", "async-full", "sync-shallow", "async-shallow"]
        if self.rng.random() < 0.1:
            return self.rng.choice(writers)
        return writers[sum(map(ord, thread)) % 4]

    async def put(self) -> None:
        rng = self.rng
        thread, ns = rng.choice(self.threads), rng.choice(NAMESPACES)
        parent = self.heads.get((thread, ns))
        if parent is not None and rng.random() < 0.15:
            # a fork from an older checkpoint of the thread, if the model still holds one
            older = [k for k in self.known if k[:2] == (thread, ns) and k[2] in self.model.storage[thread][ns]]
            if older:
                parent = self.known[rng.choice(older)]
        messages = list(parent["channel_values"]["messages"]) if parent else []
        step = len(messages)
        messages += [f"{step + i}: {WORDS}" for i in range(rng.randint(1, 3))]
        checkpoint = empty_checkpoint()
        versions = dict(parent["channel_versions"]) if parent else {}
        new_versions = {}
        for channel in ("messages", "step"):
            new_versions[channel] = SaverCore.next_version(versions.get(channel))  # type: ignore[arg-type]
        versions.update(new_versions)
        checkpoint["channel_values"] = {"messages": messages, "step": step}
        checkpoint["channel_versions"] = versions
        metadata: dict[str, Any] = {"step": step, "run_id": f"r{rng.randrange(6)}", "kind": rng.choice("ab")}
        cfg = config(thread, ns, parent["id"] if parent else None)
        saved = await self.call(self._writer(thread), "put", cfg, checkpoint, metadata, new_versions)
        self.model.put(cfg, checkpoint, metadata, new_versions)
        self.heads[(thread, ns)] = checkpoint
        self.known[(thread, ns, saved["configurable"]["checkpoint_id"])] = checkpoint
        if rng.random() < 0.3:
            writes = [("messages", [f"w{step}"]), ("step", step)]
            task = f"task{rng.randrange(3)}"
            await self.call(self._writer(thread), "put_writes", saved, writes, task)
            self.model.put_writes(saved, writes, task)

    async def maintain(self) -> None:
        rng = self.rng
        op = rng.choice(["prune", "prune", "runs", "copy", "copy", "delete"])
        kind = rng.choice(["sync-full", "async-full"])
        if op == "prune":
            threads, strategy = rng.sample(self.threads, 2), rng.choice(["keep_latest", "keep_latest", "delete"])
            await self.call(kind, "prune", threads, strategy=strategy)
            self.model.prune(threads, strategy=strategy)
        elif op == "runs":
            runs = [f"r{rng.randrange(6)}"]
            await self.call(kind, "delete_for_runs", runs)
            self.model.delete_for_runs(runs)
        elif op == "copy":
            source = rng.choice(self.threads)
            target = f"c{self.copies}-{source}"
            self.copies += 1
            await self.call(kind, "copy_thread", source, target)
            self.model.copy_thread(source, target)
            self.threads.append(target)
        else:
            thread = rng.choice(self.threads)
            await self.call(kind, "delete_thread", thread)
            self.model.delete_thread(thread)
        # the heads follow the model: a put goes on from the newest checkpoint left
        for (thread, ns) in list(self.heads):
            left = self.model.storage.get(thread, {}).get(ns, {})
            if left:
                self.heads[(thread, ns)] = self.known.get((thread, ns, max(left))) or self.heads[(thread, ns)]
            else:
                del self.heads[(thread, ns)]
        for (thread, ns) in [(t, n) for t, by_ns in self.model.storage.items() for n, ids in by_ns.items() if ids]:
            if (thread, ns) not in self.heads:
                # a copy: its checkpoints are the source's
                cid = max(self.model.storage[thread][ns])
                source = thread.split("-", 1)[1] if thread.startswith("c") else thread
                while (source, ns, cid) not in self.known and source.startswith("c"):
                    source = source.split("-", 1)[1]
                self.heads[(thread, ns)] = self.known[(source, ns, cid)]
                for (t, n, c), cp in list(self.known.items()):
                    if (t, n) == (source, ns):
                        self.known[(thread, ns, c)] = cp

    async def check(self) -> None:
        rng = self.rng
        everything = self.model.everything()
        view = rng.choice(["full", "shallow"])
        kind = f"{rng.choice(['sync', 'async'])}-{view}"
        pool = everything if view == "full" else _latest_only(everything)
        scope = rng.choice(["all", "all", "thread", "ns", "id"])
        cfg: RunnableConfig | None = None
        if scope != "all" and pool:
            pick = rng.choice(pool).config["configurable"]
            if scope == "thread":
                cfg = config(pick["thread_id"], None)
                pool = [t for t in pool if t.config["configurable"]["thread_id"] == pick["thread_id"]]
            elif scope == "ns":
                cfg = config(pick["thread_id"], pick["checkpoint_ns"])
                pool = [t for t in pool if t.config["configurable"]["thread_id"] == pick["thread_id"]
                        and t.config["configurable"]["checkpoint_ns"] == pick["checkpoint_ns"]]
            else:
                cfg = config(pick["thread_id"], pick["checkpoint_ns"], pick["checkpoint_id"])
                pool = [t for t in pool if t.config["configurable"]["thread_id"] == pick["thread_id"]
                        and t.config["configurable"]["checkpoint_ns"] == pick["checkpoint_ns"]
                        and t.config["configurable"]["checkpoint_id"] == pick["checkpoint_id"]]
        flt = {"kind": rng.choice("ab")} if rng.random() < 0.3 else None
        if flt:
            pool = [t for t in pool if t.metadata.get("kind") == flt["kind"]]
        before = None
        if rng.random() < 0.3 and everything:
            bid = rng.choice(everything).config["configurable"]["checkpoint_id"]
            before = {"configurable": {"checkpoint_id": bid}}
            pool = [t for t in pool if t.config["configurable"]["checkpoint_id"] < bid]
        limit = rng.choice([None, None, 1, 3, 7, 40])
        expected = _sorted(pool)[:limit]
        got = await self.call(kind, "list", cfg, filter=flt, before=before, limit=limit)
        context = (kind, cfg, flt, before, limit)
        assert [_comparable(t) for t in got] == [_comparable(t) for t in expected], context
        self.checks += 1
        # get_tuple of a few checkpoints, by id (full) or latest (both views)
        for t in rng.sample(everything, min(3, len(everything))):
            c = t.config["configurable"]
            if view == "full":
                one = await self.call(kind, "get_tuple", config(c["thread_id"], c["checkpoint_ns"], c["checkpoint_id"]))
                assert one is not None and _comparable(one) == _comparable(t), (kind, c)
            latest = self.model.get_tuple(config(c["thread_id"], c["checkpoint_ns"]))
            one = await self.call(kind, "get_tuple", config(c["thread_id"], c["checkpoint_ns"]))
            assert latest is not None and one is not None and _comparable(one) == _comparable(latest), (kind, c)

    async def run(self, steps: int) -> None:
        for _ in range(steps):
            roll = self.rng.random()
            if roll < 0.7:
                await self.put()
            elif roll < 0.78:
                await self.maintain()
            else:
                await self.check()


def _savers(sync: Any, aio: Any, prefix: str, partitions: int) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for view in ("full", "shallow"):
        options = {"prefix": prefix, "view": view, "partitions": partitions, "projections": ("full", "shallow")}
        out[f"sync-{view}"] = StreamSaver(sync, **options)
        out[f"async-{view}"] = AsyncStreamSaver(aio, **options)
    return out


async def _run(savers: dict[str, Any], seed: int, steps: int) -> None:
    for saver in savers.values():
        if isinstance(saver, AsyncStreamSaver):
            await saver.setup()
        else:
            saver.setup()
    run = Run(seed, savers, threads=20)
    await run.run(steps)
    assert run.checks > steps // 10


@pytest.mark.parametrize("seed", [1, 2, 3])
async def test_random_work_reads_as_the_model_holds(
    client: redis.Redis, aclient: redis.asyncio.Redis, prefix: str, seed: int
) -> None:
    await _run(_savers(client, aclient, prefix, 4), seed, 700)


async def test_random_work_on_a_cluster_reads_as_the_model_holds(cluster_url: str, prefix: str) -> None:
    sync, aio = sync_client(cluster_url), async_client(cluster_url)
    try:
        await _run(_savers(sync, aio, prefix, 16), 7, 500)
    finally:
        sync.close()
        await aio.aclose()
