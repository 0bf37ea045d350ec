"""The op interpreter (`apply_ops` in ``_lib.lua``) equals one Redis command per op.

`apply_ops` saves redis.calls (consecutive hash writes to one key go out as one HSET, a
multi-field SS.PTRNX reads with one HMGET, a guard reuses the field SS.FOLLOW just read); these
tests run random op blocks through it and through a plain reference interpreter (the contract
of projectors/commands.py, a command per op) on the same starting state, and compare every key,
hash fields in order, and the index each returns.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from typing import Any

import pytest
import redis

from streamsaver.scripts import Script

APPLY_OPS = Script.with_library("apply-ops-probe", "return apply_ops(3, tonumber(ARGV[1]), ARGV[2])")

REFERENCE = Script.with_library(
    "apply-ops-reference",
    """
local id, i, live = ARGV[2], 3, true
for _ = 1, tonumber(ARGV[1]) do
  local argc, op, key = tonumber(ARGV[i]), ARGV[i + 1], ARGV[i + 2]
  if op == 'SS.IFNEWER' then
    local cur = redis.call('HGET', key, ARGV[i + 3])
    live = (not cur) or cur < ARGV[i + 4]
  elseif op == 'SS.IFEQ' then
    live = redis.call('HGET', key, ARGV[i + 3]) == ARGV[i + 4]
  elseif live then
    if op == 'SS.PTR' then
      for k = i + 3, i + argc do redis.call('HSET', key, ARGV[k], id) end
    elseif op == 'SS.PTRNX' then
      for k = i + 3, i + argc do redis.call('HSETNX', key, ARGV[k], id) end
    elseif op == 'SS.FOLLOW' then
      local cur = redis.call('HGET', key, ARGV[i + 3])
      if (not cur) or cur < ARGV[i + 4] then
        redis.call('DEL', key)
        redis.call('HSET', key, ARGV[i + 3], ARGV[i + 4])
      end
    else
      redis.call(unpack(ARGV, i + 1, i + argc))
    end
  end
  i = i + 1 + argc
