"""A domain: what one kind of log brings to the log core, as data.

The log core (append with inline projection, positions, feeds, replay, verify, shadow rebuild,
export and import, the projector worker) is written once over "a log of events that projectors
fold into views". A domain tells it what it cannot know by itself:

* how its log entries are read (`Domain.decode`) and which keys hold its logs (its key
  family, ``P:<log_family>:{pN}:<log id>``);
* its **views**, by name (also the key family their keys live under, ``P:<view>:...``), each
  with its pure projector (``event, keyspace -> commands``), the call reading one of its
  documents and its index schema;
* how a repeat of an event already logged is recognised (`Domain.held_entry`);
* the event that erases one log's share of every view (`Domain.erase`: the projectors'
  answer to it is the purge ops, whose key stems are also the stems the TTL block moves);
* the server-side scripts that run the log core's calls (`LogScripts`: ``append.lua``,
  ``apply.lua``, ``rewrite.lua``, ``ttl.lua`` for checkpoints), and every script its calls use
  (`Domain.loads`, which setup loads). The log core builds their arguments and their loads from
  what the domain hands it (`streamsaver.scripts` sits beside it, not below).

Checkpoints are the first domain (``projectors.domain.CHECKPOINTS``); a second one (the store)
brings its own events, projectors, views and reader, and reuses everything else.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Any, Protocol

from streamsaver.errors import InvalidInputError
from streamsaver.log.events import Event
from streamsaver.log.keys import Keyspace, ViewName, partition_of
from streamsaver.log.stored import feed_pointer, from_fields, to_fields

__all__ = [
    "Decoder", "Domain", "Encoder", "HeldEntry", "LogKeys", "LogScripts", "Projector", "Reader", "ScriptRef", "View",
]

Projector = Callable[[Event, Keyspace], Sequence[Sequence[str | bytes]]]
"""A view's pure projector: the commands that apply one event (`projectors.commands`)."""
Decoder = Callable[..., Event]
"""``(fields, event_id=None, *, payloads=True) -> Event``: a log entry's event
(`streamsaver.log.stored.from_fields`)."""
Reader = Callable[[Keyspace, str, str, str], list[str | bytes | int]]
"""A view's read call: ``(keyspace, log id, namespace, document id or "")`` -> EVALSHA arguments."""
Encoder = Callable[[Event], dict[bytes, bytes]]
"""A log entry's stream fields from its event (`streamsaver.log.stored.to_fields`)."""
Pointer = Callable[[Event], list[str | bytes | int]]
"""A feed pointer's fields after its ``id`` (`streamsaver.log.stored.feed_pointer`)."""


class LogKeys(Protocol):
    """The keys of one log the log core's calls touch (`streamsaver.log.keys.ThreadKeys`)."""

    @property
    def log(self) -> str:
        """The log stream."""
        ...

    @property
    def feed(self) -> str:
        """The feed of the log's partition."""
        ...

    @property
    def positions(self) -> str:
        """The hash of the last event each view applied."""
        ...


HeldEntry = tuple[str, str, str]
"""Where a view records the log entry holding an event: (hash, field, value a guard field of
the hash must hold, or "")."""


class ScriptRef(Protocol):
    """A server-side script as the calls name it (`streamsaver.scripts.Script`)."""

    @property
    def source(self) -> str:
        """The script's Lua source (what ``SCRIPT LOAD`` sends)."""
        ...

    @property
    def sha(self) -> str:
        """The SHA1 EVALSHA names the script by."""
        ...

    def evalsha_args(
        self, keys: Sequence[str | bytes | int], args: Sequence[str | bytes | int]
    ) -> list[str | bytes | int]:
        """The arguments of an EVALSHA call."""
        ...


@dataclass(frozen=True)
class LogScripts:
    """The scripts that run the log core's calls: the append with inline projection, the apply
    of logged events (replay, projector worker), the log rewrite, and the TTL calls."""

    append: ScriptRef
    apply: ScriptRef
    rewrite: ScriptRef
    ttl: ScriptRef
    append_batch: ScriptRef | None = None
    """Appends several events of one log in one call (`streamsaver.log.append.append_batch_call`)."""
    erase: ScriptRef | None = None
    """The append of the domain's erase event, runnable on a full server (``allow-oom``); None:
    `append` runs it."""
    touch: ScriptRef | None = None
    """The ``touch`` mode of `ttl`, runnable on a full server; None: `ttl` runs it."""


