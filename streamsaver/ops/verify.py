"""Verify: do the live views say exactly what the thread logs say?

`verify` folds every thread log afresh into a scratch key prefix of the same Redis,
``P:verify.<random hex>``, through the same apply path as the append and replay
(`streamsaver.ops.replay.Replayer` with a `target` keyspace), then compares every view key and
every position of the deployment with its scratch twin (the same key name under the scratch
prefix). Views hold pointers (log entry ids), not copies, so an intact view is byte-identical to
its twin. The scratch prefix sits under ``P:`` (an ACL rule on ``P:*`` still covers it) but no
pattern of the deployment matches it: not ``P:full:*``, ``P:log:*``, ``P:pos:*``, nor the
indexes, which cover ``P:<view>:cp:``.

Comparison is by type: JSON documents by ``JSON.GET`` (bytes; a difference names the JSON
paths), hashes field by field, sets member by member, sorted sets member and score; of a
positions hash only the fields of the views verified. A key only in the live views is *extra*
(no logged event accounts for it), a key only in the scratch views is *missing* (the log says
it should be there), a key in both with other content is *different*. Then the views' indexes
are checked (`streamsaver.ops.index_check`): present, of the declared schema, done indexing,
holding every document; each problem makes the report not match.

The scratch keys are deleted at the end, also on an error or an interrupt; a process killed
outright leaves them under ``P:verify.*``. While it runs, verification holds a second copy of
the views verified. Writes that land during verification may show up as differences (the
scratch fold may have read a log before them): verify a quiet deployment, or run it again.

    report = verify(redis.Redis.from_url(url), "streamsaver")
    assert report.matches, report.differences
"""

from __future__ import annotations

import secrets
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any, Literal

import orjson
from langgraph.checkpoint.serde.base import SerializerProtocol
from redis import Redis

from projectors.domain import CHECKPOINTS
from streamsaver.drivers.wire import Command, enqueue
from streamsaver.log.domain import Domain
from streamsaver.log.keys import Keyspace, ViewName, nested_prefix
from streamsaver.ops.index_check import STILL_INDEXING, index_problems
from streamsaver.ops.inspection import deployment_views
from streamsaver.ops.payloads import CorruptPayload, PayloadCheck, check_payloads
from streamsaver.ops.replay import Replayer

__all__ = ["Difference", "VerifyReport", "scratch_prefix", "verify"]

Kind = Literal["missing", "extra", "different"]
Value = tuple[str, Any] | None
"""A key's content as compared: (Redis type, normalized content), or None when absent."""

_BATCH = 200
_SHOWN = 3


@dataclass(frozen=True)
class Difference:
    """One view key whose content is not what the logs give.

    `key` is the live key name; `kind` is ``missing`` (the logs give it, the view lacks it),
    ``extra`` (the view has it, no logged event accounts for it) or ``different``; `detail`
    says what differs.
    """

    key: str
    kind: Kind
    detail: str


@dataclass
class VerifyReport:
    """The outcome of `verify`: what was folded, the counts of each verdict, the first differences."""

    prefix: str
    views: tuple[ViewName, ...]
    threads: int = 0
    events: int = 0
    keys_compared: int = 0
    equal: int = 0
    missing: int = 0
    extra: int = 0
    different: int = 0
    differences: list[Difference] = field(default_factory=list)
    payloads_checked: int = 0
    payloads_encrypted: int = 0
    corrupt: int = 0
    corrupt_payloads: list[CorruptPayload] = field(default_factory=list)
    index_problems: list[str] = field(default_factory=list)
    """What is wrong with the views' indexes (`streamsaver.ops.index_check`)."""

    @property
    def matches(self) -> bool:
        """True when every view key and position equals what the logs give, every payload of
        the logs loads (`streamsaver.ops.payloads`) and every index is whole (one still indexing
        is reported, and counts as whole: it passes by itself)."""
        broken = [p for p in self.index_problems if not p.startswith(STILL_INDEXING)]
        return self.missing == self.extra == self.different == self.corrupt == 0 and not broken

    def add_payloads(self, payloads: PayloadCheck) -> None:
        """Take in what `check_payloads` found."""
        self.payloads_checked, self.payloads_encrypted = payloads.checked, payloads.encrypted
        self.corrupt, self.corrupt_payloads = payloads.corrupt, payloads.details

    def to_dict(self) -> dict[str, Any]:
        """The report as plain JSON-ready data (with ``matches``)."""
        return asdict(self) | {"views": list(self.views), "matches": self.matches}

    def record(self, key: bytes, live: Value, expected: Value, limit: int) -> None:
        """Count one key (`live` against what the logs give, `expected`); keep its difference
        while fewer than `limit` are kept. Absent on both sides is not a key at all."""
        if live is None and expected is None:
            return
        self.keys_compared += 1
        if live == expected:
            self.equal += 1
            return
        kind: Kind = "missing" if live is None else "extra" if expected is None else "different"
        setattr(self, kind, getattr(self, kind) + 1)
        if len(self.differences) < limit:
            self.differences.append(Difference(_text(key), kind, describe(live, expected)))


