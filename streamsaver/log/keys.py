"""Every Redis key streamsaver uses is spelled here, and only here.

Layout (``P`` = key prefix, ``T`` = partition hash tag ``{pN}``, ``t`` / ``n`` / ``c`` = escaped
thread id / namespace / checkpoint id, see `streamsaver.log.codec.escape`)::

    P:meta                      hash    deployment settings (partition count, schema version)
    P:probe                     (none)  never written: setup probes RedisJSON with ``JSON.TYPE`` on it
    P:log:T:t                   stream  the thread log: every event of one thread (the truth)
    P:feed:T                    stream  the partition feed: one small pointer per event
    P:pos:T:t                   hash    view name -> id of the last event applied to that view
    P:full:cp:T:t:n:c           JSON    full view: one document per checkpoint (indexed)
    P:full:ids:T:t:n            zset    full view: checkpoint ids of one namespace, by id
    P:full:ptrs:T:t:n           hash    full view: log entry of each checkpoint body and channel version
    P:full:writes:T:t:n:c       hash    full view: log entry of each pending write of one checkpoint
    P:full:ns:T:t               set     full view: escaped namespaces of the thread
    P:shallow:cp:T:t:n          JSON    shallow view: latest checkpoint of one namespace (indexed)
    P:shallow:ptrs:T:t:n        hash    shallow view: @cid held; log entry of its body and each channel
    P:shallow:writes:T:t:n      hash    shallow view: @cid; log entry of each write of that checkpoint
    P:shallow:ns:T:t            set     shallow view: escaped namespaces of the thread
    P:<view>:idx:vN             index   RediSearch index over ``P:<view>:cp:``
    P:<view>:idx:vN:{iK}        index   the same, on Redis Cluster: one per primary, {iK} a tag it owns
    P:lease:T:<view>            string  projector worker owning partition T for one view (PX TTL)
    P:projector:workers:<view>  zset    live projector workers of a view -> expiry (server ms)
    P:projector:dead:<view>     stream  feed pointers a projector worker could not apply
    P:sub:lease:T:<group>       string  subscriber owning partition T for one group (PX TTL)
    P:sub:tries:T:<group>       hash    feed entry id -> failed handler attempts (one group)
    P:sub:members:<group>       zset    live subscribers of a group -> expiry (server ms)
    P:sub:dead:<group>          stream  events a group's handler kept failing on (dead letters)
    P:analytics:T:<name>        hash    the analytics example's counters for one partition
    P:slog:T:N                  stream  the store's partition log N (T = {pN}): every ItemPut/ItemDeleted
    P:sfeed:T                   stream  the store partition's feed: one pointer per store event
    P:spos:T:N                  hash    store view name -> id of the last event applied to it
    P:items:doc:T:s:k           JSON    store view: one item document (s = escaped labels joined by '.')
    P:items:keys:T              set     store view: ``s:k`` of every item of the partition (its purge)
    P:items:idx:vN              index   RediSearch index over ``P:items:doc:``

Every key of a thread carries the tag of the thread's partition, so one atomic script can touch
the log, the feed, the views and the positions of a thread, also on Redis Cluster. Every key
starts with ``P:``, so an ACL rule on ``P:*`` covers a deployment.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any
from uuid import UUID

from streamsaver.errors import ConfigurationError, InvalidInputError
from streamsaver.log.codec import escape, unescape

__all__ = [
    "DEFAULT_PARTITIONS", "DEFAULT_PREFIX", "STORE_VIEW", "VIEW_SCHEMA_VERSIONS", "Keyspace", "StoreKeys",
    "ThreadKeys", "ViewName", "checked_id", "item_stem", "nested_prefix", "projector_group",
]

DEFAULT_PREFIX = "streamsaver"
DEFAULT_PARTITIONS = 16
INDEX_SCHEMA_VERSION = 5

ViewName = str
"""A view's name: one of its domain's views (`streamsaver.log.domain.Domain.views`), also the
key family its keys live under (``P:<view>:...``)."""
_PREFIX_RULE = re.compile(r"^[A-Za-z0-9._-]+(:[A-Za-z0-9._-]+)*$")
KEY_KINDS = frozenset({
    "meta", "log", "feed", "pos", "full", "shallow", "lease", "projector", "sub", "analytics",
    "slog", "sfeed", "spos", "items", "audit", "afeed",
})
"""The words that follow a deployment's prefix in its keys (``P:<kind>:...``). A prefix with one
of them after its first word would nest its keys among those of the deployment named by the
words before it (``app:full`` under ``app``'s ``app:full:*``, which a rebuild of ``app``'s full
view deletes), so such prefixes are refused."""


@lru_cache(maxsize=16384)
def partition_of(thread_id: str, partitions: int) -> int:
    """The partition of a thread: a stable hash of its id, modulo the partition count."""
    digest = hashlib.blake2b(thread_id.encode("utf-8", "surrogatepass"), digest_size=8).digest()
    return int.from_bytes(digest, "big") % partitions


@dataclass(frozen=True)
class ThreadKeys:
    """The keys of one thread in one deployment; built by `Keyspace.thread`."""

    prefix: str
    slot_tag: str
    escaped_thread: str

    @property
    def log(self) -> str:
        """The thread log stream."""
        return f"{self.prefix}:log:{self.slot_tag}:{self.escaped_thread}"

    @property
    def feed(self) -> str:
        """The feed of the thread's partition."""
        return f"{self.prefix}:feed:{self.slot_tag}"

    @property
    def positions(self) -> str:
        """The hash of last applied event id per view."""
        return f"{self.prefix}:pos:{self.slot_tag}:{self.escaped_thread}"

    @property
    def audit(self) -> str:
        """The thread's audit stream (model and tool calls, `streamsaver.middleware.audit`)."""
        return f"{self.prefix}:audit:{self.slot_tag}:{self.escaped_thread}"

    @property
    def audit_feed(self) -> str:
        """The audit feed of the thread's partition (consumer groups follow it)."""
        return f"{self.prefix}:afeed:{self.slot_tag}"

    def base(self, view: ViewName, kind: str) -> str:
        """``P:view:kind:T:t``, the stem that per-namespace keys of one kind extend."""
        return f"{self.prefix}:{view}:{kind}:{self.slot_tag}:{self.escaped_thread}"

    def namespaces(self, view: ViewName) -> str:
        """The set of escaped namespaces the view holds for this thread."""
        return self.base(view, "ns")

    def in_ns(self, view: ViewName, kind: str, checkpoint_ns: str) -> str:
        """A per-namespace key, e.g. ``P:full:ids:T:t:n``."""
        return f"{self.prefix}:{view}:{kind}:{self.slot_tag}:{self.escaped_thread}:{escape(checkpoint_ns)}"

    def doc_prefix(self, view: ViewName, kind: str, checkpoint_ns: str) -> str:
        """The stem of per-checkpoint keys; scripts append the escaped checkpoint id."""
        return f"{self.in_ns(view, kind, checkpoint_ns)}:"

    def per_checkpoint(self, view: ViewName, kind: str, checkpoint_ns: str, checkpoint_id: str) -> str:
        """A per-checkpoint key, e.g. ``P:full:cp:T:t:n:c``."""
        return self.doc_prefix(view, kind, checkpoint_ns) + escape(checkpoint_id)


