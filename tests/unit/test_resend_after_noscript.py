"""Which steps of a call a driver sends again after ``NOSCRIPT`` or ``LOADING`` (no Redis): the
script calls refused so and every command that is not a script call; never a script call that
ran (it would log its event twice)."""

from __future__ import annotations

from redis.exceptions import BusyLoadingError, NoScriptError, ResponseError

from streamsaver.drivers.wire import final_error, not_run, still_loading
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


def test_after_loading_only_the_scripts_refused_with_loading_and_the_commands_around_them_are_sent_again() -> None:
    ran: list[str | bytes | int] = ["EVALSHA", "sha", 1, "P:slog:{p1}:1", "x"]
    loading: list[str | bytes | int] = ["EVALSHA", "sha", 1, "P:slog:{p2}:2", "x"]
    lost: list[str | bytes | int] = ["EVALSHA", "sha", 1, "P:slog:{p3}:3", "x"]
    wait = Routed("P:slog:{p2}:2", ["WAITAOF", 1, 0, 100])
    steps = [ran, loading, lost, wait]
    replies = [b"1-0", BusyLoadingError("LOADING"), NoScriptError("NOSCRIPT"), BusyLoadingError("LOADING")]
    assert not_run(steps, replies, BusyLoadingError) == [1, 3]
    assert not_run(steps, replies) == [2, 3]  # NOSCRIPT's turn: the loading one waits for its own
    assert still_loading(replies) is replies[1] and final_error(replies) is replies[1]
    assert still_loading([b"1-0", NoScriptError("NOSCRIPT")]) is None
    assert isinstance(final_error([ResponseError("STALE"), NoScriptError("NOSCRIPT")]), NoScriptError)
    assert final_error([b"1-0"]) is None