def scratch_prefix(prefix: str) -> str:
    """A fresh scratch key prefix for verifying the deployment under `prefix`."""
    return nested_prefix(prefix, f"verify.{secrets.token_hex(6)}")


def verify(
    client: Redis,
    prefix: str,
    views: Sequence[str] | None = None,
    *,
    max_differences: int = 20,
    progress: Callable[[int], None] | None = None,
    domain: Domain = CHECKPOINTS,
    serde: SerializerProtocol | None = None,
    compared: Callable[[int], None] | None = None,
) -> VerifyReport:
    """Fold every log of `domain` into scratch views and compare them with the live views; of
    the checkpoint logs, also load every payload with `serde` (`streamsaver.ops.payloads`).

    Args:
        client: a ``redis.Redis`` with ``decode_responses=False``.
        prefix: the deployment's key prefix.
        views: the views to verify; default: those the deployment keeps (whose index a saver
            or projector worker created, `streamsaver.ops.inspection.deployment_views`).
        max_differences: how many differences the report details (all are counted).
        progress: called with the number of events folded after each round trip.
        domain: whose logs and views (default: checkpoints).
        serde: the serializer that loads the payloads (default: `SafeSerializer`; pass an `EncryptedSerializer`).
        compared: called with the number of keys compared after each batch (the second phase).

    Returns:
        The report; `VerifyReport.matches` is True when the views equal what the logs give.

    Raises:
        ConfigurationError: nothing was ever set up under `prefix`.
        InvalidInputError: an unknown view name.
        EventDecodeError: a log holds an event this code cannot read.
        redis.exceptions.RedisError: the server failed a command.
    """
    named = deployment_views(client, prefix, domain) if views is None else views
    chosen = tuple(dict.fromkeys(domain.view_of(v) for v in named))
    replayer = Replayer.open(client, prefix, target=scratch_prefix(prefix), domain=domain)
    report = VerifyReport(prefix, chosen)
    try:
        stats = replayer.replay(chosen, progress=progress)
        report.threads, report.events = stats.threads, stats.events
        _compare(_Comparison(client, replayer.keyspace, replayer.target, chosen, report, max_differences),
                 domain, compared)
        report.index_problems = index_problems(client, replayer.keyspace, chosen, domain)
        if domain is CHECKPOINTS:
            _check_payloads(report, client, prefix, serde, max_differences)
    finally:
        _delete_prefix(client, replayer.target.prefix)
    return report


def _compare(comparison: _Comparison, domain: Domain, compared: Callable[[int], None] | None) -> None:
    """Compare the live keys of the views and the domain's positions with their scratch twins."""
    comparison.positions = domain.positions_family
    comparison.compared = compared
    comparison.run()


def _check_payloads(
    report: VerifyReport, client: Redis, prefix: str, serde: SerializerProtocol | None, limit: int
) -> None:
    """Load every payload of the checkpoint logs into `report` (`streamsaver.ops.payloads`)."""
    report.add_payloads(check_payloads(client, prefix, serde, limit=limit))


