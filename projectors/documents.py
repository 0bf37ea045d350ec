"""The shape of a checkpoint document and of view hash entries, written and read in one place.

A checkpoint document (RedisJSON) holds what the index needs and the names (`refs`) of the
binary entries that complete it in the view's blobs hash: the serialized checkpoint body first,
then one entry per channel of ``channel_versions``. Binary payloads stay out of JSON (no base64).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import orjson

from streamsaver.codec import escape, metadata_tags, pack, strict_json, tag, unpack
from streamsaver.events import Blob, CheckpointSaved, PendingWrite

__all__ = [
    "BODY_FIELD",
    "CURRENT_CHECKPOINT_FIELD",
    "checkpoint_document",
    "decode_write",
    "encode_write",
    "write_field",
]

BODY_FIELD = "@body"
"""Blobs-hash field of the latest body in the shallow view (full view: `body_field`)."""
CURRENT_CHECKPOINT_FIELD = "@cid"
"""Shallow writes-hash field naming the checkpoint its writes belong to."""


def body_field(checkpoint_id: str) -> str:
    """Full-view blobs-hash field of one checkpoint's body."""
    return f"@body:{escape(checkpoint_id)}"


def versioned_field(channel: str, version: object) -> str:
    """Full-view blobs-hash field of one channel at one version."""
    return f"{escape(channel)}:{escape(orjson.dumps(version).decode())}"


def channel_field(channel: str) -> str:
    """Shallow-view blobs-hash field of one channel's latest value."""
    return escape(channel)


def checkpoint_document(event: CheckpointSaved, refs: Sequence[str]) -> bytes:
    """The JSON document of a checkpoint.

    Ids are indexed as digests (`streamsaver.codec.tag`) and every top-level metadata pair as
    one tag in ``mt``, so any equality filter is one TAG query and no input can alter a query.
    """
    metadata: Mapping[str, Any] = event.metadata
    doc: dict[str, Any] = {
        "thread_id": event.thread_id,
        "checkpoint_ns": event.checkpoint_ns,
        "checkpoint_id": event.checkpoint_id,
        "parent_checkpoint_id": event.parent_checkpoint_id,
        "th": tag(event.thread_id),
        "nh": tag(event.checkpoint_ns),
        "ph": tag(event.parent_checkpoint_id or ""),
        "mt": metadata_tags(sorted(metadata.items())),
        "metadata": metadata,
        "refs": list(refs),
    }
    source, step, run_id = metadata.get("source"), metadata.get("step"), metadata.get("run_id")
    if isinstance(source, str):
        doc["source"] = source
    if isinstance(step, (int, float)) and not isinstance(step, bool):
        doc["step"] = step
    if isinstance(run_id, str):
        doc["rh"] = tag(run_id)
    return strict_json(doc)


def write_field(task_id: str, idx: int) -> str:
    """Writes-hash field of one write: unique per task and index."""
    return f"{escape(task_id)}:{idx}"


def encode_write(task_id: str, task_path: str, write: PendingWrite) -> bytes:
    """Writes-hash value of one write."""
    parts = [task_id, task_path, write.channel]
    return pack([*(p.encode("utf-8", "surrogatepass") for p in parts), write.blob.type.encode(), write.blob.data])


def decode_write(value: bytes) -> tuple[str, str, str, Blob]:
    """``(task_id, task_path, channel, blob)`` from a writes-hash value."""
    task_id, task_path, channel, type_, data = unpack(value)
    text = [p.decode("utf-8", "surrogatepass") for p in (task_id, task_path, channel)]
    return text[0], text[1], text[2], Blob(type_.decode(), data)


def encode_blob(blob: Blob) -> bytes:
    """Blobs-hash value of a serialized value."""
    return pack([blob.type.encode(), blob.data])


def decode_blob(value: bytes) -> Blob:
    """A serialized value from a blobs-hash value."""
    type_, data = unpack(value)
    return Blob(type_.decode(), data)


def encode_versioned_blob(version: object, blob: Blob) -> bytes:
    """Shallow blobs-hash value: the channel version with the value, checked on read."""
    return pack([orjson.dumps(version), blob.type.encode(), blob.data])


def decode_versioned_blob(value: bytes) -> tuple[object, Blob]:
    """``(version, blob)`` from a shallow blobs-hash value."""
    version, type_, data = unpack(value)
    return orjson.loads(version), Blob(type_.decode(), data)
