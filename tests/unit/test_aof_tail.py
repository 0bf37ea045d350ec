"""`cut_torn_tail` cuts an append-only file where ``redis-check-aof --fix`` does: after the last
whole command outside a transaction, or the last ``EXEC``; never inside a ``MULTI``."""

from __future__ import annotations

from pathlib import Path

import pytest

from streamsaver.errors import EmbeddedServerError
from streamsaver.server.aof_tail import cut_torn_tail, whole_prefix


def resp(*args: bytes) -> bytes:
    return b"*%d\r\n" % len(args) + b"".join(b"$%d\r\n%s\r\n" % (len(a), a) for a in args)


SELECT = resp(b"SELECT", b"0")
SET = resp(b"SET", b"x", b"0")
SCRIPT = b"".join([resp(b"MULTI"), resp(b"XADD", b"log", b"1-0", b"e", b"v" * 50),
                   resp(b"HSET", b"pos", b"full", b"1-0"), resp(b"EXEC")])
STAMP = b"#TS:1795798574\r\n"


def test_a_whole_file_is_left_as_it_is(tmp_path: Path) -> None:
    aof = tmp_path / "a.aof"
    aof.write_bytes(SELECT + SET + STAMP + SCRIPT)
    assert cut_torn_tail(aof) == 0
    assert aof.read_bytes() == SELECT + SET + STAMP + SCRIPT


@pytest.mark.parametrize("torn_at", range(1, len(SCRIPT)))
def test_a_tear_anywhere_in_a_transaction_cuts_the_whole_transaction(tmp_path: Path, torn_at: int) -> None:
    aof = tmp_path / "a.aof"
    aof.write_bytes(SELECT + SET + SCRIPT[:torn_at])
    assert cut_torn_tail(aof) == torn_at
    assert aof.read_bytes() == SELECT + SET


@pytest.mark.parametrize("torn_at", range(1, len(SET)))
def test_a_tear_in_a_command_outside_a_transaction_cuts_that_command(tmp_path: Path, torn_at: int) -> None:
    aof = tmp_path / "a.aof"
    aof.write_bytes(SCRIPT + SET[:torn_at])
    assert cut_torn_tail(aof) == torn_at
    assert aof.read_bytes() == SCRIPT


def test_a_transaction_left_open_by_an_earlier_lenient_load_is_refused(tmp_path: Path) -> None:
    # Redis's own repair cut inside the first transaction; the next server's writes joined it.
    joined = SELECT + SCRIPT[: SCRIPT.index(resp(b"HSET", b"pos", b"full", b"1-0"))] + SELECT + SCRIPT + SET[:5]
    aof = tmp_path / "a.aof"
    aof.write_bytes(joined)
    with pytest.raises(EmbeddedServerError, match="not closed before another"):
        cut_torn_tail(aof)
    assert aof.read_bytes() == joined


def test_a_file_that_is_not_an_aof_is_refused_untouched(tmp_path: Path) -> None:
    rdb = tmp_path / "a.rdb"
    rdb.write_bytes(b"REDIS0011\xfa\tredis-ver")
    with pytest.raises(EmbeddedServerError, match="not an append-only file"):
        whole_prefix(rdb)
    assert rdb.read_bytes() == b"REDIS0011\xfa\tredis-ver"
