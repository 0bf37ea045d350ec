"""`verify` loads every payload of the logs, as a read would, and reports each that does not load,
naming its log entry. Before, views (which hold pointers into the logs, not payloads) compared
equal with a damaged payload in a log, and `verify` said the deployment was fine.
"""

from __future__ import annotations

import pytest
import redis
from helpers import config, new_checkpoint

from streamsaver import StreamSaver
from streamsaver.cli.main import main
from streamsaver.log.codec import pack, unpack
from streamsaver.ops.verify import verify

THREAD = "damaged"


def write_thread(client: redis.Redis, prefix: str) -> StreamSaver:
    """A thread with a small and a large (compressed) value, a growing list (deltas) and writes."""
    saver = StreamSaver(client, prefix=prefix)
    previous, saved = None, config(THREAD)
    for step in range(4):
        values = {"messages": [f"message {n}" for n in range(step + 1)], "n": step, "big": f"{step}" * 9000}
        checkpoint, versions = new_checkpoint(values, previous)
        saved = saver.put(saved, checkpoint, {"step": step}, versions)
        saver.put_writes(saved, [("n", step + 1)], f"task-{step}")
        previous = checkpoint
    return saver


def damage(client: redis.Redis, log: str, field_start: bytes, part: int, change: object) -> str:
    """Rewrite the first entry of `log` holding a field starting with `field_start`: in that field's
    packed parts, part `part` (the payload) becomes `change(payload)`. Ids and all else are kept."""
    entries = client.xrange(log)
    damaged = ""
    client.delete(log)
    for entry_id, fields in entries:
        for name in list(fields):
            if not damaged and name.startswith(field_start):
                parts = list(unpack(fields[name]))
                parts[part] = change(parts[part])  # type: ignore[operator]
                fields[name] = pack(parts)
                damaged = entry_id.decode()
        client.xadd(log, fields, id=entry_id)
    assert damaged
    return damaged


def invalid_first_byte(data: bytes) -> bytes:
    return b"\xc1" + data[1:]  # 0xc1: the one byte msgpack never uses


def flipped_middle_bit(data: bytes) -> bytes:
    middle = len(data) // 2
    return data[:middle] + bytes([data[middle] ^ 0x10]) + data[middle + 1 :]


def test_an_intact_deployment_loads_every_payload(client: redis.Redis, prefix: str) -> None:
    write_thread(client, prefix)
    report = verify(client, prefix)
    assert report.matches
    assert report.payloads_checked >= 4 * 4 + 4  # bodies, channel values (deltas joined), writes
    assert report.corrupt == 0


@pytest.mark.parametrize(
    ("what", "field_start", "part", "change"),
    [
        ("checkpoint body", b"body", 1, invalid_first_byte),
        ("channel 'n'", b"c:n", 3, invalid_first_byte),
        ("channel 'big'", b"c:big", 3, flipped_middle_bit),  # compressed: the frame's checksum fails
        ("write 0 to 'n'", b"w:0", 2, invalid_first_byte),
    ],
)
def test_a_damaged_payload_is_reported_with_its_entry(
    client: redis.Redis, prefix: str, what: str, field_start: bytes, part: int, change: object
) -> None:
    saver = write_thread(client, prefix)
    log = saver.core.keys.thread(THREAD).log
    entry = damage(client, log, field_start, part, change)

    report = verify(client, prefix)

    assert not report.matches
    assert report.corrupt == 1 and report.missing == report.extra == report.different == 0
    [corrupt] = report.corrupt_payloads
    assert (corrupt.log, corrupt.entry, corrupt.payload) == (log, entry, what)


def test_the_verify_command_fails_on_a_damaged_payload(
    client: redis.Redis, redis_url: str, prefix: str, capsys: pytest.CaptureFixture[str]
) -> None:
    saver = write_thread(client, prefix)
    entry = damage(client, saver.core.keys.thread(THREAD).log, b"body", 1, invalid_first_byte)

    assert main(["verify", "--url", redis_url, "--prefix", prefix]) == 1
    out = capsys.readouterr().out
    assert f"corrupt   {saver.core.keys.thread(THREAD).log} entry {entry}, checkpoint body" in out


def test_encrypted_payloads_are_checked_with_the_deployments_serde(client: redis.Redis, prefix: str) -> None:
    from langgraph.checkpoint.serde.encrypted import EncryptedSerializer

    from streamsaver import SafeSerializer

    serde = EncryptedSerializer.from_pycryptodome_aes(SafeSerializer(), key=b"0123456789abcdef0123456789abcdef")
    saver = StreamSaver(client, prefix=prefix, serde=serde)
    checkpoint, versions = new_checkpoint({"n": 1})
    saved = saver.put(config(THREAD), checkpoint, {}, versions)
    saver.put_writes(saved, [("n", 2)], "task")

    unchecked = verify(client, prefix)
    assert unchecked.matches and unchecked.payloads_encrypted >= 3 and unchecked.payloads_checked == 0
    checked = verify(client, prefix, serde=serde)
    assert checked.matches and checked.payloads_checked >= 3 and checked.payloads_encrypted == 0

    damage(client, saver.core.keys.thread(THREAD).log, b"w:0", 2, flipped_middle_bit)  # the MAC fails
    assert verify(client, prefix, serde=serde).corrupt == 1