def _delete_prefix(client: Redis, prefix: str) -> int:
    """Delete every key under ``prefix:``; returns how many were deleted."""
    deleted = 0
    for batch in _batches(client.scan_iter(match=Keyspace(prefix, scratch=True).pattern, count=1000), 500):
        deleted += int(client.unlink(*batch))
    return deleted


class _Comparison:
    """Compares the live keys of some views (and positions) with their scratch twins."""

    def __init__(
        self,
        client: Redis,
        live: Keyspace,
        scratch: Keyspace,
        views: tuple[ViewName, ...],
        report: VerifyReport,
        limit: int,
    ) -> None:
        self.redis, self.live, self.scratch = client, live, scratch
        self.views, self.report, self.limit = views, report, limit
        self.positions = "pos"
        """The key family of the positions hashes compared (the domain's)."""
        self.compared: Callable[[int], None] | None = None
        """Called with the number of keys of each batch compared (progress)."""

    def _patterns(self, keyspace: Keyspace) -> list[str]:
        return [keyspace.view_pattern(v) for v in self.views] + [keyspace.positions_pattern(self.positions)]

    def _twin(self, live_key: bytes) -> bytes:
        return self.scratch.prefix.encode() + live_key[len(self.live.prefix) :]

    def _live_of(self, scratch_key: bytes) -> bytes:
        return self.live.prefix.encode() + scratch_key[len(self.scratch.prefix) :]

    def run(self) -> None:
        """Compare every live key with its twin, then find twins whose live key is absent."""
        for pattern in self._patterns(self.live):
            for batch in _batches(self.redis.scan_iter(match=pattern, count=1000), _BATCH):
                self._compare(batch)
        for pattern in self._patterns(self.scratch):
            for batch in _batches(self.redis.scan_iter(match=pattern, count=1000), _BATCH):
                live_keys = [self._live_of(k) for k in batch]
                pipe = self.redis.pipeline(transaction=False)
                for key in live_keys:
                    pipe.exists(key)
                self._compare([k for k, n in zip(live_keys, pipe.execute(), strict=True) if not n])

    def _compare(self, live_keys: list[bytes]) -> None:
        if not live_keys:
            return
        keys = [k for live in live_keys for k in (live, self._twin(live))]
        pipe = self.redis.pipeline(transaction=False)
        for key in keys:
            pipe.type(key)
        types = [_text(t) for t in pipe.execute()]
        pipe = self.redis.pipeline(transaction=False)
        enqueue(pipe, [self._fetch(key, type_) for key, type_ in zip(keys, types, strict=True)])
        values = [self._value(k, t, r) for k, t, r in zip(keys, types, pipe.execute(), strict=True)]
        for i, live in enumerate(live_keys):
            self.report.record(live, values[2 * i], values[2 * i + 1], self.limit)
        if self.compared is not None:
            self.compared(len(live_keys))

    def _is_positions(self, key: bytes) -> bool:
        stems = (self.live.positions_stem(self.positions), self.scratch.positions_stem(self.positions))
        return key.startswith(tuple(stem.encode() for stem in stems))

    def _fetch(self, key: bytes, type_: str) -> Command:
        if type_ == "hash" and self._is_positions(key):
            return ["HMGET", key, *self.views]
        fetch: dict[str, Command] = {
            "none": ["EXISTS", key],
            "ReJSON-RL": ["JSON.GET", key],
            "hash": ["HGETALL", key],
            "set": ["SMEMBERS", key],
            "string": ["GET", key],
            "zset": ["ZRANGE", key, 0, -1, "WITHSCORES"],
        }
        return fetch.get(type_, ["DUMP", key])

    def _value(self, key: bytes, type_: str, reply: Any) -> Value:
        if type_ == "none":
            return None
        if type_ == "hash" and self._is_positions(key):
            kept = {v.encode(): r for v, r in zip(self.views, reply, strict=True) if r is not None}
            return ("hash", kept) if kept else None
        if type_ == "hash":
            return ("hash", reply if isinstance(reply, dict) else _pairs(reply))
        if type_ == "set":
            return ("set", set(reply))
        if type_ == "zset":
            return ("zset", {m: str(s).encode() if isinstance(s, float) else s for m, s in _pairs(reply).items()})
        return (type_, reply)


