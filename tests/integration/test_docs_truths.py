"""Small facts the docs state are what the code does (issue 22, item 10): the compression
threshold, the error a bad option raises, and the extra that brings ``pycryptodome``."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import redis
from langgraph.checkpoint.base import empty_checkpoint
from langgraph.checkpoint.serde.encrypted import EncryptedSerializer

from streamsaver import StreamSaver
from streamsaver.errors import ConfigurationError, InvalidInputError
from streamsaver.log.compression import MIN_BYTES
from streamsaver.log.stored import decode_channel_value

ROOT = Path(__file__).resolve().parents[2]
GETTING_STARTED = (ROOT / "docs" / "getting-started.md").read_text()


def _stored_type(client: redis.Redis, saver: StreamSaver, thread: str, size: int) -> str:
    checkpoint = empty_checkpoint()
    checkpoint["channel_values"] = {"text": "a" * size}
    checkpoint["channel_versions"] = {"text": "1"}
    config = {"configurable": {"thread_id": thread, "checkpoint_ns": ""}}
    saver.put(config, checkpoint, {}, {"text": "1"})
    [(_, fields)] = client.xrange(saver.core.keys.thread(thread).log)
    return decode_channel_value(fields[b"c:text"]).blob.type


def test_compression_starts_where_the_docs_say(client: redis.Redis, prefix: str) -> None:
    said = f"{MIN_BYTES // 1024} KiB"
    assert said == "4 KiB"
    assert said in " ".join((StreamSaver.__doc__ or "").split())
    assert f"payloads of {said} or more" in GETTING_STARTED
    saver = StreamSaver(client, prefix=prefix)
    saver.setup()
    # A serialized str is a few bytes longer than its text: sizes well clear of the edge.
    assert not _stored_type(client, saver, "below", MIN_BYTES - 64).startswith("zstd:")
    assert _stored_type(client, saver, "above", MIN_BYTES + 64).startswith("zstd:")


def test_bad_options_raise_invalid_input_as_the_docs_say(client: redis.Redis, prefix: str) -> None:
    tree = GETTING_STARTED[GETTING_STARTED.index("StreamSaverError\n"):]
    assert re.search(r"InvalidInputError\s+\(a ValueError\) a bad option", tree)
    assert "bad options" not in tree.split("InvalidInputError")[0]  # not under ConfigurationError
    assert not issubclass(InvalidInputError, ConfigurationError)
    for option in ({"view": "wide"}, {"durability": "disk"}, {"partitions": 0}, {"compression": "lz4"}):
        with pytest.raises(InvalidInputError):
            StreamSaver(client, prefix=prefix, **option)
    assert list(client.scan_iter(f"{prefix}*")) == []


def test_the_encryption_extra_brings_pycryptodome(client: redis.Redis, prefix: str) -> None:
    pyproject = (ROOT / "pyproject.toml").read_text()  # no tomllib before Python 3.11
    assert re.search(r'^encryption = \["pycryptodome>=[\d.]+"\]$', pyproject, re.M)
    assert "streamsaver[encryption]" in GETTING_STARTED
    saver = StreamSaver(client, prefix=prefix, serde=EncryptedSerializer.from_pycryptodome_aes(key=b"k" * 16))
    saver.setup()
    config = {"configurable": {"thread_id": "t", "checkpoint_ns": ""}}
    saved = saver.put(config, empty_checkpoint(), {"source": "input"}, {})
    assert saver.get_tuple(saved) is not None
