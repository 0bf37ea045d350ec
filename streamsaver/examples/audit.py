"""An audit trail: every event of a deployment as one line of an append-only, hash-chained
JSON Lines file, and `verify`, which checks the chain.

Each line is a JSON object (sorted keys) with ``seq`` (0, 1, ...), the event's ``id``, ``type``,
``thread``, ``ns``, ``checkpoint_id``, ``time``, ``metadata``, ``log_id``, ``prev`` (the hash of
the line before; 64 zeros for the first) and ``hash``, the SHA-256 of ``prev`` followed by the
line's other fields as sorted-key JSON. Changing, removing, re-ordering or inserting a line
breaks the chain from there on; `verify` names the first broken line. Cutting lines off the end
is only detectable against a published head hash (`verify` returns it: keep it elsewhere).

Delivery is at-least-once: `AuditTrail` skips an event whose id the trail already holds, so a
re-delivery to the same trail adds nothing. Each subscriber process writes its own trail file.
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

import orjson

from streamsaver.feeds.event import FeedEvent
from streamsaver.feeds.subscriber import Subscriber

__all__ = ["GENESIS", "AuditTrail", "Verdict", "audit_subscriber", "verify"]

GENESIS = "0" * 64


def _digest(prev: str, fields: dict[str, Any]) -> str:
    return hashlib.sha256(prev.encode() + orjson.dumps(fields, option=orjson.OPT_SORT_KEYS)).hexdigest()


class AuditTrail:
    """The handler that appends events to the trail at `path` (created if missing).

    Args:
        path: the JSON Lines file.
        fsync: sync the file to disk after each line (slower, survives a power cut).

    Raises:
        ValueError: the existing file does not verify (it is never appended to then).
    """

    def __init__(self, path: str | Path, *, fsync: bool = False) -> None:
        self.path, self.fsync = Path(path), fsync
        verdict = verify(self.path) if self.path.exists() else Verdict(True, 0, GENESIS, None, "")
        if not verdict.ok:
            raise ValueError(f"audit trail {self.path} is broken at line {verdict.broken_line}: {verdict.reason}")
        self.head, self.count = verdict.head, verdict.lines
        self.seen = {orjson.loads(line)["id"] for line in self._lines()} if self.count else set()
        self._file: IO[bytes] = self.path.open("ab")

    def _lines(self) -> list[bytes]:
        return [line for line in self.path.read_bytes().splitlines() if line.strip()]

    def __call__(self, event: FeedEvent) -> None:
        if event.id in self.seen:
            return
        fields = {"seq": self.count, "id": event.id, "type": event.type, "thread": event.thread_id,
                  "ns": event.checkpoint_ns, "checkpoint_id": event.checkpoint_id, "time": event.time.isoformat(),
                  "metadata": event.metadata, "log_id": event.log_id, "prev": self.head}
        digest = _digest(self.head, fields)
        self._file.write(orjson.dumps({**fields, "hash": digest}, option=orjson.OPT_SORT_KEYS) + b"\n")
        self._file.flush()
        if self.fsync:
            os.fsync(self._file.fileno())
        self.head, self.count = digest, self.count + 1
        self.seen.add(event.id)

    def close(self) -> None:
        """Close the file."""
        self._file.close()


@dataclass(frozen=True)
class Verdict:
    """What `verify` found: `ok`, the lines checked, the head hash (of the last good line), and
    for a broken trail the first broken line (1-based) and why."""

    ok: bool
    lines: int
    head: str
    broken_line: int | None
    reason: str


def verify(path: str | Path) -> Verdict:
    """Check the hash chain of the trail at `path` from its first line.

    Returns:
        A `Verdict`; ``ok`` is False at the first line that does not parse, is out of sequence,
        does not name the previous line's hash, or whose hash does not match its content.
    """
    head, n = GENESIS, 0
    for n, line in enumerate((raw for raw in Path(path).read_bytes().splitlines() if raw.strip()), start=1):
        try:
            fields = orjson.loads(line)
            claimed = fields.pop("hash")
        except (orjson.JSONDecodeError, KeyError, AttributeError, TypeError):
            return Verdict(False, n - 1, head, n, "not a trail line")
        if fields.get("seq") != n - 1 or fields.get("prev") != head:
            return Verdict(False, n - 1, head, n, "out of sequence: a line was removed, inserted or moved")
        if _digest(head, fields) != claimed:
            return Verdict(False, n - 1, head, n, "content does not match its hash: the line was changed")
        head = claimed
    return Verdict(True, n, head, None, "")


def audit_subscriber(client: Any, path: str | Path, *, group: str = "audit", **options: Any) -> Subscriber:
    """A `Subscriber` of `group` writing the trail at `path` (`options` go to `Subscriber`;
    checkpoints' metadata is read with each batch, one round trip)."""
    return Subscriber(client, group, AuditTrail(path), load_metadata=True, **options)
