"""The append and apply calls of any domain, without I/O: one atomic script call each.

An append sends, in wire order: the event's stream fields, its partition-feed pointer, whether
it erases the log, one block of projected commands per view, the TTL block and the repeat probe
(``append.lua``). An apply sends logged events with their entry ids and the same view blocks
(``apply.lua``). What is domain-specific (the projectors, how a repeat is recognised, the
erasing event) comes from the `Domain`.
"""

from __future__ import annotations

from collections.abc import Sequence

from streamsaver.errors import InvalidInputError
from streamsaver.log.domain import Domain
from streamsaver.log.events import Event
from streamsaver.log.keys import Keyspace, ViewName
from streamsaver.log.stored import feed_pointer, to_fields

__all__ = ["append_batch_call", "append_call", "apply_batch_call", "apply_call", "view_blocks"]

Arg = str | bytes | int

_COUNTS = tuple(str(n) for n in range(1024))


def _count(n: int) -> str:
    """`n` spelt out: packing a str argument costs a third of packing an int (hiredis)."""
    return _COUNTS[n] if n < 1024 else str(n)


_MORE_KEYS = {"SS.ITEM": (4, 6, 8), "SS.NSREM": (3, 5)}
"""The ops that write keys after their first (`projectors.commands`): at these arguments."""


def view_blocks(
    domain: Domain, event: Event, keyspace: Keyspace, views: Sequence[ViewName], declared: dict[Arg, None] | None = None
) -> list[Arg]:
    """The projected commands of `event` for each view, as the scripts read them: the count of
    views, then per view its name, its command count and the commands, each after its length.
    The keys the commands name are added to `declared`, when given (see `_add_view_blocks`)."""
    args: list[Arg] = []
    _add_view_blocks(args, domain, event, keyspace, views, declared)
    return args


def _add_view_blocks(
    args: list[Arg], domain: Domain, event: Event, keyspace: Keyspace, views: Sequence[ViewName],
    declared: dict[Arg, None] | None = None,
) -> None:
    """Append `view_blocks` to `args` (replay builds a batch's arguments in one list: copying
    each event's blocks into it cost as much as building them). With `declared`, every key the
    commands name is added to it (in order, once): the keys a script call declares, so that
    Redis Cluster routes it, and holds it during a slot migration, by every key it writes (a
    purge's stems are not keys: it names its namespace set, the rest it finds)."""
    add, extend = args.append, args.extend
    add(_count(len(views)))
    projectors = domain.projectors
    for view in views:
        commands = projectors[view](event, keyspace)
        add(view)
        add(_count(len(commands)))
        for command in commands:
            n = len(command)
            add(_COUNTS[n] if n < 1024 else str(n))  # not _count: a call per command costs more
            extend(command)
            if declared is not None:
                declared[command[1]] = None
                if command[0] == "DEL":
                    declared.update(dict.fromkeys(command[2:]))
                elif command[0] in _MORE_KEYS:  # the item set, namespace counts and expiring stems
                    declared.update(dict.fromkeys(command[k] for k in _MORE_KEYS[command[0]]))


def append_call(
    domain: Domain, event: Event, keyspace: Keyspace, views: Sequence[ViewName], ttl: Sequence[Arg] = ()
) -> list[Arg]:
    """The EVALSHA arguments that append `event` and project it into `views`, atomically; a
    repeat of an event already logged (a retried call) writes nothing but the TTL refresh.
    `ttl` is the log's TTL block (`streamsaver.log.ttl.ttl_block`), empty for none; the repeat
    probe (`Domain.held_entry`), when there is one, comes after it."""
    keys = keyspace.thread(event.thread_id)
    probe = domain.held_entry(event, keyspace, views)
    # Built in one list, in wire order: a put's ~100 arguments were copied four times over.
    erases = isinstance(event, domain.erase)
    script = domain.scripts.erase if erases and domain.scripts.erase else domain.scripts.append
    command: list[Arg] = ["EVALSHA", script.sha]
    fields = to_fields(event)
    command.append(_count(2 * len(fields)))
    for pair in fields.items():
        command += pair
    pointer = feed_pointer(event)
    command.append(_count(len(pointer)))
    command += pointer
    command.append("1" if erases else "0")
    declared: dict[Arg, None] = {}
    _add_view_blocks(command, domain, event, keyspace, views, declared)
    command += ttl
    # KEYS: the log, feed and positions, the probe (the positions again for none), then every
    # other key the view ops name (append.lua).
    named: list[Arg] = [keys.log, keys.feed, keys.positions, keys.positions if probe is None else probe[0]]
    others = [key for key in declared if key not in named]
    command[2:2] = (_count(len(named) + len(others)), *named, *others)
    if probe is not None:
        command += (probe[1], probe[2])
    return command


