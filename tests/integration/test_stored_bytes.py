"""The bytes a deployment stores are pinned: a fixed workload must leave a fixed keyspace.

Contract: a deterministic workload through the public API only (`StreamSaver`, `AsyncStreamSaver`,
their maintenance methods) leaves exactly what ``tests/data/stored_corpus.json`` records: every
key under the prefix with its type, whether it has a TTL, and its content (stream entries field by
field, hashes, sets, sorted sets with scores, strings, ``JSON.GET`` of documents), and each
RediSearch index's definition and attributes. A refactor must not change it; a deliberate change
of the stored format regenerates the file, and says so in its commit.

Normalised, as it legitimately differs between runs (nothing else is):

* the key prefix (unique per test): ``t`` then ``x``s, same length, in keys and values;
* stream entry ids (``XADD *``: the server clock), wherever they occur: entry ids, feed pointers,
  positions, view hashes, JSON documents, a list delta's link. ``<Ln>`` is the n-th id, in id
  order, of one thread (its log's, and those its keys and the feed pointers naming it hold, a
  pruned or deleted entry's included); ``<Fn>`` the n-th of one partition feed: scoped, as two
  streams can hand out the same id. A value that parses as a `pack`ing (a 4-byte big-endian
  length before each part: events' payload fields, a delta in a channel value) is normalised part
  by part and packed again, so an id's length leaves no trace. No id sits in a zstd frame (frames
  hold serde output; kept as stored): one there would make runs disagree, and the corpus was
  checked on many fresh servers;
* TTLs: only whether a key has one.

The workload pauses before each maintenance call, so that no id handed out after a log is
rewritten or deleted repeats one a feed pointer still names. The corpus also pins the serde's
output (langgraph, langchain-core, ormsgpack), zstandard's frames and RedisJSON / RediSearch
replies (the embedded Redis 8.2 of ``streamsaver[embedded]``): upgrading those can fail it too.

Regenerate (on purpose only): ``STREAMSAVER_REGEN_CORPUS=1 python -m pytest
tests/integration/test_stored_bytes.py``, or ``python tests/integration/test_stored_bytes.py``.
"""

from __future__ import annotations

import base64
import difflib
import itertools
import json
import os
import re
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import redis
import redis.asyncio
from langchain_core.messages import AIMessage, HumanMessage
from langgraph.types import Interrupt

from streamsaver import AsyncStreamSaver, StreamSaver

GOLDEN = Path(__file__).parents[1] / "data" / "stored_corpus.json"
REGEN = os.environ.get("STREAMSAVER_REGEN_CORPUS") == "1"
WORDS = " ".join(["agent", "tool", "call", "result", "graph", "node", "message", "redis"] * 8)
ODD = "odd:{tag}/ünï ☃"
CHILD = "child:1f0000aa-0000-6000-8000-0000000000aa"


class Thread:
    """Builds the `put` arguments of one thread and namespace: fixed ids, versions, metadata."""

    def __init__(self, numbers: Iterator[int], thread_id: str, ns: str = "", parents: dict[str, str] | None = None):
        self.numbers, self.thread_id, self.ns, self.parents = numbers, thread_id, ns, parents or {}
        self.values: dict[str, Any] = {}
        self.versions: dict[str, str | int | float] = {}
        self.parent: str | None = None
        self.ids: list[str] = []

    def config(self) -> Any:
        configurable = {"thread_id": self.thread_id, "checkpoint_ns": self.ns}
        return {"configurable": configurable | ({"checkpoint_id": self.parent} if self.parent else {})}

    def step(self, run_id: str, **values: Any) -> tuple[Any, Any, Any, dict[str, str | int | float]]:
        n = next(self.numbers)
        new: dict[str, str | int | float] = dict.fromkeys(values, f"{n:032}.{n * 7919 % 10**16:016}")
        self.values |= values
        self.versions |= new
        checkpoint = {
            "v": 2, "id": f"1f0{n:05x}-0000-6000-8000-{n:012x}", "ts": f"2025-01-01T00:{n // 60:02}:{n % 60:02}+00:00",
            "channel_values": dict(self.values), "channel_versions": dict(self.versions),
            "versions_seen": {"agent": dict(self.versions)}, "pending_sends": [], "updated_channels": sorted(values),
        }
        metadata = {"source": "loop", "step": n, "parents": self.parents, "run_id": run_id, "user": "ana"}
        cfg = self.config()
        self.parent = checkpoint["id"]
        self.ids.append(self.parent)
        return cfg, checkpoint, metadata, new


