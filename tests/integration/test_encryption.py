"""An `EncryptedSerializer` protects payloads at rest: channel values, writes and checkpoint bodies
are stored encrypted in the thread log and in every view; only a saver with the key reads them.

Ids, namespaces, channel names, versions and metadata stay readable by design (the views index
them), so the distinctive plaintext here lives only in values.
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from typing import Any

import pytest
import redis
from helpers import VARIANT_IDS, VARIANTS, SaverAdapter, config, open_adapter, snapshot
from langchain_core.messages import HumanMessage
from langgraph.checkpoint.serde.encrypted import EncryptedSerializer

from streamsaver.errors import PayloadDecodeError

KEY = b"0123456789abcdef0123456789abcdef"
OTHER_KEY = b"fedcba9876543210fedcba9876543210"


@pytest.fixture(params=VARIANTS, ids=VARIANT_IDS)
async def encrypted(
    request: pytest.FixtureRequest, redis_url: str, prefix: str
) -> AsyncIterator[SaverAdapter]:
    kind, view = request.param
    serde = EncryptedSerializer.from_pycryptodome_aes(key=KEY)
    async with open_adapter(kind, view, redis_url, prefix, serde=serde) as adapter:
        yield adapter


def stored_bytes(client: redis.Redis, prefix: str) -> bytes:
    """Every byte stored under the deployment's prefix: keys, stream entries, hashes, JSON docs."""

    def flat(value: Any) -> bytes:
        if isinstance(value, bytes):
            return value
        if isinstance(value, str):
            return value.encode()
        if isinstance(value, dict):
            return b"".join(flat(k) + flat(v) for k, v in value.items())
        if isinstance(value, (list, tuple, set)):
            return b"".join(flat(v) for v in value)
        return repr(value).encode()

    return flat(snapshot(client, prefix))


async def _save_secrets(saver: SaverAdapter, secret: str) -> dict[str, Any]:
    values = {
        "text": secret,
        "messages": [HumanMessage(f"my secret is {secret}")],
        "nested": {"deep": [secret]},
    }
    saved, _ = await saver.save("t1", values, metadata={"source": "loop", "step": 1})
    await saver.put_writes(saved, [("text", f"pending {secret}")], "task1")
    return values


async def test_encrypted_values_round_trip(encrypted: SaverAdapter) -> None:
    secret = f"CANARY-{uuid.uuid4().hex}"
    values = await _save_secrets(encrypted, secret)

    got = await encrypted.get_tuple(config("t1"))

    assert got is not None
    assert got.checkpoint["channel_values"] == values
    assert got.pending_writes == [("task1", "text", f"pending {secret}")]
    assert [t.checkpoint["channel_values"] for t in await encrypted.list(config("t1"))] == [values]


async def test_no_plaintext_value_is_stored_in_the_log_or_the_views(
    encrypted: SaverAdapter, client: redis.Redis, prefix: str
) -> None:
    secret = f"CANARY-{uuid.uuid4().hex}"
    await _save_secrets(encrypted, secret)

    stored = stored_bytes(client, prefix)

    assert client.exists(encrypted.saver.core.keys.thread("t1").log)
    assert secret.encode() not in stored
    assert secret[-16:].encode() not in stored


async def test_without_encryption_the_same_scan_finds_the_plaintext(
    redis_url: str, client: redis.Redis, prefix: str
) -> None:
    """The control for the test above: the scan does see values stored in the clear."""
    secret = f"CANARY-{uuid.uuid4().hex}"
    async with open_adapter("sync", "full", redis_url, prefix) as plain:
        await _save_secrets(plain, secret)

    assert secret.encode() in stored_bytes(client, prefix)


async def test_a_saver_with_the_wrong_key_cannot_read_the_values(
    encrypted: SaverAdapter, redis_url: str, prefix: str
) -> None:
    await _save_secrets(encrypted, f"CANARY-{uuid.uuid4().hex}")
    wrong = EncryptedSerializer.from_pycryptodome_aes(key=OTHER_KEY)

    async with open_adapter(
        encrypted.kind, encrypted.view, redis_url, prefix, serde=wrong
    ) as intruder:
        with pytest.raises(ValueError, match="MAC check failed"):
            await intruder.get_tuple(config("t1"))
        with pytest.raises(ValueError, match="MAC check failed"):
            await intruder.list(config("t1"))


async def test_a_tampered_payload_is_rejected_naming_its_log_entry(
    encrypted: SaverAdapter, client: redis.Redis
) -> None:
    """Flipping one byte of a stored ciphertext fails its MAC check: the read raises (never
    returns altered values), names the log entry, and other threads still read."""
    await _save_secrets(encrypted, f"CANARY-{uuid.uuid4().hex}")
    await encrypted.save("t2", {"text": "untouched"})
    log = encrypted.saver.core.keys.thread("t1").log
    entries = client.xrange(log)
    target = next(eid for eid, f in entries if b"body" in f)
    client.delete(log)
    for eid, fields in entries:
        if eid == target:
            body = bytearray(fields[b"body"])
            body[-1] ^= 0x01
            fields[b"body"] = bytes(body)
        client.xadd(log, fields, id=eid)
    # Tampering behind the scripts' back is not seen by a saver holding the entry (its read cache
    # holds the ciphertext it wrote, never altered): read as a saver holding none of the thread.
    if encrypted.saver.core.entries is not None:
        encrypted.saver.core.entries.forget(log)

    with pytest.raises(PayloadDecodeError, match="MAC check failed") as caught:
        await encrypted.get_tuple(config("t1"))
    assert caught.value.event_id == target.decode()
    assert isinstance(caught.value, ValueError)
    other = await encrypted.get_tuple(config("t2"))
    assert other is not None and other.checkpoint["channel_values"] == {"text": "untouched"}
