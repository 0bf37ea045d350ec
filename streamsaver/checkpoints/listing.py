"""The plan of a `list` call, without I/O: `ListPager` (see its docstring).

For one thread and namespace of the full view, with no metadata filter, it walks the id index
with one script call per page (`streamsaver.checkpoints.reads.read_page`). Across threads on a single
server each page is one ``list_page.lua`` call, which sorts only a window of the newest matches
and reads the page's checkpoints in the same call. Otherwise each page is one index query
(across threads on Redis Cluster: ``list_window.lua``, the same window without the reading) and
one pipelined fetch of the checkpoints it found.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import CheckpointTuple
from langgraph.checkpoint.serde.base import SerializerProtocol

from streamsaver.checkpoints.append import namespace_of, thread_id_of
from streamsaver.checkpoints.list_rows import (
    SAFE_ID,
    WHOLE,
    Row,
    after,
    check_filter,
    identity,
    matches,
    newest_guess,
    search_rows,
    tie_order,
    window_rows,
)
from streamsaver.checkpoints.reads import Decoded, Request, decode_rows, read_one, read_page
from streamsaver.checkpoints.windows import WindowHints
from streamsaver.errors import InvalidInputError, PayloadDecodeError
from streamsaver.log.codec import escape, metadata_tags, order_key, tag
from streamsaver.log.deltas import Expand
from streamsaver.log.keys import Keyspace, ViewName
from streamsaver.log.routing import IndexTarget
from streamsaver.scripts import LIST_PAGE, LIST_WINDOW

__all__ = ["FIRST_WIDTH", "PAGE", "SORT_ALL_BELOW", "WHOLE", "ListPager", "PageReads"]

Command = list[str | bytes | int]
PAGE = 100
FIRST_WIDTH = 19**2
"""The first window of a listing across threads, in order-key units: uuid6 ids of the last ~2 s
(see `streamsaver.log.codec.order_key`); a window grows eightfold while it holds too few matches."""
SORT_ALL_BELOW = 1024
"""Below this many matches a listing across threads sorts them all: that costs (~0.3 us a match)
about what a first search for a window does (up to ~10 counts of 20-60 us)."""

log = logging.getLogger("streamsaver.listing")


class PageReads(Protocol):
    """Reads the pages of one thread's walk another way (`cached_reads.CachedPages`)."""

    def request(self, thread_id: str, ns: str, before: str, size: int) -> Command: ...

    def read(self, reply: Any, serde: SerializerProtocol, decoded: Decoded | None) -> list[CheckpointTuple]: ...


@dataclass
class Skipped:
    """Checkpoints listings across threads left out because they could not be read (a thread
    damaged, or half-expired: its log gone, a view key left): how many, and the last error."""

    count: int = 0
    last: PayloadDecodeError | None = None

    def add(self, errors: Sequence[PayloadDecodeError]) -> None:
        """Count `errors` and log a warning for each (a listing goes on without them)."""
        for error in errors:
            self.count += 1
            self.last = error
            log.warning("a listing across threads skipped a checkpoint it cannot read: %s", error)


