"""Write ownership (fencing), without I/O: who may write a thread, and how a loser finds out.

Two workers on one thread (one froze in a model call, the other resumed the thread and
finished) would otherwise both write: the frozen one's `put_writes` is absorbed first-writer-
wins, then its `put` writes a child of the old checkpoint that, being newest, becomes the tip.

A *claim* (`claim_request`, ``claim.lua``) makes a writer the thread's current owner: the
positions hash of the thread holds the claim's token (``@owner``: a count one more than the
claim it supersedes and a nonce, so a token never comes back, also after the thread was
deleted or expired and the count restarted). A claimed writer's appends run ``fenced_append.lua``:
``append.lua`` with the token as its last argument, compared inside the same atomic script, so
a superseded claim's put or put_writes writes nothing and costs no extra round trip. The refusal
(``SSOWNER``) becomes `StaleWriteOwnerError`. Writes that hold no claim are not fenced: a
deployment turns fencing on by having every worker write through a claim.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass

from streamsaver.errors import InvalidInputError, StaleWriteOwnerError
from streamsaver.log.fields import OWNER
from streamsaver.log.keys import Keyspace, checked_id
from streamsaver.log.program import Refused
from streamsaver.scripts import APPEND, CLAIM, FENCED_APPEND

__all__ = ["OWNER_FIELD", "STALE_OWNER", "WriteFence", "check_request", "claim_request", "claimed"]

Arg = str | bytes | int

OWNER_FIELD = OWNER
"""The field of a thread's positions hash that holds its current claim's token."""
STALE_OWNER = "SSOWNER"
"""The code of ``fenced_append.lua``'s refusal."""


def claim_request(keyspace: Keyspace, thread_id: str) -> list[Arg]:
    """The ``claim.lua`` call that makes a new claim of `thread_id` current (its reply: the token).

    Raises:
        InvalidInputError: a thread id that is not a string of valid Unicode.
    """
    keys = keyspace.thread(checked_id(thread_id, "thread_id"))
    return CLAIM.evalsha_args([keys.positions, keys.log], [uuid.uuid4().hex])


def check_request(keyspace: Keyspace, thread_id: str) -> list[Arg]:
    """The read of the thread's current claim's token (`WriteFence.check` reads its reply)."""
    return ["HGET", keyspace.thread(thread_id).positions, OWNER_FIELD]


@dataclass(frozen=True)
class WriteFence:
    """A claim of one thread: its token, and what it does to that thread's appends."""

    thread_id: str
    token: str

    def guard(self, thread_id: str, command: Sequence[Arg]) -> list[Arg]:
        """`command` (an ``append.lua`` call of `thread_id`) as ``fenced_append.lua``: refused
        by Redis, writing nothing, unless this claim is still the thread's current one.

        Raises:
            InvalidInputError: `thread_id` is not the claimed thread (a claim writes one thread).
        """
        if thread_id != self.thread_id:
            raise InvalidInputError(
                f"this writer holds a claim of thread {self.thread_id!r}, not {thread_id!r}: "
                "claim that thread's write ownership to write it"
            )
        if command[1] != APPEND.sha:
            raise InvalidInputError("only an append of a checkpoint or of writes is fenced")
        fenced = list(command)
        fenced[1] = FENCED_APPEND.sha
        fenced.append(self.token)
        return fenced

    def stale(self, refused: Refused) -> Exception:
        """What a refused fenced append raises: `StaleWriteOwnerError` for ``SSOWNER``, else the
        refusal itself."""
        if refused.starts(STALE_OWNER):
            return StaleWriteOwnerError(self.thread_id, str(refused.error)[len(STALE_OWNER) + 1 :])
        return refused

    def check(self, held: bytes | str | None) -> None:
        """Whether the token `check_request` read is this claim's.

        Raises:
            StaleWriteOwnerError: another claim is current, or none (the thread was deleted or expired).
        """
        text = held.decode() if isinstance(held, bytes) else held
        if text != self.token:
            detail = f"claim {text} is current" if text else "the thread was deleted or expired: no claim is current"
            raise StaleWriteOwnerError(self.thread_id, f"claim {self.token} is not the current one ({detail})")


def claimed(fence: WriteFence | None) -> WriteFence:
    """`fence`, which a check of write ownership needs.

    Raises:
        InvalidInputError: None: the saver holds no claim (`claim_write_ownership` returns one that does).
    """
    if fence is None:
        raise InvalidInputError(
            "this saver holds no claim: check_write_ownership is for a writer claim_write_ownership returned"
        )
    return fence