@dataclass(frozen=True)
class View:
    """One view of a domain: its name (also its key family, ``P:<name>:...``, and its field in
    the positions hash), its projector, the call reading one document of it, and its index."""

    name: ViewName
    project: Projector
    read: Reader
    """``(keyspace, log id, namespace, document id or "") -> the EVALSHA arguments`` reading it."""
    index_fields: Sequence[Mapping[str, Any]] = ()
    """The view's RediSearch schema fields, as data (redisvl's format); empty: no index."""
    keeps_history: bool = False
    """Whether the view keeps every document of a log (pages read newest first), or only the
    latest of each namespace."""
    documents: str = "cp"
    """The kind of the view's indexed documents (their keys start ``P:<view>:<documents>:``)."""
    optional_fields: str = ""
    """A regular expression naming the index attributes a deployment may add to `index_fields`
    (the store's embeddings and text fields, which its index config chooses); "": none."""


@dataclass(frozen=True)
class Domain:
    """The views of a domain and the few rules the log core asks of it.

    Attributes:
        name: the domain's name (``"checkpoints"``).
        views: the views, in the order the scripts apply them.
        held_entry: ``(event, keyspace, views) -> HeldEntry | None``: where the append finds
            that `event` is already logged (a retried call), None when it cannot tell.
        erase: the event type erasing one log from every view (a thread's deletion),
            constructed from the log's id alone.
        scripts: the scripts that run the log core's calls on this domain's logs.
        decode: reads the event of a log entry.
        log_family: the key family of the domain's logs (``P:<log_family>:{pN}:<log id>``).
        loads: every script the domain's calls use (its reads too), in the order setup loads
            them; empty: the four of `scripts`.
        log_keys: ``(keyspace, log id) -> LogKeys``: the keys of one log.
        positions_family: the key family of the logs' positions hashes (``P:<family>:...``).
        encode: a log entry's stream fields from its event.
        pointer: a feed pointer's fields from its event.
        feed_key: ``(keyspace, partition) -> key``: the feed a partition's pointers go to.
        log_partition: ``(log id, partitions) -> partition`` of a log (-1: an id no log has).
    """

    name: str
    views: tuple[View, ...]
    held_entry: Callable[[Event, Keyspace, Sequence[ViewName]], HeldEntry | None]
    erase: type[Any]
    scripts: LogScripts
    decode: Decoder = from_fields
    log_family: str = "log"
    loads: tuple[ScriptRef, ...] = ()
    log_keys: Callable[[Keyspace, str], LogKeys] = Keyspace.thread
    positions_family: str = "pos"
    encode: Encoder = to_fields
    pointer: Pointer = feed_pointer
    feed_key: Callable[[Keyspace, int], str] = Keyspace.feed
    log_partition: Callable[[str, int], int] = partition_of

    @cached_property
    def setup_scripts(self) -> tuple[ScriptRef, ...]:
        """The scripts setup loads for this domain (`loads`, or the four of `scripts`)."""
        s = self.scripts
        return self.loads or (s.append, s.apply, s.rewrite, s.ttl)

    @cached_property
    def view_names(self) -> tuple[ViewName, ...]:
        """The names of the domain's views, in order."""
        return tuple(view.name for view in self.views)

    @cached_property
    def projectors(self) -> Mapping[ViewName, Projector]:
        """Each view's projector, by name (built once: every append reads it)."""
        return {view.name: view.project for view in self.views}

    @cached_property
    def _by_name(self) -> Mapping[str, View]:
        return {view.name: view for view in self.views}

    def view(self, name: str) -> View:
        """The view called `name`.

        Raises:
            InvalidInputError: the domain has no such view.
        """
        found = self._by_name.get(name)
        if found is not None:
            return found
        names = " or ".join(repr(v) for v in self.view_names)
        raise InvalidInputError(f"view must be {names}, not {name!r}")

    def view_of(self, name: str) -> ViewName:
        """Validate a view name.

        Raises:
            InvalidInputError: the domain has no such view.
        """
        return self.view(name).name

    def projections_of(self, names: Iterable[str], read_view: ViewName) -> tuple[ViewName, ...]:
        """Validate the views an append keeps current; the read view must be one of them.

        Raises:
            InvalidInputError: an unknown view, or `read_view` not among them.
        """
        views = tuple(dict.fromkeys(self.view_of(v) for v in names))
        if read_view not in views:
            raise InvalidInputError(f"the saver reads the {read_view!r} view, so projections must include it")
        return views

    def logs_pattern(self, keyspace: Keyspace, partition: int | None = None) -> str:
        """A SCAN pattern matching every log of the domain (of one partition, when given)."""
        return keyspace.logs_pattern(partition, self.log_family)

    def erase_stems(self, view: ViewName, log_id: str, keyspace: Keyspace) -> list[str | bytes]:
        """The key stems of one log's keys in `view`: the arguments of the purge op its
        projector answers `erase` with first (what a swap, a TTL block or a restore moves)."""
        (_, *stems), *_ = self.view(view).project(self.erase(log_id), keyspace)
        return list(stems)
