"""Where a listing across threads starts looking for its page: the windows the saver remembers.

A listing across threads sorts only a window ``@ck:[low top]`` of the newest matches
(``_window.lua``). `WindowHints` remembers, per index and query, the low end of the window the
last first page needed, and when: the next listing of the same query starts there. A hint is
only ever a starting point; any value lists correctly. One younger than `FRESH_S` is sorted at
once, without counting its matches first (`WindowHints.get`): so soon after, it very likely
still holds the page, and when it does not, the script sees a short page and searches as
without it.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

__all__ = ["FRESH_S", "Hint", "WindowHints"]

FRESH_S = 1.0
"""How long a remembered window is sorted without counting first, in seconds."""


@dataclass(frozen=True)
class Hint:
    """A remembered window: its lowest order key, and whether it is fresh (younger than
    `FRESH_S`: the script may sort it before counting)."""

    low: int
    fresh: bool


class WindowHints:
    """Per index and query, the lowest order key of the window that the last listing of that
    query across threads needed for its first page, and when it was found. Kept per saver, at
    most `size` queries (then forgotten at once); `clock` is monotonic seconds."""

    def __init__(self, size: int = 1024, clock: Callable[[], float] = time.monotonic) -> None:
        self._lows: dict[tuple[str, str], tuple[int, float]] = {}
        self._size = size
        self._clock = clock

    def get(self, index: str, query: str) -> Hint | None:
        """The window remembered for `query` on `index`, if any."""
        found = self._lows.get((index, query))
        if found is None:
            return None
        low, at = found
        return Hint(low, self._clock() - at < FRESH_S)

    def put(self, index: str, query: str, low: int) -> None:
        """Remember the low end of the window a first page of `query` on `index` needed."""
        if len(self._lows) >= self._size:
            self._lows.clear()
        self._lows[(index, query)] = (low, self._clock())