@dataclass
class ListPager:
    """Plans one `list` call. Use: ``while (req := pager.next_request()) is not None:
    tuples = pager.feed(send(req))``.

    For one thread and namespace of the full view, with no metadata filter, it walks the id
    index newest first (one script call per page). Otherwise each page is one index query and
    one pipelined fetch of the checkpoints it found. Metadata matches are re-checked exactly.

    Across threads, an index query is one ``list_window.lua`` call: it sorts only the newest
    matches below the index's keyset cursor, a window of ``ck`` (`order_key` of the id) holding
    the page, found by capped counts in the same call, so the cost follows the page, not the
    matches. A page starts strictly after the last row its index gave (`_advance`): rows deleted
    between pages shift nothing, so none is skipped. On a
    single server it is a ``list_page.lua`` call instead, which also reads the page's
    checkpoints: one round trip a page.

    On Redis Cluster a view has one index per primary (`targets`): the query goes to each in the
    same pipelined round trip, each with its own cursor, and the rows are merged newest
    checkpoint id first; a row is taken only while every index that may hold more has rows
    buffered, so the merge equals one index's order. A single server is the one-target case.
    """

    keyspace: Keyspace
    view: ViewName
    serde: SerializerProtocol
    thread_id: str | None
    checkpoint_ns: str | None
    filter: Mapping[str, Any]
    before: str
    limit: int | None
    targets: tuple[IndexTarget, ...]
    cursor: str = ""
    top: int = 0
    hints: WindowHints | None = None
    only: str = ""
    """The checkpoint id the config names, if any: the listing holds that checkpoint only."""
    skipped: Skipped = field(default_factory=Skipped)
    """Where a listing across threads counts the checkpoints it left out (the saver's)."""
    expand: Expand | None = None  # the read cache's, shared by a saver's reads
    decoded: Decoded | None = None  # the first page's values guessed in flight (`cached_reads.page_guess`)
    cached: PageReads | None = None  # the pages of one thread through the read cache (`cached_reads.CachedPages`)
    _widths: list[int] = field(default_factory=list)
    _fresh: list[bool] = field(default_factory=list)
    _read: dict[Row, Any] = field(default_factory=dict)
    _emitted: int = 0
    _offsets: list[int] = field(default_factory=list)
    _bounds: list[str] = field(default_factory=list)
    _cursors: list[Row | None] = field(default_factory=list)
    _buffers: list[list[Row]] = field(default_factory=list)
    _exhausted: list[bool] = field(default_factory=list)
    _asked: list[int] = field(default_factory=list)
    _done: bool = False
    _found: list[Row] = field(default_factory=list)
    _last: str = ""
    _returned: set[Row] = field(default_factory=set)

    def __post_init__(self) -> None:
        n = len(self.targets)
        self._offsets, self._buffers, self._exhausted = [0] * n, [[] for _ in range(n)], [False] * n
        self._bounds, self._cursors = [self.before] * n, [None] * n
        self._widths, self._fresh = [FIRST_WIDTH] * n, [False] * n
        if self.hints is not None and self._across and not self.before:
            hints = [self.hints.get(target.name, self._query()) for target in self.targets]
            self._widths = [FIRST_WIDTH if h is None else max(self.top - h.low, 1) for h in hints]
            self._fresh = [h is not None and h.fresh for h in hints]

    @classmethod
    def plan(
        cls,
        keyspace: Keyspace,
        view: ViewName,
        serde: SerializerProtocol,
        config: RunnableConfig | None,
        filter: Mapping[str, Any] | None,
        before: RunnableConfig | None,
        limit: int | None,
        targets: Sequence[IndexTarget] | None = None,
        hints: WindowHints | None = None,
        skipped: Skipped | None = None,
    ) -> ListPager:
        """Validate the arguments of `list` and plan it (`targets`: the view's indexes, by
        default the one index of a single server).

        Raises:
            InvalidInputError: a config without a thread id, a limit not an int >= 0, or a filter
                that is not a mapping of metadata keys (strings) to JSON values.
        """
        if limit is not None and (isinstance(limit, bool) or not isinstance(limit, int) or limit < 0):
            raise InvalidInputError(f"limit must be None or an int >= 0, not {limit!r}")
        if before is not None and not isinstance(before, Mapping):
            raise InvalidInputError(f"before must be a config (a mapping), not {type(before).__name__}")
        check_filter(filter)
        thread_id = thread_id_of(config) if config else None
        has_ns = config is not None and config["configurable"].get("checkpoint_ns") is not None
        ns = namespace_of(config) if config is not None and has_ns else None
        before_id = str(((before or {}).get("configurable") or {}).get("checkpoint_id") or "")
        only = str((config or {}).get("configurable", {}).get("checkpoint_id") or "")
        indexes = tuple(targets) if targets else (IndexTarget(keyspace.index(view)),)
        # the newest guess places a first window across threads; a listing of one thread has none
        top = newest_guess() if thread_id is None else 0
        return cls(keyspace, view, serde, thread_id, ns, dict(filter or {}), before_id, limit, indexes, before_id,
                   top, hints, only, skipped or Skipped())

    @property
    def _want(self) -> int:
        left = PAGE if self.limit is None else min(PAGE, self.limit - self._emitted)
        return max(left, 0)

    @property
    def walks_ids(self) -> bool:
        return self.view == "full" and not self.filter and self.thread_id is not None and self.checkpoint_ns is not None

    def first_page(self) -> tuple[str, str, int] | None:
        """(thread, namespace, size) of the next page if the first of one thread walked newest first."""
        walks = self.walks_ids and not (self.before or self.cursor or self.only)
        return (str(self.thread_id), str(self.checkpoint_ns), self._want) if walks and self._want else None

    def next_request(self) -> Request | None:
        """The next round trip to make, or None when the listing is complete."""
        if self._found:
            return [read_one(self.keyspace, self.view, *row) for row in self._found]
        if self._done or self._want == 0:
            return None
        if self.only and self.thread_id is not None and self.checkpoint_ns is not None:
            # One checkpoint named in full (as `get_tuple` reads it); `_keep` applies filter and before.
            self._done, self._found = True, [(self.thread_id, self.checkpoint_ns, self.only)]
            return [read_one(self.keyspace, self.view, *self._found[0])]
        if self.walks_ids:
            assert self.thread_id is not None and self.checkpoint_ns is not None
            if self.cached is not None:
                return [self.cached.request(self.thread_id, self.checkpoint_ns, self.cursor, self._want)]
            return [read_page(self.keyspace, self.thread_id, self.checkpoint_ns, self.cursor, self._want)]
        self._asked = [n for n, buffer in enumerate(self._buffers) if not buffer and not self._exhausted[n]]
        if self._asked:
            return [self.targets[n].query(self._search(n)) for n in self._asked]
        self._found = self._merge()
        if not self._found:
            self._done = True
            return None
        return [read_one(self.keyspace, self.view, *row) for row in self._found]

    @property
    def _across(self) -> bool:
        return self.thread_id is None

    @property
    def _one_trip(self) -> bool:
        """Across threads on a single server: a page's checkpoints are read with its query."""
        return self._across and len(self.targets) == 1 and self.targets[0].route is None

    def _remember(self, n: int) -> None:
        if self.hints is not None and not self.before and self._offsets[n] == 0 and self._cursors[n] is None:
            width = self._widths[n]
            self.hints.put(self.targets[n].name, self._query(), 0 if width >= WHOLE else self.top - width)

    def _query(self) -> str:
        parts = []
        if self.thread_id is not None:
            parts.append(f"@th:{{{tag(self.thread_id)}}}")
        if self.checkpoint_ns is not None:
            parts.append(f"@nh:{{{tag(self.checkpoint_ns)}}}")
        parts += [f"@mt:{{{t}}}" for t in metadata_tags(sorted(self.filter.items()))]
        return " ".join(parts) or "*"

    def _checked_before(self) -> str:
        if not SAFE_ID.match(self.before):
            raise InvalidInputError(
                f"before={self.before!r}: listing across namespaces or threads compares ids in "
                "the index, which takes ids of [A-Za-z0-9._:-] only"
            )
        return self.before

    def _search(self, n: int) -> Command:
        if self.before:
            self._checked_before()
        cursor = self._cursors[n]
        if self._across:
            # Across threads the matches may be many: the script sorts only a window of the
            # newest of them that holds the page (_window.lua), below the cursor if any.
            bound = cursor[2] if cursor else self.before
            past: Command = ["1", escape(cursor[0]), escape(cursor[1])] if cursor else ["0", "", ""]
            args: Command = [self._query(), bound, order_key(bound) if bound else "", self._offsets[n],
                             self._want, self.top, self._widths[n], SORT_ALL_BELOW, int(self._fresh[n]), *past]
            self._fresh[n] = False  # a later page needs a window further down: counted
            if self._one_trip:
                return LIST_PAGE.evalsha_args([self.targets[n].name], [*args, self.keyspace.prefix, self.view])
            return LIST_WINDOW.evalsha_args([self.targets[n].name], args)
        command: Command = ["FT.AGGREGATE", self.targets[n].name, self._query()]
        bound = self._bounds[n]  # `before` (checked above), then a fetched id (`_advance`)
        if cursor:
            command += ["FILTER", after(cursor)]
        elif bound:
            command += ["FILTER", f"@checkpoint_id < '{bound}'"]
        if self.only and SAFE_ID.match(self.only):
            command += ["FILTER", f"@checkpoint_id == '{self.only}'"]
        # Sorting by the three sortable fields returns them with each row: no document is
        # loaded. The sort collects every match: here, the checkpoints of one thread. TIMEOUT 0:
        # at RediSearch's own timeout (500 ms by default) a sort cut short returns the rows it
        # reached as if whole (ON_TIMEOUT return, no error in RESP2): a wrong page.
        return [
            *command,
            "SORTBY", 6, "@checkpoint_id", "DESC", "@tk", "ASC", "@nk", "ASC",
            "LIMIT", self._offsets[n], self._want, "DIALECT", 2, "TIMEOUT", 0,
        ]

    def feed(self, replies: Sequence[Any]) -> list[CheckpointTuple]:
        """Read the replies to the last request; returns the tuples to yield, in order."""
        if self._found:
            self._found = []
            return self._keep([t for reply in replies for t in self._decoded(reply)])
        if self.walks_ids:
            if self.cached is not None:
                tuples = self.cached.read(replies[0], self.serde, self.decoded)
            else:
                tuples = decode_rows(self.serde, replies[0], None, self.expand, self.decoded)
            self._done, self.decoded = len(tuples) < self._want, None
            if tuples:
                self.cursor = tuples[-1].config["configurable"]["checkpoint_id"]
            return self._keep(tuples)
        for n, reply in zip(self._asked, replies, strict=True):
            if self._across:
                self._widths[n], rows = window_rows(reply)
                self._remember(n)
                if self._one_trip:
                    self._read.update(zip(rows, reply[2], strict=True))
            else:
                rows = search_rows(reply)
            self._buffers[n] = rows
            self._exhausted[n] = len(rows) < self._want
            self._advance(n, rows)
        self._found = self._merge()
        self._done = not self._found
        if not self._one_trip:
            return []
        # the checkpoints came with the rows (list_page.lua); a row read as none (false) was
        # gone, as a fetch of it would find
        found, self._found = self._found, []
        checkpoints = [self._read.pop(row) for row in found]
        return self._keep(self._decoded([c for c in checkpoints if c]))

    def _decoded(self, rows: Sequence[Any]) -> list[CheckpointTuple]:
        """`rows` read; across threads, one that cannot be read is skipped and counted instead
        of failing the listing (`Skipped`)."""
        if not self._across:
            return decode_rows(self.serde, rows)
        damaged: list[PayloadDecodeError] = []
        tuples = decode_rows(self.serde, rows, damaged)
        self.skipped.add(damaged)
        return tuples

    def _advance(self, n: int, rows: Sequence[Row]) -> None:
        """Where index `n`'s next page starts: strictly after the last row fetched, at offset 0,
        so that checkpoints deleted meanwhile shift nothing past the page. Within one thread and
        namespace ids are unique: below the last id (`_bounds`); otherwise (several threads or
        namespaces, where one id can repeat: `copy_thread` copies ids) after the last row in the
        listing's order (`_cursors`: id DESC, then tk, nk ASC). An id a FILTER cannot quote (or
        the empty id, which stands for no bound) keeps the bound where it was and counts on from
        it (`_offsets` rows further)."""
        last = rows[-1] if rows else None
        if last is None or not last[2] or not SAFE_ID.match(last[2]):  # '' bounds nothing
            self._offsets[n] += len(rows)
        elif not self._across and self.checkpoint_ns is not None:
            self._bounds[n], self._offsets[n] = last[2], 0
        else:
            self._cursors[n], self._offsets[n] = last, 0

    def _merge(self) -> list[Row]:
        """Up to a page of buffered rows, newest first, while no index that may hold more has
        run dry (its next rows could be newer than any buffered)."""
        merged: list[Row] = []
        while len(merged) < self._want:
            if any(not buffer and not self._exhausted[n] for n, buffer in enumerate(self._buffers)):
                break
            heads = [buffer for buffer in self._buffers if buffer]
            if not heads:
                break
            newest = max(buffer[0][2] for buffer in heads)
            merged.append(min((b for b in heads if b[0][2] == newest), key=lambda b: tie_order(b[0])).pop(0))
        return merged

    def _keep(self, tuples: list[CheckpointTuple]) -> list[CheckpointTuple]:
        # Pages are read from a live index: a checkpoint added meanwhile with an id below the
        # cursor (a copied thread keeps its ids), or rows shifting into a page counted by offset
        # (an id a FILTER cannot quote), may come again: a checkpoint returned is not returned again.
        kept = []
        for t in tuples:
            seen = identity(t)
            if seen in self._returned:
                continue
            if (
                matches(t.metadata, self.filter)
                and (not self.before or seen[2] < self.before)
                and (not self.only or seen[2] == self.only)
            ):
                kept.append(t)
                self._returned.add(seen)
        if self.limit is not None:
            kept = kept[: self.limit - self._emitted]
        self._emitted += len(kept)
        if kept:
            self._last = kept[-1].config["configurable"]["checkpoint_id"]
        return kept

    def resumed(self, targets: Sequence[IndexTarget]) -> ListPager:
        """The rest of this listing on other indexes (the slots moved): what is older than the
        last checkpoint returned, up to what is left of `limit`."""
        before = self._last or self.before
        limit = None if self.limit is None else self.limit - self._emitted
        return ListPager(self.keyspace, self.view, self.serde, self.thread_id, self.checkpoint_ns, self.filter,
                         before, limit, tuple(targets), before, self.top, self.hints, self.only, self.skipped)