def turn(k: int, size: int = 1) -> list[Any]:
    """Two messages (the human one `size` times longer)."""
    return [HumanMessage(f"{k}: {WORDS * size}", id=f"h{k}"), AIMessage(f"{k}: {WORDS}", id=f"a{k}")]


def run_sync(saver: StreamSaver, ttl_saver: StreamSaver, numbers: Iterator[int]) -> None:
    """Puts and writes (special ones too) on two namespaces and odd thread ids, every maintenance
    call, then threads of a saver with `default_ttl`, one of them pinned."""
    def pause() -> None:  # see the module docstring
        time.sleep(0.003)

    alpha, messages = Thread(numbers, "alpha"), []
    for k in range(11):  # deltas, a whole value every 8 versions, compressed once >= 4 KiB
        messages = messages + turn(k, size=12 if k == 6 else 1)  # one delta compressed on its own
        saver.put(*alpha.step("run-1" if k < 6 else "run-2", messages=messages, counter=k))
        if k in (2, 7):
            saver.put_writes(alpha.config(), [("messages", turn(100 + k)), ("counter", k + 1)], f"task-{k}", "~agent")
    saver.put_writes(alpha.config(), [("__error__", ValueError("boom"))], "task-err")
    interrupt = Interrupt(value={"question": "go on?"}, id="int-1")
    saver.put_writes(alpha.config(), [("__interrupt__", [interrupt])], "task-int")
    child = Thread(numbers, "alpha", CHILD, parents={"": alpha.parent or ""})
    for k in range(2):
        saver.put(*child.step("run-2", inner=[k] * 50))
    saver.put_writes(child.config(), [("inner", [9])], "task-child", "~agent|child")

    odd = Thread(numbers, ODD)
    for k in range(4):
        saver.put(*odd.step("run-3", messages=turn(k), flag=k % 2 == 0))
    saver.put_writes(odd.config(), [("flag", True)], "task:{odd}")

    retained, messages = Thread(numbers, "retained"), []
    saver.put(*retained.step("run-r", profile={"name": "ana"}, messages=messages))
    for k in range(4):  # `profile` stays in the first entry: retention keeps it (ValuesRetained)
        messages = messages + turn(k)
        saver.put(*retained.step("run-r", messages=messages))

    runs, doomed = Thread(numbers, "runs"), Thread(numbers, "doomed")
    for k in range(4):
        saver.put(*runs.step(f"run-x{k % 2}", note=f"note {k}"))
    saver.put(*doomed.step("run-d", note="gone soon"))

    pause()
    saver.copy_thread("alpha", "alpha-copy")
    pause()
    saver.copy_thread("alpha", "alpha-until", until=alpha.ids[4])
    pause()
    saver.prune([ODD], strategy="keep_latest")
    pause()
    saver.retain(["retained"], keep_last=2)
    pause()
    saver.delete_for_runs(["run-x1"])
    pause()
    saver.delete_thread("doomed")

    # Both threads are in one partition: a put of one within the millisecond of the other's gets
    # a feed id (`@inc`, a pointer) one past its own log entry's id, an extra id among its own.
    expiring, pinned = Thread(numbers, "expiring"), Thread(numbers, "pinned")
    for k in range(2):
        pause()
        ttl_saver.put(*expiring.step("run-t", note=f"t{k}"))
        pause()
        ttl_saver.put(*pinned.step("run-t", note=f"p{k}"))
    pause()
    ttl_saver.put_writes(expiring.config(), [("note", "w")], "task-ttl")
    pause()
    ttl_saver.pin_thread("pinned")
    pause()
    ttl_saver.put(*pinned.step("run-t", note="after pin"))


async def run_async(saver: AsyncStreamSaver, numbers: Iterator[int]) -> None:
    thread = Thread(numbers, "async")
    for k in range(3):
        await saver.aput(*thread.step("run-a", messages=turn(k)))
    await saver.aput_writes(thread.config(), [("messages", turn(50))], "task-async")


ENTRY_ID = re.compile(rb"(?<![0-9])([0-9]{13})-([0-9]{1,19})(?![0-9])")
PARTITION_TAG = re.compile(rb"\{p[0-9]+\}")
REWRITE_CLOCK = re.compile(rb"/[0-9]{10}\.[0-9]{1,6}$")
"""The server clock in the incarnation a rewrite gives a log (positions field ``@inc``)."""
Dump = dict[bytes, dict[str, Any]]


