"""A store writer killed with SIGKILL at any instant of a batch leaves every item whole: never an
item without its vectors, never a log entry without its item (or the other way round), and
every acknowledged put reads back.

As for the checkpoint writers (tests/integration/test_writer_crash.py): writers are forked from
the test process and SIGKILLed after a random delay. Each puts batches of items spread over
several store partitions (a batch is one atomic call per partition, so a kill between two
partitions' calls leaves some of a batch's partitions written, each whole), with values of mixed
sizes (up to ~200 kB, so a kill often lands mid-send) and two embedded fields per item (several
vectors each), plus an upsert of a shared item; it records an acknowledgement in a shared file
only after the batch returned. Then: `verify` folds the partition logs afresh and compares every
item document (its vectors included), every item document holds one vector per embedded text,
the feeds' pointers and the logs' entries name each other, the index holds every item, and every
acknowledged item reads back with its value.
"""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import orjson
import pytest
import redis
from crash_harness import KILLS, acknowledge, complete_lines, kill_writers
from fake_embeddings import DIMS, Weighted
from langgraph.store.base import PutOp

from projectors.store_domain import STORE
from streamsaver import StreamStore
from streamsaver.log.keys import Keyspace
from streamsaver.ops.verify import verify

pytestmark = pytest.mark.slow

USERS = 7
SIZES = (10, 3_000, 60_000, 200_000)
PER_BATCH = 4


def _index() -> dict[str, Any]:
    return {"dims": DIMS, "embed": Weighted(), "fields": ["text", "tags[*]"]}


def _value(writer: int, batch: int, item: int) -> dict[str, Any]:
    size = SIZES[(batch + item) % len(SIZES)]
    return {"text": f"fact {writer}/{batch}/{item} " + "a" * size, "tags": [f"w{writer}", f"b{batch}"], "n": batch}


def _batch(writer: int, batch: int) -> list[PutOp]:
    ops = [
        PutOp((f"user{(writer + batch + item) % USERS}", "facts"), f"{writer}-{batch}-{item}",
              _value(writer, batch, item))
        for item in range(PER_BATCH)
    ]
    # An upsert of an item every writer rewrites: its created_at stays, its vectors are replaced.
    return [*ops, PutOp((f"user{writer % USERS}", "profile"), "card", _value(writer, batch, PER_BATCH))]


def _write_forever(url: str, prefix: str, writer: int, acks: Path) -> None:
    """The child: put batch after batch, acknowledging each after it returned (one line, one
    write(2), so a kill never leaves half a line)."""
    # No setup(): the parent set the deployment up, and a first put sets up what it needs itself.
    store = StreamStore(redis.Redis.from_url(url), prefix=prefix, index=_index())
    ack = acknowledge(acks)
    batch = 0
    while True:
        store.batch(_batch(writer, batch))
        ack(f"{writer} {batch}")
        batch += 1


def _documents(client: redis.Redis, prefix: str) -> dict[bytes, dict[str, Any]]:
    keys = list(client.scan_iter(match=f"{prefix}:items:doc:*", count=1000))
    return {key: orjson.loads(client.execute_command("JSON.GET", key, "$"))[0] for key in keys}


def _feeds_match_logs(client: redis.Redis, prefix: str) -> None:
    keyspace = Keyspace(prefix, int(client.hget(f"{prefix}:meta", "partitions") or 0))
    pointed: set[bytes] = set()
    logged: set[bytes] = set()
    for partition in range(keyspace.partitions):
        store = keyspace.store(str(partition))
        pointed |= {fields[b"id"] for _, fields in client.xrange(store.feed)}
        logged |= {entry_id for entry_id, _ in client.xrange(store.log)}
    assert pointed == logged, "a store log entry without its feed pointer, or a pointer without its entry"


def test_store_writers_killed_at_random_instants_leave_every_item_whole_and_every_ack_readable(
    client: redis.Redis, redis_url: str, prefix: str, tmp_path: Path
) -> None:
    StreamStore(client, prefix=prefix, index=_index()).setup()
    acks = tmp_path / "acks"
    acks.mkdir()
    seed = random.randrange(2**32)

    killed = kill_writers(lambda n, own: _write_forever(redis_url, prefix, n, own), acks, random.Random(seed),
                          (0.003, 0.06))

    acknowledged = [tuple(map(int, line.split())) for line in complete_lines(acks)]
    assert killed >= 200, f"seed {seed}: only {killed} writers were killed mid-work"
    assert len(acknowledged) >= KILLS // 16, f"seed {seed}: the writers hardly got anything done"
    report = verify(client, prefix, domain=STORE)
    assert report.matches, (seed, report.differences)
    _feeds_match_logs(client, prefix)
    documents = _documents(client, prefix)
    for key, document in documents.items():
        item = document["i"]
        texts = 1 + len(item["v"]["tags"])
        assert len(item.get("e", [])) == texts, f"seed {seed}: {key!r} holds {len(item.get('e', []))} vectors"
    info = client.ft(f"{prefix}:items:idx:v5").info()
    assert int(info["num_docs"]) == len(documents), f"seed {seed}: the index lacks items"
    store = StreamStore(client, prefix=prefix, index=_index())
    for writer, batch in acknowledged:
        for op in _batch(writer, batch)[:PER_BATCH]:
            got = store.get(op.namespace, op.key)
            assert got is not None and got.value == op.value, f"seed {seed}: acknowledged {op.key} is lost"
    print(f"kills mid-work: {killed}, acknowledged batches: {len(acknowledged)}, items: {len(documents)}")
