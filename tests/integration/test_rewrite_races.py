"""A log rewrite never loses an append that races it: the script refuses when the log changed
since it was read, writes nothing, and the program reads again; it gives up with
`ConcurrentChangeError` after `ATTEMPTS` lost races."""

from __future__ import annotations

import pytest
import redis
from helpers import config, new_checkpoint, snapshot
from redis.exceptions import ResponseError

from streamsaver import StreamSaver
from streamsaver.checkpoints.maintenance import ATTEMPTS
from streamsaver.drivers.sync import round_trip
from streamsaver.errors import ConcurrentChangeError
from streamsaver.log.program import Call, Program, Refused


def _send(saver: StreamSaver, call: Call) -> list:  # type: ignore[type-arg]
    return round_trip(saver.redis, call.steps)


def _stale(message: str = "STALE") -> Refused:
    """What the driver hands back into the program when the rewrite is refused."""
    return Refused(ResponseError(message), False)


def _lose_every_race(saver: StreamSaver, program: Program[None], request: Call) -> None:
    """Refuse each rewrite the program sends as stale, as often as it retries."""
    for _ in range(ATTEMPTS):
        rewrite = program.send(_send(saver, request))
        assert rewrite.steps[0][0] == "EVALSHA"
        request = program.throw(_stale("STALE the log changed"))


def _fill(saver: StreamSaver, thread_id: str, steps: int) -> dict:  # type: ignore[type-arg]
    previous, parent = None, config(thread_id)
    for step in range(steps):
        checkpoint, versions = new_checkpoint({"s": step}, previous)
        parent = saver.put(parent, checkpoint, {"step": step}, versions)
        previous = checkpoint
    assert previous is not None
    return previous  # type: ignore[return-value]


def test_an_append_racing_a_prune_is_kept(client: redis.Redis, prefix: str) -> None:
    saver = StreamSaver(client, prefix=prefix)
    saver.setup()
    last = _fill(saver, "t", 3)
    program = saver.core.prune_program(["t"], "keep_latest")
    read = next(program)
    rewrite = program.send(_send(saver, read))
    checkpoint, versions = new_checkpoint({"s": "racing"}, last)
    raced = saver.put(config("t", "", last["id"]), checkpoint, {"step": 9}, versions)
    before = snapshot(client, prefix)

    with pytest.raises(ResponseError, match="STALE"):
        _send(saver, rewrite)
    assert snapshot(client, prefix) == before
    again = program.throw(_stale())
    assert again.steps[0][0] == "XRANGE"
    with pytest.raises(StopIteration):
        program.send(_send(saver, program.send(_send(saver, again))))

    kept = list(saver.list(config("t")))
    assert [t.config for t in kept] == [raced]
    assert saver.get_tuple(raced).checkpoint["channel_values"] == {"s": "racing"}  # type: ignore[union-attr]


def test_a_rewrite_losing_every_race_gives_up(client: redis.Redis, prefix: str) -> None:
    saver = StreamSaver(client, prefix=prefix)
    saver.setup()
    _fill(saver, "t", 3)
    program = saver.core.prune_program(["t"], "keep_latest")
    request = next(program)
    with pytest.raises(ConcurrentChangeError):
        _lose_every_race(saver, program, request)