STORE_VIEW: ViewName = "items"
"""The store's view: its key family (``P:items:...``) and its field in the positions hash."""
VIEW_SCHEMA_VERSIONS: dict[ViewName, int] = {}
"""Views whose index schema version is not `INDEX_SCHEMA_VERSION` (none: every view's is v5)."""


@dataclass(frozen=True)
class StoreKeys:
    """The keys of one store partition (its log id is the partition number, spelt out); built
    by `Keyspace.store`. Every key carries the partition's tag, so one script touches them all."""

    prefix: str
    slot_tag: str
    log_id: str

    @property
    def log(self) -> str:
        """The partition log stream (``P:slog:{pN}:N``)."""
        return f"{self.prefix}:slog:{self.slot_tag}:{self.log_id}"

    @property
    def feed(self) -> str:
        """The store partition's feed."""
        return f"{self.prefix}:sfeed:{self.slot_tag}"

    @property
    def positions(self) -> str:
        """The hash of last applied event id per store view."""
        return f"{self.prefix}:spos:{self.slot_tag}:{self.log_id}"

    @property
    def items(self) -> str:
        """The set of ``s:k`` stems of the partition's items (what a purge deletes)."""
        return f"{self.prefix}:{STORE_VIEW}:keys:{self.slot_tag}"

    @property
    def namespaces(self) -> str:
        """The hash of the partition's namespaces (escaped labels joined by '.') and how many
        stems of the item set each holds: what ``list_namespaces`` reads."""
        return f"{self.prefix}:{STORE_VIEW}:nsc:{self.slot_tag}"

    @property
    def expiring(self) -> str:
        """The stems of the partition's items whose last put gave them a TTL (a sorted set, every
        score 0, ranged by namespace): the items a namespace's liveness is checked on."""
        return f"{self.prefix}:{STORE_VIEW}:nsx:{self.slot_tag}"

    @property
    def doc_base(self) -> str:
        """The stem item documents extend with ``:s:k`` (`item_stem`)."""
        return f"{self.prefix}:{STORE_VIEW}:doc:{self.slot_tag}"

    def item(self, stem: str) -> str:
        """The document of the item whose `item_stem` is `stem`."""
        return f"{self.doc_base}:{stem}"


