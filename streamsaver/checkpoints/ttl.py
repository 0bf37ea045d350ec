"""Thread expiry: LangGraph's TTL option, and the log core's TTL calls for the checkpoint domain
(`streamsaver.log.ttl`). `refresh_on_read` pipelines a ``ttl.lua`` "touch" with the read of
`get_tuple` (one round trip).
"""

from __future__ import annotations

from projectors.domain import CHECKPOINTS
from streamsaver.errors import InvalidInputError
from streamsaver.log import ttl as log_ttl
from streamsaver.log.keys import Keyspace

__all__ = ["ttl_block", "ttl_call", "ttl_ms"]

Arg = str | bytes | int


def ttl_ms(default_ttl: float | None) -> int:
    """The TTL in milliseconds of `default_ttl` minutes (LangGraph's unit); 0 for none.

    Raises:
        InvalidInputError: a TTL that is not a positive number.
    """
    if default_ttl is None:
        return 0
    if isinstance(default_ttl, bool) or not isinstance(default_ttl, (int, float)) or not (
            0 < default_ttl <= log_ttl.MAX_TTL_MINUTES):
        raise InvalidInputError(f"default_ttl must be a positive number of minutes (at most "
                                f"{log_ttl.MAX_TTL_MINUTES:.3g}), not {default_ttl!r}")
    return max(1, round(default_ttl * 60_000))


def ttl_block(keyspace: Keyspace, thread_id: str, ttl: int) -> list[Arg]:
    """The TTL block of a thread's write script (`streamsaver.log.ttl.ttl_block`)."""
    return log_ttl.ttl_block(CHECKPOINTS, keyspace, thread_id, ttl)


def ttl_call(keyspace: Keyspace, thread_id: str, ttl: int, mode: str) -> list[Arg]:
    """The ``ttl.lua`` call on a thread (`streamsaver.log.ttl.ttl_call`)."""
    return log_ttl.ttl_call(CHECKPOINTS, keyspace, thread_id, ttl, mode)
