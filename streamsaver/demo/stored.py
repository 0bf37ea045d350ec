"""The demo's last scene: what the runs left in Redis, read with plain Redis commands.

The thread logs (Streams, the truth) are read with XRANGE and decoded with
`streamsaver.log.stored.from_fields`; the views are read with FT.SEARCH and JSON.GET.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import orjson
from redis import Redis

from streamsaver.demo.show import Show, short_id
from streamsaver.log.codec import tag
from streamsaver.log.events import CheckpointSaved, Event, WritesSaved
from streamsaver.log.keys import ViewName
from streamsaver.log.stored import from_fields
from streamsaver.saver.sync import StreamSaver

__all__ = ["LoggedEvent", "StoredFacts", "command", "read_log", "what_is_stored"]


def command(client: Redis, *args: str | int) -> Any:
    """The reply to one raw command. redis-py leaves `execute_command` unannotated, hence the typed alias."""
    send: Callable[..., Any] = client.execute_command
    return send(*args)


def _text(value: bytes | str) -> str:
    return value.decode() if isinstance(value, bytes) else value


@dataclass(frozen=True)
class LoggedEvent:
    """One entry of a thread log: its stream id, its event, and its stored size in bytes."""

    stream_id: str
    event: Event
    size: int


def read_log(client: Redis, saver: StreamSaver, thread_id: str) -> list[LoggedEvent]:
    """Every event of a thread's log, oldest first (XRANGE over the whole stream)."""
    entries = command(client, "XRANGE", saver.core.keys.thread(thread_id).log, "-", "+")
    return [
        LoggedEvent(
            _text(sid),
            from_fields(fields, _text(sid)),
            sum(len(k) + len(v) for k, v in fields.items()),
        )
        for sid, fields in entries
    ]


def _search(client: Redis, index: str, query: str, limit: int) -> tuple[int, list[str]]:
    """Total hits and the first `limit` document keys; reads RESP2 and RESP3 replies."""
    reply = command(client, "FT.SEARCH", index, query, "NOCONTENT", "LIMIT", 0, limit, "DIALECT", 2)
    if isinstance(reply, Mapping):
        return int(reply[b"total_results"]), [_text(r[b"id"]) for r in reply[b"results"]]
    return int(reply[0]), [_text(key) for key in reply[1:]]


@dataclass(frozen=True)
class StoredFacts:
    """Event counts per thread and type, and the documents each view holds."""

    events: dict[str, Counter[str]]
    full_docs: int
    shallow_docs: list[tuple[str, str, str]]


def _payload(event: Event) -> str:
    if isinstance(event, CheckpointSaved):
        return f"{len(event.values)} new values: " + ", ".join(v.channel for v in event.values)
    if isinstance(event, WritesSaved):
        return f"{len(event.writes)} writes: " + ", ".join(w.channel for w in event.writes)
    return ""


def _log_table(show: Show, log: Sequence[LoggedEvent]) -> None:
    rows = []
    for entry in log:
        e = entry.event
        cid = e.checkpoint_id if isinstance(e, (CheckpointSaved, WritesSaved)) else None
        ns = e.checkpoint_ns if isinstance(e, (CheckpointSaved, WritesSaved)) else None
        parent = e.parent_checkpoint_id if isinstance(e, CheckpointSaved) else None
        rows.append(
            (
                entry.stream_id,
                e.TYPE,
                short_id(cid),
                repr(ns),
                short_id(parent),
                _payload(e),
                entry.size,
            )
        )
    show.table(["stream id", "event", "checkpoint", "ns", "parent", "payload", "bytes"], rows)


def _logs(
    client: Redis, saver: StreamSaver, show: Show, threads: Sequence[str], detail: str
) -> dict[str, Counter[str]]:
    logs = {t: read_log(client, saver, t) for t in threads}
    counts = {t: Counter(entry.event.TYPE for entry in log) for t, log in logs.items()}
    show.say("Thread logs (one Redis Stream per thread, read with XRANGE):")
    show.table(
        ["thread", "log key", "events", "CheckpointSaved", "WritesSaved", "bytes"],
        [
            (
                t,
                saver.core.keys.thread(t).log,
                len(logs[t]),
                counts[t]["CheckpointSaved"],
                counts[t]["WritesSaved"],
                sum(e.size for e in logs[t]),
            )
            for t in threads
        ],
    )
    show.say(f"\nThe log of thread {detail!r}, oldest first (decoded with stored.from_fields):")
    _log_table(show, logs[detail])
    if early := _early_writes(logs[detail]):
        show.say(
            f"{early} WritesSaved arrived before the CheckpointSaved they belong to: LangGraph"
        )
        show.say(
            "saves a step's writes concurrently with its checkpoint; the log keeps arrival order."
        )
    return counts