def dump(client: redis.Redis, prefix: str) -> tuple[Dump, dict[bytes, Any]]:
    """Every key under `prefix` (type, TTL flag, content) and every index of it, as bytes."""
    keys: Dump = {}
    for key in sorted(client.scan_iter(match=f"{prefix}:*", count=1000)):
        kind = client.type(key).decode()
        item = keys[key] = {"type": kind, "ttl": client.pttl(key) > 0}
        if kind == "stream":
            item["entries"] = [(eid, list(fields.items())) for eid, fields in client.xrange(key)]
        elif kind == "hash":
            item["fields"] = sorted(client.hgetall(key).items())
        elif kind == "set":
            item["members"] = sorted(client.smembers(key))
        elif kind == "zset":
            item["members"] = client.zrange(key, 0, -1, withscores=True)
        elif kind == "string":
            item["value"] = client.get(key)
        else:
            assert kind == "ReJSON-RL", f"unexpected type {kind} of {key!r}"
            item["value"] = client.execute_command("JSON.GET", key)
    names = sorted(n for n in client.execute_command("FT._LIST") if n.startswith(f"{prefix}:".encode()))
    wanted = (b"index_definition", b"index_options", b"attributes")
    return keys, {n: {k: v for k, v in client.execute_command("FT.INFO", n).items() if k in wanted} for n in names}


def scope_of(key: bytes) -> bytes:
    """The escaped thread of a thread's key (the word after its ``{pN}`` tag), else the key."""
    words = key.split(b":")
    tag = next((i for i, w in enumerate(words) if PARTITION_TAG.fullmatch(w)), len(words))
    return words[tag + 1] if tag + 1 < len(words) else key


def escape(thread_id: bytes) -> bytes:
    """A thread id as keys spell it (bytes outside ``[A-Za-z0-9._-]`` as ``%XX``)."""
    return re.sub(rb"[^A-Za-z0-9._-]", lambda m: b"%%%02X" % m.group()[0], thread_id)


def walk(key: bytes, item: dict[str, Any], leaf: Callable[[bytes, bytes], Any]) -> dict[str, Any]:
    """`item` with ``leaf(scope, data)`` applied to each byte string (a feed entry's fields: in
    the scope of the thread it names)."""
    scope = scope_of(key)
    out: dict[str, Any] = {"type": item["type"], "ttl": item["ttl"]}
    if "entries" in item:
        out["entries"] = []
        for eid, fields in item["entries"]:
            inner = escape(dict(fields)[b"thread"]) if scope == key else scope
            out["entries"].append([leaf(scope, eid), [[leaf(inner, f), leaf(inner, v)] for f, v in fields]])
    for name in ("fields", "members"):
        if name in item:
            out[name] = [
                [x if isinstance(x, float) else leaf(scope, x) for x in m] if isinstance(m, tuple) else leaf(scope, m)
                for m in item[name]
            ]
    if "value" in item:
        out["value"] = leaf(scope, item["value"])
    return out


def parts(data: bytes) -> list[bytes] | None:
    """The parts of a `pack`ing (a 4-byte big-endian length before each), None if it is not one."""
    out, at = [], 0
    while at < len(data):
        end = at + 4 + int.from_bytes(data[at : at + 4], "big")
        if at + 4 > len(data) or end > len(data):
            return None
        out.append(data[at + 4 : end])
        at = end
    return out if data else None


def show(data: bytes) -> str:
    """Printable text as it is; other bytes as ``b64:`` and their base64."""
    try:
        if (text := data.decode()).isprintable():
            return text
    except UnicodeDecodeError:
        pass
    return "b64:" + base64.b64encode(data).decode()


