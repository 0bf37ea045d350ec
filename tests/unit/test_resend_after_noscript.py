"""Which steps of a call a driver sends again after ``NOSCRIPT`` (no Redis): the script calls
refused with ``NOSCRIPT`` and every command that is not a script call; never a script call
that ran (it would log its event twice)."""

from __future__ import annotations

from redis.exceptions import NoScriptError, ResponseError

from streamsaver.drivers.wire import not_run
from streamsaver.log.routing import Routed


def test_only_the_scripts_refused_with_noscript_and_the_commands_around_them_are_sent_again() -> None:
    ran: list[str | bytes | int] = ["EVALSHA", "sha", 1, "P:slog:{p1}:1", "x"]
    lost: list[str | bytes | int] = ["EVALSHA", "sha", 1, "P:slog:{p2}:2", "x"]
    refused: list[str | bytes | int] = [b"evalsha", "sha", 1, "P:slog:{p3}:3", "x"]
    wait = Routed("P:slog:{p2}:2", ["WAITAOF", 1, 0, 100])
    read: list[str | bytes | int] = ["JSON.GET", "P:items:doc:{p1}:a"]
    steps = [ran, lost, refused, wait, read]
    replies = [b"1-0", NoScriptError("NOSCRIPT"), ResponseError("STALE"), [1, 0], b"{}"]
    assert not_run(steps, replies) == [1, 3, 4]
    assert not_run([lost, lost], [NoScriptError("NOSCRIPT")] * 2) == [0, 1]
    assert not_run([ran], [b"1-0"]) == []