def _json_get(client: Redis, key: str, *paths: str) -> dict[str, Any]:
    """The first value at each path of a JSON document (JSON.GET with several paths)."""
    found = orjson.loads(command(client, "JSON.GET", key, *paths))
    return {path: values[0] if values else None for path, values in found.items()}


def _view_counts(client: Redis, saver: StreamSaver, show: Show, threads: Sequence[str]) -> int:
    keys = saver.core.keys
    rows = []
    for t in threads:
        full, _ = _search(client, keys.index("full"), f"@th:{{{tag(t)}}}", 0)
        shallow, _ = _search(client, keys.index("shallow"), f"@th:{{{tag(t)}}}", 0)
        rows.append((t, full, shallow))
    total, _ = _search(client, keys.index("full"), "*", 0)
    show.say(
        "\nDocuments per view (FT.SEARCH on each view's index, counting @th:{digest of thread id}):"
    )
    show.table(
        ["thread", "full view (every checkpoint)", "shallow view (latest per namespace)"], rows
    )
    return total


def _shallow_docs(client: Redis, saver: StreamSaver, show: Show) -> list[tuple[str, str, str]]:
    _, doc_keys = _search(client, saver.core.keys.index("shallow"), "*", 100)
    docs = [
        _json_get(client, k, "$.thread_id", "$.checkpoint_ns", "$.checkpoint_id", "$.step")
        for k in doc_keys
    ]
    rows = sorted(
        (str(d["$.thread_id"]), str(d["$.checkpoint_ns"]), str(d["$.checkpoint_id"]), d["$.step"])
        for d in docs
    )
    show.say("\nThe shallow view: the latest checkpoint of each (thread, namespace):")
    show.table(
        ["thread", "checkpoint_ns", "latest checkpoint", "step"],
        [(t, repr(n), short_id(c), s) for t, n, c, s in rows],
    )
    return [(t, n, c) for t, n, c, _ in rows]


def _trim(value: Any) -> Any:
    if isinstance(value, list) and len(value) > 2:
        return [*value[:2], f"... {len(value) - 2} more"]
    return value


def _excerpt(client: Redis, saver: StreamSaver, show: Show, thread_id: str, view: ViewName) -> None:
    saved = saver.get_tuple({"configurable": {"thread_id": thread_id}})
    if saved is None:
        return
    keys, cid = saver.core.keys.thread(thread_id), saved.config["configurable"]["checkpoint_id"]
    key = keys.per_checkpoint(view, "cp", "", cid)
    doc = {k: _trim(v) for k, v in orjson.loads(command(client, "JSON.GET", key)).items()}
    show.say(f"\nJSON.GET {key}  (lists cut to 2 items):")
    show.block(orjson.dumps(doc, option=orjson.OPT_INDENT_2).decode())
    show.say("th / nh / rh / mt are digests of thread id, namespace, run id (if any) and metadata pairs:")
    show.say("the index queries those, so no user input ever reaches query syntax (ph, the parent")
    show.say("id's digest, is kept in the document but not indexed).")
    ptrs = keys.in_ns(view, "ptrs", "")
    entries = command(client, "HLEN", ptrs)
    body_ref = doc["refs"][0] if doc.get("refs") else None
    entry = command(client, "HGET", ptrs, body_ref) if body_ref else None
    show.say(f"Its 'refs' name fields of the hash {ptrs} ({entries} entries); each holds the id")
    show.say("of the log entry that carries the payload (the body, or a channel at a version), e.g.")
    show.say(f"  HGET {ptrs} {body_ref} -> {entry.decode() if entry else '-'}")
    show.say("Views hold no payloads: every value is stored once, in the thread log.")


def _early_writes(log: Sequence[LoggedEvent]) -> int:
    """How many WritesSaved events precede the CheckpointSaved of their checkpoint."""
    saved: set[str] = set()
    early = 0
    for entry in log:
        if isinstance(entry.event, CheckpointSaved):
            saved.add(entry.event.checkpoint_id)
        elif isinstance(entry.event, WritesSaved) and entry.event.checkpoint_id not in saved:
            early += 1
    return early


def what_is_stored(
    client: Redis, saver: StreamSaver, show: Show, threads: Sequence[str], detail: str
) -> StoredFacts:
    """Print the logs of `threads` (in full for `detail`), the view documents and one excerpt."""
    show.title("6. What is stored: the thread logs (the truth) and the views (what reads use)")
    counts = _logs(client, saver, show, threads, detail)
    full_docs = _view_counts(client, saver, show, threads)
    checkpoints = sum(c["CheckpointSaved"] for c in counts.values())
    show.say(
        f"The full view holds {full_docs} checkpoint documents in all: one per CheckpointSaved"
    )
    show.say(f"event in the logs ({checkpoints}).")
    shallow = _shallow_docs(client, saver, show)
    _excerpt(client, saver, show, detail, "full")
    return StoredFacts(counts, full_docs, shallow)
