"""`SyncDriver`: runs programs (`streamsaver.log.program`) with a ``redis.Redis`` or a
``RedisCluster``. It only moves bytes and keeps what belongs to the connection: the script
reload on ``NOSCRIPT``, the `Lane` of a plain client (one write per round trip), the placement
of steps on a cluster (`streamsaver.drivers.cluster`), pauses and the stop flag.
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from collections.abc import AsyncIterator, Callable, Iterator, Sequence
from typing import Any, TypeVar, cast

from redis.exceptions import BusyLoadingError, NoScriptError, RedisError, ResponseError

from streamsaver.drivers.cluster import enqueue, enqueue_everywhere, execute, node_name, refused
from streamsaver.drivers.lane import Lane
from streamsaver.drivers.wire import (
    LOADING_PAUSE_S,
    LOADING_RETRIES,
    SERVER_ERRORS,
    check_client,
    failed_reply,
    final_error,
    named_server_error,
    not_run,
    still_loading,
)
from streamsaver.log.program import Alone, Call, Emit, Owner, Program, Refused, Wait
from streamsaver.log.routing import Routed, Step
from streamsaver.scripts import ALL

__all__ = ["SyncDriver", "in_thread", "round_trip", "send_loads", "send_raw"]

T = TypeVar("T")
log = logging.getLogger("streamsaver.drivers")
_FAILED = (Refused, RedisError)


def unknown_step(step: Any) -> Any:
    """What a driver does with a step neither it nor its shell knows.

    Raises:
        TypeError: always.
    """
    raise TypeError(f"unknown program step {step!r}")


async def in_thread(items: Callable[[], Iterator[T]]) -> AsyncIterator[T]:
    """The items of the sync iterator `items()` makes, gathered in a worker thread (a sync
    saver's `alist`)."""
    for item in await asyncio.to_thread(lambda: list(items())):
        yield item


def send_raw(client: Any, commands: Sequence[Step]) -> list[Any]:
    """Send `commands` in one pipelined round trip (on a cluster, one pipeline per node they go
    to, written to every node before any reply is read); errors come back as reply objects."""
    pipe = client.pipeline(transaction=False)
    enqueue(pipe, client, commands)
    return list(pipe.execute(raise_on_error=False))


def send_loads(client: Any, loads: Sequence[Step]) -> list[Any]:
    """Send the script loads `loads` in one pipelined round trip, to every primary `client`
    knows now on a cluster (`enqueue_everywhere`); errors come back as reply objects."""
    pipe = client.pipeline(transaction=False)
    enqueue_everywhere(pipe, client, loads)
    return list(pipe.execute(raise_on_error=False))


class SyncDriver:
    """Runs programs with a sync client; `lane`, when given, carries every `Call` while open.
    The steps of a `Call` a server refused with ``LOADING`` are sent again once it has loaded
    its data (`_settled`), `LOADING_RETRIES` times at most; the steps that ran (on a cluster, on
    the other primaries) are not. A pipeline step (a setup's probe) refused so is sent again
    whole: only commands a loading server runs (``INFO``, ``CONFIG GET``, ...) can have run
    before the refusal, which ends the pipeline.
    With `name_errors` (the savers'), redis-py's connection and timeout errors that end a
    program are raised as `ServerUnavailableError` and `ServerTimeoutError`.

    Raises:
        ConfigurationError: a client that decodes responses.
    """

    def __init__(
        self,
        client: Any,
        *,
        lane: Lane | None = None,
        other: Callable[[Any], Any] = unknown_step,
        name_errors: bool = False,
    ) -> None:
        check_client(client)
        self.redis, self.lane, self._other = client, lane, other
        self._name_errors = name_errors
        self._wake = threading.Event()
        self._alone = threading.Lock()

    def stop(self) -> None:
        """Cut the current and later `Wait` steps short until `resume` (thread-safe)."""
        self._wake.set()

    def resume(self) -> None:
        """Let `Wait` steps pause again."""
        self._wake.clear()

    def run(self, program: Program[T]) -> T:
        """Run `program` to its end; its result. `Emit` is not a step of `run` (see `stream`)."""
        try:
            step = next(program)
            while True:
                try:
                    # a Call straight away: the hot paths are one or two of them
                    result = self._call(step) if type(step) is Call else self._perform(step)
                except _FAILED as error:
                    step = program.throw(error)
                    continue
                step = program.send(result)
        except StopIteration as done:
            return cast(T, done.value)
        except Refused as refused:
            raise refused.error from None
        except SERVER_ERRORS as error:
            if not self._name_errors:
                raise
            raise named_server_error(error) from error

    def stream(self, program: Program[Any]) -> Iterator[Any]:
        """Run `program`, yielding the items of each `Emit` step as it comes."""
        try:
            step = next(program)
            while True:
                if type(step) is Emit:
                    yield from step.items
                    step = program.send(None)
                    continue
                try:
                    result = self._perform(step)
                except _FAILED as error:
                    step = program.throw(error)
                    continue
                step = program.send(result)
        except StopIteration:
            return
        except Refused as refused:
            raise refused.error from None
        except SERVER_ERRORS as error:
            if not self._name_errors:
                raise
            raise named_server_error(error) from error

    def _perform(self, step: Any) -> Any:
        if type(step) is Call:
            return self._call(step)
        if isinstance(step, list):
            try:
                return send_raw(self.redis, step)
            except BusyLoadingError:  # the first refusal ended the pipeline: what ran before it may run again
                return self._after_loading(lambda: send_raw(self.redis, step))
        if type(step) is Owner:
            return node_name(self.redis, step.key)
        if type(step) is Wait:
            return self._wake.wait(step.seconds)
        if type(step) is Alone:
            with self._alone:
                return self.run(step.program)
        return self._other(step)

    def _call(self, call: Call) -> list[Any]:
        replies = self._once(call.steps, call.meanwhile)
        if failed_reply(replies) is None:
            return replies
        return self._settled(call, replies)

    @staticmethod
    def _after_loading(send: Callable[[], T]) -> T:
        """`send()` again once the server has loaded its data (its first attempt was refused
        with ``LOADING``), `LOADING_RETRIES` times at most, `LOADING_PAUSE_S` apart."""
        for _ in range(LOADING_RETRIES - 1):
            time.sleep(LOADING_PAUSE_S)
            try:
                return send()
            except BusyLoadingError:
                continue
        time.sleep(LOADING_PAUSE_S)
        return send()

    def _settled(self, call: Call, replies: list[Any]) -> list[Any]:
        """`replies` (to `call`, an error among them) once the steps that did not run are sent
        again (`not_run`), until none is refused for a passing reason: after ``NOSCRIPT``, once
        the scripts are loaded again (once, and again after each wait); after ``LOADING``, once
        the server has loaded its data, `LOADING_PAUSE_S` apart, `LOADING_RETRIES` times at
        most. A step that ran (on a cluster, on a primary that was not refusing) is not sent
        twice.

        Raises:
            BusyLoadingError: a server still loading after the last wait.
            Refused: a refusal (NOSCRIPT again included), for the program.
        """
        waits, reloaded = 0, False
        while True:
            if isinstance(failed_reply(replies), NoScriptError) and not reloaded:
                log.info("NOSCRIPT (a server was flushed or restarted, or joined the cluster): reloading the scripts "
                         "and sending again what did not run")
                try:
                    send_loads(self.redis, call.reload())
                    reloaded = True
                except BusyLoadingError:  # the resend meets LOADING too, and waits
                    waits += 1
                again = not_run(call.steps, replies)
            elif still_loading(replies) is not None and waits < LOADING_RETRIES:
                if not waits:
                    log.info("LOADING (a server is reading its data): sending again what it refused once it has "
                             "loaded")
                waits, reloaded = waits + 1, False  # a server done loading may have lost its scripts
                time.sleep(LOADING_PAUSE_S)
                again = not_run(call.steps, replies, BusyLoadingError)
            else:
                break
            for n, reply in zip(again, self._once([call.steps[n] for n in again], call.meanwhile), strict=True):
                replies[n] = reply
        error = final_error(replies)
        if error is None:
            return replies
        if isinstance(error, ResponseError):
            raise refused(error) from None
        raise error

    def _once(self, steps: Sequence[Step], meanwhile: Callable[[], object] | None = None) -> list[Any]:
        """The replies to `steps`, sent in one round trip; error replies in place."""
        lane = self.lane
        try:
            if lane is not None and lane.open():
                # A plain client's steps need no routing: a `Routed` step is its command.
                return lane.send([step.command if isinstance(step, Routed) else step for step in steps], meanwhile)
            if len(steps) == 1:
                return [execute(self.redis, steps[0])]
            return send_raw(self.redis, steps)
        except (ResponseError, BusyLoadingError) as error:
            # Refused as a whole: one step refused ran nothing; a plain client's pipeline raises
            # on its first LOADING reply, reading no other (a loading server refuses every
            # command it reads but TIME, INFO, CONFIG, ...; never a script call).
            return [error] * len(steps)


def round_trip(
    client: Any, commands: Sequence[Step], reload: Sequence[Step] = (), lane: Lane | None = None
) -> list[Any]:
    """`commands` as one `Call` on `client` (tools that send prepared commands): the replies.

    Raises:
        RedisError: the first error among the replies (on NOSCRIPT, after sending `reload`, by
            default every script, and the commands again).
    """
    loads = list(reload) or [["SCRIPT", "LOAD", script.source] for script in ALL]

    def one_call() -> Program[list[Any]]:
        return list((yield Call(commands, lambda: loads)))

    return SyncDriver(client, lane=lane).run(one_call())