end
return i
""",
    preludes=(),
)

FIELDS = ("@cid", "a", "b", "c", "d", "e")
IDS = ("c1", "c2", "c3", "c4")


def _random_op(rng: random.Random, stem: str) -> tuple[str, ...]:
    key = f"{stem}:h{rng.randrange(2)}"
    kind = rng.choice(
        ("HSET", "SS.PTR", "SS.PTRNX", "SS.PTRNX", "SS.FOLLOW", "SS.IFNEWER", "SS.IFEQ", "DEL", "SADD", "ZADD")
    )
    if kind == "HSET":
        pairs = [x for _ in range(rng.randint(1, 2)) for x in (rng.choice(FIELDS), rng.choice(IDS))]
        return ("HSET", key, *pairs)
    if kind in ("SS.PTR", "SS.PTRNX"):
        wide = rng.random() < 0.1  # past the 16 held arguments a PTRNX scans
        fields = [
            rng.choice(FIELDS) if not wide else f"w{rng.randrange(40)}"
            for _ in range(rng.randint(1, 20 if wide else 6))
        ]
        return (kind, key, *fields)
    if kind in ("SS.FOLLOW", "SS.IFNEWER", "SS.IFEQ"):
        return (kind, key, rng.choice(("@cid", "@cid", "a")), rng.choice(IDS))
    if kind == "DEL":
        return ("DEL", key)
    if kind == "SADD":
        return ("SADD", f"{stem}:s", rng.choice(FIELDS))
    return ("ZADD", f"{stem}:z", "0", rng.choice(FIELDS))


def _encode(ops: Sequence[tuple[str, ...]], event_id: str) -> list[str | int]:
    args: list[str | int] = [len(ops), event_id]
    for op in ops:
        args += [len(op), *op]
    return args


def _state(client: redis.Redis, stem: str) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name in ("h0", "h1"):
        fields = list(client.hgetall(f"{stem}:{name}").items())
        # Field order as stored while the hash is a listpack; a larger one is a hash table,
        # whose order follows its growth (one HSET of many fields presizes it).
        out[name] = fields if len(fields) <= 128 else sorted(fields)
    out["s"] = sorted(client.smembers(f"{stem}:s"))
    out["z"] = client.zrange(f"{stem}:z", 0, -1)
    return out


def _run(client: redis.Redis, script: Script, ops: Sequence[tuple[str, ...]], event_id: str) -> Any:
    return client.execute_command(*script.evalsha_args([], _encode(ops, event_id)))


def _renamed(ops: Sequence[tuple[str, ...]], stem: str) -> list[tuple[str, ...]]:
    return [tuple(a.replace("STEM", stem) for a in op) for op in ops]


def _compare(
    client: redis.Redis, prefix: str, setup: Sequence[Sequence[tuple[str, ...]]], block: Sequence[tuple[str, ...]]
) -> None:
    """Bring two copies of the keys to the state `setup` leaves, then apply `block` to one with
    apply_ops and to the other with the reference."""
    results = []
    for stem, script in ((f"{prefix}:mine", APPLY_OPS), (f"{prefix}:ref", REFERENCE)):
        for ops in setup:
            if ops:
                _run(client, REFERENCE, _renamed(ops, stem), "0-1")
        results.append((_run(client, script, _renamed(block, stem), "9-9"), _state(client, stem)))
    assert results[0] == results[1]


@pytest.fixture
def scripts(client: redis.Redis) -> redis.Redis:
    for script in (APPLY_OPS, REFERENCE):
        client.script_load(script.source)
    return client


@pytest.mark.parametrize("seed", range(200))
def test_random_blocks_match_a_command_per_op(scripts: redis.Redis, prefix: str, seed: int) -> None:
    rng = random.Random(seed)
    setup = [[_random_op(rng, "STEM") for _ in range(rng.randint(0, 6))] for _ in range(2)]
    block = [_random_op(rng, "STEM") for _ in range(rng.randint(1, 14))]
    _compare(scripts, f"{prefix}{seed}", setup, block)


def test_the_projectors_blocks_match(scripts: redis.Redis, prefix: str) -> None:
    """The shapes the projectors emit: a full put (PTR then PTRNX on one hash), a shallow put
    (FOLLOW, IFNEWER, HSET and PTR on one hash), writes after and before their checkpoint."""
    full_put = [
        ("SS.PTR", "STEM:h0", "@body:c2"),
        ("SS.PTRNX", "STEM:h0", "a", "b", "@body:c2"),
        ("ZADD", "STEM:z", "0", "c2"),
    ]
    shallow_put = [
        ("SS.FOLLOW", "STEM:h1", "@cid", "c2"),
        ("SS.IFNEWER", "STEM:h0", "@cid", "c2"),
        ("HSET", "STEM:h0", "@cid", "c2"),
        ("SS.PTR", "STEM:h0", "@body", "a", "b"),
        ("SADD", "STEM:s", ""),
    ]
    writes = [
        ("SS.FOLLOW", "STEM:h1", "@cid", "c3"),
        ("SS.IFEQ", "STEM:h1", "@cid", "c3"),
        ("SS.PTRNX", "STEM:h1", "t:0", "t:1"),
        ("SS.PTR", "STEM:h1", "t:-1"),
    ]
    old = [("HSET", "STEM:h0", "@cid", "c1", "a", "0-1"), ("HSET", "STEM:h1", "@cid", "c2", "t:0", "0-1")]
    # b is set, not yet stored
    held_first = [("HSET", "STEM:h0", "b", "c1"), ("SS.PTRNX", "STEM:h0", "a", "b", "c", "d")]
    blocks = [
        ([], full_put), ([old], full_put), ([old], shallow_put), ([old], writes), ([], writes), ([old], held_first)
    ]
    for n, (setup, block) in enumerate(blocks):
        _compare(scripts, f"{prefix}{n}", setup, block)


def test_a_field_read_once_is_read_again_after_an_op_wrote_its_hash(scripts: redis.Redis, prefix: str) -> None:
    rewritten = [
        ("SS.IFNEWER", "STEM:h0", "@cid", "c2"),
        ("HSET", "STEM:h0", "@cid", "c3"),
        ("SS.IFEQ", "STEM:h0", "@cid", "c3"),
        ("SS.PTR", "STEM:h0", "x"),
    ]
    pointed = [
        ("SS.FOLLOW", "STEM:h1", "@cid", "c2"),
        ("SS.PTR", "STEM:h1", "@cid"),
        ("SS.IFEQ", "STEM:h1", "@cid", "9-9"),
        ("HSET", "STEM:h1", "y", "1"),
    ]
    elsewhere = [
        ("SS.FOLLOW", "STEM:h1", "@cid", "c2"),
        ("SS.PTRNX", "STEM:h0", "@cid", "b"),
        ("SS.IFNEWER", "STEM:h0", "@cid", "c3"),
        ("HSET", "STEM:h0", "z", "1"),
    ]
    old = [("HSET", "STEM:h0", "@cid", "c1"), ("HSET", "STEM:h1", "@cid", "c1")]
    for n, block in enumerate([rewritten, pointed, elsewhere]):
        _compare(scripts, f"{prefix}{n}", [old], block)


def test_ops_too_wide_to_hold_together_go_out_apart(scripts: redis.Redis, prefix: str) -> None:
    wide = [f"f{k}" for k in range(1500)]
    block = [("SS.PTR", "STEM:h0", *wide[:900]), ("SS.PTRNX", "STEM:h0", *wide[600:]), ("SS.PTRNX", "STEM:h1", *wide)]
    _compare(scripts, prefix, [[("HSET", "STEM:h0", "f1000", "old")]], block)