def normalise(keys: Dump, indexes: dict[bytes, Any], prefix: str, window: tuple[int, int]) -> dict[str, Any]:
    """The dump as JSON-ready data, prefix and entry ids replaced (see the module docstring).
    An entry id is a match of `ENTRY_ID` whose milliseconds lie in `window` (the workload's)."""
    pfx, seen = prefix.encode(), dict[bytes, set[bytes]]()
    fixed = b"t" + b"x" * (len(pfx) - 1)

    def note(scope: bytes, data: bytes) -> None:
        ids = {m.group() for m in ENTRY_ID.finditer(data) if window[0] <= int(m[1]) <= window[1]}
        seen.setdefault(scope, set()).update(ids)

    for key, item in keys.items():
        walk(key, item, note)
    tokens = {}  # scope -> id -> token, numbered in (milliseconds, sequence) order
    for scope, ids in seen.items():
        ordered = sorted(ids, key=lambda i: [int(x) for x in i.split(b"-")])
        tokens[scope] = {eid: b"<%s%d>" % (b"F" if b":" in scope else b"L", n) for n, eid in enumerate(ordered)}

    def replace(table: dict[bytes, bytes], data: bytes) -> bytes:
        if (inner := parts(data)) is not None:  # a packing: normalise its parts, pack them again
            return b"".join(len(p).to_bytes(4, "big") + p for p in (replace(table, q) for q in inner))
        data = REWRITE_CLOCK.sub(b"/<clock>", data)
        return ENTRY_ID.sub(lambda m: table.get(m.group(), m.group()), data).replace(pfx, fixed)

    def plain(data: Any) -> Any:
        if isinstance(data, dict):
            return {plain(k): plain(v) for k, v in data.items()}
        if isinstance(data, list):
            return [plain(v) for v in data]
        return show(data.replace(pfx, fixed)) if isinstance(data, bytes) else data

    def leaf(scope: bytes, data: bytes) -> str:
        return show(replace(tokens.get(scope, {}), data))

    return {"keys": {plain(key): walk(key, item, leaf) for key, item in keys.items()}, "indexes": plain(indexes)}


async def test_stored_bytes_match_the_corpus(client: redis.Redis, aclient: redis.asyncio.Redis, prefix: str) -> None:
    start, numbers = client.time()[0] * 1000, itertools.count(1)
    saver = StreamSaver(client, prefix=prefix, projections=("full", "shallow"))  # both views' bytes are pinned
    saver.setup()
    run_sync(saver, StreamSaver(client, prefix=prefix, default_ttl=60), numbers)
    async_saver = AsyncStreamSaver(aclient, prefix=prefix)
    await async_saver.setup()
    await run_async(async_saver, numbers)
    corpus = normalise(*dump(client, prefix), prefix, (start, (client.time()[0] + 1) * 1000))
    if REGEN:
        GOLDEN.parent.mkdir(exist_ok=True)
        GOLDEN.write_text(json.dumps(corpus, indent=1, sort_keys=True, ensure_ascii=False) + "\n")
        pytest.skip(f"rewrote {GOLDEN}")
    assert GOLDEN.exists(), f"no {GOLDEN}: run with STREAMSAVER_REGEN_CORPUS=1 to write it"
    golden = json.loads(GOLDEN.read_text())
    if corpus != golden:
        pytest.fail(difference(golden, corpus), pytrace=False)


def difference(golden: dict[str, Any], corpus: dict[str, Any], shown: int = 3) -> str:
    """The keys only one side has, then a diff of the first `shown` keys that differ."""
    old, new = golden["keys"] | {"@indexes": golden["indexes"]}, corpus["keys"] | {"@indexes": corpus["indexes"]}
    differ = [k for k in sorted(old.keys() & new.keys()) if old[k] != new[k]]
    lines = [f"stored bytes differ from {GOLDEN.name} ({len(differ)} keys differ; the first {shown} below)"]
    lines += [f"  missing: {k}" for k in sorted(old.keys() - new.keys())]
    lines += [f"  extra:   {k}" for k in sorted(new.keys() - old.keys())]
    for key in differ[:shown]:
        a, b = (readable(side[key]).splitlines() for side in (old, new))
        lines += [f"--- {key}", *list(difflib.unified_diff(a, b, "golden", "now", n=2, lineterm=""))[2:60]]
    return "\n".join(lines)


def readable(item: dict[str, Any]) -> str:
    """A corpus item for a diff: a JSON document one member a line, in stored order."""
    item = {
        k: json.loads(v) if item.get("type") == "ReJSON-RL" and k == "value" else v for k, v in sorted(item.items())
    }
    return json.dumps(item, indent=1, ensure_ascii=False)


if __name__ == "__main__":  # `python -m pytest` from the repository root: its packages import first
    os.environ["STREAMSAVER_REGEN_CORPUS"] = "1"
    sys.exit(subprocess.call([sys.executable, "-m", "pytest", __file__, "-q", "-rs"], cwd=Path(__file__).parents[2]))