def item_stem(namespace: tuple[str, ...], key: str) -> str:
    """``s:k``: the escaped labels joined by '.' (labels hold no '.'), and the escaped key."""
    return f"{'.'.join(escape(label) for label in namespace)}:{escape(key)}"


PROJECTOR_GROUP = "projector:"
"""The consumer group name of a view's projector workers on the partition feeds, before the view."""


def projector_group(view: ViewName) -> str:
    """The consumer group a view's projector workers read the partition feeds in."""
    return f"{PROJECTOR_GROUP}{view}"


def checked_id(value: Any, what: str) -> str:
    """`value` as an id that names keys: a string (an int or UUID spelt out) of valid Unicode.

    Raises:
        InvalidInputError: (a ValueError) any other type, or a string with lone surrogates.
    """
    if isinstance(value, (int, UUID)) and not isinstance(value, bool):
        return str(value)
    if not isinstance(value, str):
        raise InvalidInputError(f"{what} must be a string, not {type(value).__name__}")
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as exc:
        # Ids are stored in JSON documents, which hold valid Unicode only (no lone surrogates).
        raise InvalidInputError(f"{what} must be valid Unicode: {exc}") from exc
    return value


def _is_scratch(word: str) -> bool:
    """Whether `word` is one `nested_prefix` puts after a deployment's prefix for the operator
    tools' scratch keys (``P:shadow``, ``P:verify.<hex>``)."""
    return word == "shadow" or word.startswith("verify.")


def nested_prefix(prefix: str, word: str) -> str:
    """A prefix for keys kept under a deployment's own (a shadow rebuild's, a verify scratch's):
    ``P:<word>``, so an ACL rule on ``P:*`` still covers them."""
    return f"{prefix}:{word}"


@lru_cache(maxsize=16384)
def _thread_keys(prefix: str, partitions: int, thread_id: str) -> ThreadKeys:
    # Cached: every event of a thread names its keys several times, and the partition is a hash.
    return ThreadKeys(prefix, f"{{p{partition_of(thread_id, partitions)}}}", escape(thread_id))