def describe(live: Value, expected: Value) -> str:
    """What differs between a live key's content and what the logs give, in a few words."""
    if live is None:
        assert expected is not None
        return f"absent; the logs give a {_name(expected)}{_content(expected)}"
    if expected is None:
        return f"a {_name(live)} no logged event accounts for{_content(live)}"
    if live[0] != expected[0]:
        return f"a {_name(live)}; the logs give a {_name(expected)}"
    kind, have, want = live[0], live[1], expected[1]
    if kind == "ReJSON-RL":
        lines = list(_json_paths(orjson.loads(have), orjson.loads(want), "$"))
    elif kind in ("hash", "zset"):
        lines = list(_mapping_lines(have, want, "field" if kind == "hash" else "member"))
    elif kind == "set":
        lines = [f"member {_short(m, 120)} missing" for m in sorted(want - have)]
        lines += [f"member {_short(m, 120)} not in the logs" for m in sorted(have - want)]
    else:
        lines = ["the content differs"]
    more = f"; and {len(lines) - _SHOWN} more" if len(lines) > _SHOWN else ""
    return "; ".join(lines[:_SHOWN]) + more


def _json_paths(have: Any, want: Any, path: str) -> Iterator[str]:
    if isinstance(have, dict) and isinstance(want, dict):
        for name in sorted(have.keys() | want.keys()):
            if name not in have:
                yield f"{path}.{name} missing (the logs give {_short(want[name])})"
            elif name not in want:
                yield f"{path}.{name} not in the logs"
            else:
                yield from _json_paths(have[name], want[name], f"{path}.{name}")
    elif isinstance(have, list) and isinstance(want, list) and len(have) == len(want):
        for i, (a, b) in enumerate(zip(have, want, strict=True)):
            yield from _json_paths(a, b, f"{path}[{i}]")
    elif have != want or type(have) is not type(want):
        yield f"{path} is {_short(have)}, the logs give {_short(want)}"


def _mapping_lines(have: dict[bytes, Any], want: dict[bytes, Any], noun: str) -> Iterator[str]:
    for name in sorted(have.keys() | want.keys()):
        if name not in have:
            yield f"{noun} {_short(name, 120)} missing (the logs give {_short(want[name])})"
        elif name not in want:
            yield f"{noun} {_short(name, 120)} not in the logs"
        elif have[name] != want[name]:
            yield f"{noun} {_short(name, 120)} is {_short(have[name])}, the logs give {_short(want[name])}"


def _content(value: tuple[str, Any]) -> str:
    readable = value[0] in ("ReJSON-RL", "hash", "set", "zset", "string")
    return f": {_short(value[1])}" if readable else ""


def _name(value: tuple[str, Any]) -> str:
    return {"ReJSON-RL": "JSON document", "zset": "sorted set"}.get(value[0], value[0])


def _pairs(reply: Sequence[Any]) -> dict[Any, Any]:
    """A flat ``[k, v, k, v]`` reply, or a list of pairs, as a dict."""
    if reply and isinstance(reply[0], (list, tuple)):
        return dict(reply)
    return dict(zip(reply[::2], reply[1::2], strict=True))


def _text(value: Any) -> str:
    return value.decode("utf-8", "backslashreplace") if isinstance(value, bytes) else str(value)


def _short(value: Any, width: int = 60) -> str:
    """A value in at most `width` characters: raw JSON and ids as text, containers summarized."""
    if isinstance(value, bytes):
        text = _text(value)
    elif isinstance(value, dict):
        text = "{" + ", ".join(f"{_short(k, 24)}: {_short(v, 24)}" for k, v in sorted(value.items())) + "}"
    elif isinstance(value, (set, frozenset)):
        text = "{" + ", ".join(_short(m, 24) for m in sorted(value)) + "}"
    else:
        text = orjson.dumps(value, default=repr).decode()
    return text if len(text) <= width else text[: width - 3] + "..."


def _batches(items: Iterable[bytes], size: int) -> Iterator[list[bytes]]:
    batch: list[bytes] = []
    for item in items:
        batch.append(item)
        if len(batch) >= size:
            yield batch
            batch = []
    if batch:
        yield batch