def apply_call(
    domain: Domain, event: Event, event_id: str, keyspace: Keyspace, views: Sequence[ViewName]
) -> list[Arg]:
    """The EVALSHA arguments that apply the logged `event` (entry `event_id`) to `views` that
    have not applied it yet; the same projectors and ops as the append."""
    return apply_batch_call(domain, [(event, event_id)], keyspace, views)


def apply_batch_call(
    domain: Domain, logged: Sequence[tuple[Event, str]], keyspace: Keyspace, views: Sequence[ViewName]
) -> list[Arg]:
    """The EVALSHA arguments that apply logged events of ONE log, in log order (each with its
    entry id), to `views`: one script, positions read and recorded once. A batch of several
    events carries, per view, the ops that erase the log from it: if the batch fails, the
    script erases instead of leaving the log half-applied (see ``apply.lua``).

    Raises:
        InvalidInputError: no events, or events of more than one log.
    """
    if not logged:
        raise InvalidInputError("apply_batch_call needs at least one event")
    thread = logged[0][0].thread_id
    args: list[Arg] = [len(logged)]
    keys = domain.log_keys(keyspace, thread)
    declared: dict[Arg, None] = dict.fromkeys((keys.positions, keys.log))
    for event, event_id in logged:
        if event.thread_id != thread:
            raise InvalidInputError("a batch applies the events of one thread")
        args.append(event_id)
        _add_view_blocks(args, domain, event, keyspace, views, declared)
    erase = domain.erase(thread)
    if len(logged) > 1:
        _add_view_blocks(args, domain, erase, keyspace, views, declared)
    else:
        args.append(0)
        if isinstance(logged[0][0], domain.erase):
            args.append("forget")  # the log's positions go with it (apply.lua)
    # The log too: the keys the batch writes take its deadline, if it has one (apply.lua); then
    # every key the ops name (Redis Cluster).
    return domain.scripts.apply.evalsha_args(list(declared), args)


def append_batch_call(
    domain: Domain, events: Sequence[Event], keyspace: Keyspace, views: Sequence[ViewName],
    guards: Sequence[tuple[str, str, bytes]] = (),
) -> list[Arg]:
    """The EVALSHA arguments that append `events` of ONE log, in order, each with its feed
    pointer and projected into `views`, all in one atomic script (``append_batch.lua``, the
    domain's `LogScripts.append_batch`); the reply is the entry ids. No repeat probe, no TTL
    block: a domain whose events expire says so in its projections. Each of `guards` (a JSON
    document key of the log's slot, a JSONPath, the reply ``JSON.GET`` of it must give) makes
    the script refuse the whole append with ``STALE`` when the document changed since it was read.

    Raises:
        InvalidInputError: no events, events of more than one log, or a domain without the script.
    """
    script = domain.scripts.append_batch
    if script is None or not events:
        raise InvalidInputError("append_batch_call needs events and a domain with an append_batch script")
    log_id = events[0].thread_id
    keys = domain.log_keys(keyspace, log_id)
    declared: dict[Arg, None] = dict.fromkeys((keys.log, keys.feed, keys.positions))
    args: list[Arg] = [_count(len(events))]
    for event in events:
        if event.thread_id != log_id:
            raise InvalidInputError("a batch appends the events of one log")
        fields = domain.encode(event)
        args.append(_count(2 * len(fields)))
        for pair in fields.items():
            args += pair
        pointer = domain.pointer(event)
        args.append(_count(len(pointer)))
        args += pointer
        _add_view_blocks(args, domain, event, keyspace, views, declared)
    if guards:  # after the events: their count, then (key, JSONPath, expected reply) each
        args.append(_count(len(guards)))
        for key, path, expected in guards:
            args += [key, path, expected]
            declared[key] = None
    return script.evalsha_args(list(declared), args)