@dataclass(frozen=True)
class Keyspace:
    """The keys of one deployment: a prefix and a fixed partition count.

    Raises:
        ConfigurationError: for a prefix outside ``[A-Za-z0-9._-]`` words joined by ``:``, one
            with a key kind (`KEY_KINDS`) after its first word, or a partition count outside
            1..16384.
    """

    prefix: str = DEFAULT_PREFIX
    partitions: int = DEFAULT_PARTITIONS
    scratch: bool = field(default=False, compare=False, repr=False)
    """An operator tool's scratch keys under a deployment (`nested_prefix`): its last word may
    be a scratch word (`_is_scratch`), which a deployment's prefix may not have."""

    def __post_init__(self) -> None:
        if not _PREFIX_RULE.match(self.prefix):
            raise ConfigurationError(
                f"key prefix {self.prefix!r} must be words of [A-Za-z0-9._-] joined by ':'"
            )
        words = self.prefix.split(":")[1:]
        scratch = [w for w in (words[:-1] if self.scratch else words) if _is_scratch(w)]
        if scratch:
            raise ConfigurationError(
                f"key prefix {self.prefix!r} would put its keys among an operator tool's scratch keys of the "
                f"deployment before {scratch[0]!r} (a shadow rebuild's or verify's): a word after the first must "
                "not be 'shadow' nor start with 'verify.' (see docs/operations.md)"
            )
        nested = [word for word in self.prefix.split(":")[1:] if word in KEY_KINDS]
        if nested:
            owner = self.prefix[: self.prefix.index(":" + nested[0])]
            raise ConfigurationError(
                f"key prefix {self.prefix!r} would put its keys among those of the deployment "
                f"{owner!r} ({owner}:{nested[0]}:*): a word after the first must not be one of "
                f"{sorted(KEY_KINDS)} (see docs/operations.md)"
            )
        if not 1 <= self.partitions <= 16384:
            raise ConfigurationError(f"partitions must be 1..16384, not {self.partitions}")

    @property
    def meta(self) -> str:
        """The deployment settings hash."""
        return f"{self.prefix}:meta"

    @property
    def probe(self) -> str:
        """The key setup asks ``JSON.TYPE`` of to find RedisJSON (never written)."""
        return f"{self.prefix}:probe"

    def slot_tag(self, partition: int) -> str:
        """The hash tag shared by every key of one partition."""
        return f"{{p{partition}}}"

    def feed(self, partition: int) -> str:
        """The feed stream of one partition."""
        return f"{self.prefix}:feed:{self.slot_tag(partition)}"

    def audit_feed(self, partition: int) -> str:
        """The agent audit feed of a partition (`ThreadKeys.audit_feed`)."""
        return f"{self.prefix}:afeed:{self.slot_tag(partition)}"

    def lease(self, partition: int, view: ViewName) -> str:
        """The lease naming the projector worker that owns one partition of one view."""
        return f"{self.prefix}:lease:{self.slot_tag(partition)}:{view}"

    def projector_workers(self, view: ViewName) -> str:
        """The roster of live projector workers of a view (name -> expiry, server ms)."""
        return f"{self.prefix}:projector:workers:{view}"

    def dead_letters(self, view: ViewName) -> str:
        """The dead-letter stream of a view's projector workers."""
        return f"{self.prefix}:projector:dead:{view}"

    def subscriber_lease(self, partition: int, group: str) -> str:
        """The lease naming the subscriber that owns one partition for one group."""
        return f"{self.prefix}:sub:lease:{self.slot_tag(partition)}:{group}"

    def subscriber_attempts(self, partition: int, group: str) -> str:
        """Failed handler attempts of one group's pending entries on one partition feed."""
        return f"{self.prefix}:sub:tries:{self.slot_tag(partition)}:{group}"

    def subscribers(self, group: str) -> str:
        """The roster of a group's live subscribers (name -> expiry, server ms)."""
        return f"{self.prefix}:sub:members:{group}"

    def subscriber_dead_letters(self, group: str) -> str:
        """The dead-letter stream of a subscriber group."""
        return f"{self.prefix}:sub:dead:{group}"

    def analytics(self, partition: int, name: str) -> str:
        """The counters the analytics example keeps for one partition."""
        return f"{self.prefix}:analytics:{self.slot_tag(partition)}:{name}"

    @property
    def pattern(self) -> str:
        """A SCAN pattern matching every key of the deployment."""
        return f"{self.prefix}:*"

    def log_stem(self, family: str = "log") -> str:
        """The stem every log key of a key family (``log``: thread logs) starts with."""
        return f"{self.prefix}:{family}:"

    def logs_pattern(self, partition: int | None = None, family: str = "log") -> str:
        """A SCAN pattern matching every log of a family (of one partition, when given)."""
        if partition is None:
            return f"{self.log_stem(family)}*"
        return f"{self.log_stem(family)}{self.slot_tag(partition)}:*"

    def thread_of(self, key: bytes | str) -> str:
        """The thread id a log or positions key (``P:<kind>:{pN}:<escaped thread>``) names."""
        text = key.decode() if isinstance(key, bytes) else key
        escaped = text[len(self.prefix) + 1 :].split(":", 2)[2]  # escaped ids hold no ':'
        return unescape(escaped)

    def positions_stem(self, family: str = "pos") -> str:
        """The stem every positions hash (of a domain's `family`) starts with."""
        return f"{self.prefix}:{family}:"

    def positions_pattern(self, family: str = "pos") -> str:
        """A SCAN pattern matching every positions hash (of a domain's `family`)."""
        return f"{self.prefix}:{family}:*"

    def store(self, log_id: str) -> StoreKeys:
        """The keys of the store partition whose log id is `log_id` (its number, spelt out)."""
        return StoreKeys(self.prefix, f"{{p{log_id}}}", log_id)

    def store_partition(self, first_label: str) -> str:
        """The log id of the store partition of a namespace: its first label's partition."""
        return str(partition_of(first_label, self.partitions))

    def index_stem(self, view: ViewName) -> str:
        """The stem of every index name of a view, whatever its schema version or tag."""
        return f"{self.prefix}:{view}:idx:"

    def thread(self, thread_id: str) -> ThreadKeys:
        """The keys of one thread."""
        return _thread_keys(self.prefix, self.partitions, thread_id)

    def index(self, view: ViewName, tag: str = "", version: int | None = None) -> str:
        """The RediSearch index name of a view, versioned by its schema (`VIEW_SCHEMA_VERSIONS`;
        an older `version`: the name an earlier release gave it); on Redis Cluster one per
        primary, named with a hash `tag` that primary owns (see `streamsaver.log.routing`)."""
        version = VIEW_SCHEMA_VERSIONS.get(view, INDEX_SCHEMA_VERSION) if version is None else version
        name = f"{self.prefix}:{view}:idx:v{version}"
        return f"{name}:{tag}" if tag else name

    def document_prefix(self, view: ViewName, kind: str = "cp") -> str:
        """The key prefix the view's index covers (its documents' `kind`)."""
        return f"{self.prefix}:{view}:{kind}:"

    def view_pattern(self, view: ViewName) -> str:
        """A SCAN pattern matching every key of a view."""
        return f"{self.prefix}:{view}:*"
