"""Points in time on a log, without I/O (shared by restore, export and `copy_thread`)."""

from __future__ import annotations

import re
from datetime import datetime, timedelta, timezone

from streamsaver.errors import InvalidInputError

__all__ = ["log_bound"]

_ENTRY_ID = re.compile(r"[0-9]+-[0-9]+", re.ASCII)
_MILLIS = re.compile(r"[0-9]+", re.ASCII)
_EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)


def log_bound(at: str | int | datetime) -> str:
    """The inclusive upper bound of an ``XRANGE`` over a log that `at` names.

    Args:
        at: a log entry id ``"<ms>-<seq>"``, an epoch time in milliseconds (an int or a string
            of digits), a timezone-aware datetime, or an ISO 8601 string with a timezone.

    Returns:
        The entry id itself, or the millisecond (which ``XRANGE`` reads as its last entry).

    Raises:
        InvalidInputError: anything else, a time before 1970, or a datetime without a timezone.
    """
    if isinstance(at, datetime):
        if at.utcoffset() is None:
            raise InvalidInputError(
                f"the time {at.isoformat()} has no timezone; give one, e.g. 2024-06-10T09:30:00Z or +02:00"
            )
        millis = (at - _EPOCH) // timedelta(milliseconds=1)
        if millis < 0:
            raise InvalidInputError(f"the time {at.isoformat()} is before 1970")
        return str(millis)
    if isinstance(at, int) and not isinstance(at, bool):
        if at < 0:
            raise InvalidInputError(f"an epoch time in milliseconds cannot be negative: {at}")
        return str(at)
    if isinstance(at, str):
        text = at.strip()
        numeric = _ENTRY_ID.fullmatch(text) or _MILLIS.fullmatch(text)
        if numeric and all(int(part) < 2**64 for part in text.split("-")):
            return text
        try:
            parsed = datetime.fromisoformat(text[:-1] + "+00:00" if text.endswith(("Z", "z")) else text)
        except ValueError:
            parsed = None
        if parsed is not None:
            return log_bound(parsed)
    raise InvalidInputError(
        f"cannot read {at!r} as a point in time: give a log entry id (1718000000000-0), "
        "an epoch time in milliseconds, or an ISO 8601 time with a timezone (2024-06-10T09:30:00Z)"
    )
