"""``streamsaver drop-stale-indexes``: drop the indexes slot moves left behind on a Redis Cluster
(`streamsaver.ops.stale_indexes`)."""

from __future__ import annotations

import argparse

from streamsaver.cli.commands._shared import emit_json, open_client

__all__ = ["register"]

DESCRIPTION = """\
On Redis Cluster each view's index (the checkpoint views' and the store's items index) is one per
primary, named with a hash tag that primary owns. When the slot of such a tag moves (resharding,
a primary that joins), the next setup() makes each primary's index under its new tag and the old
ones stay, indexing that primary's documents a second time (doctor warns: "stale indexes").
This drops them (FT.DROPINDEX without DD: the documents stay; no process on the current slot
map asks them, and one on the old map sets up again). The giving primary's old index is named
for a slot it no longer owns, and RediSearch answers MOVED to any command naming it: it is
dropped on one connection to that primary between CLUSTER SETSLOT <slot> IMPORTING <owner> and
CLUSTER SETSLOT <slot> STABLE, after ASKING (the slot's owner does not change); the slot is
made STABLE again whatever fails (on a new connection if its connection was lost), and if even
that fails it exits 1 naming the command to run on that primary. Refused (exit 1) while a slot
is migrating on that primary. Needs a user allowed CLUSTER SETSLOT, EVAL and
FT.DROPINDEX: the operator who reshards the cluster (the deployment's admin user has no
CLUSTER SETSLOT, docs/security.md). Run setup first (the indexes of the current slot map must
exist). Each index is checked again and dropped in one atomic call on its primary: one that
primary's slot map makes current again since the listing (its slot moved back) is kept, and
reported as kept. --dry-run lists them only. On one server there is nothing to drop.

With --superseded (one server or a cluster), also the indexes of an older schema version of
each view (P:<view>:idx:v4 after an upgrade to v5): each is dropped once the index of the
current schema on the same server or primary has finished its scan (FT.INFO: indexing 0), and
kept, listed as such, while it has not (read again right before each drop). Drop them once no
process of the older release is left: those query the old index (docs/operations.md, "upgrading the index schema").
"""


def _run(args: argparse.Namespace) -> int:
    from streamsaver.ops.stale_indexes import drop_stale_indexes, stale_indexes
    from streamsaver.ops.superseded_indexes import drop_superseded_indexes, superseded_indexes

    kept: dict[str, str] = {}
    with open_client(args) as client:
        stale = stale_indexes(client, args.prefix)
        dropped = [] if args.dry_run else drop_stale_indexes(client, stale, lambda i, why: kept.update({i.name: why}))
        older = superseded_indexes(client, args.prefix) if args.superseded else []
        dropped += [] if args.dry_run else drop_superseded_indexes(
            client, older, lambda i, why: kept.update({i.name: why}))
    if args.json:
        emit_json({"stale": [{"node": s.node, "name": s.name, "slot": s.slot, "owner": s.owner} for s in stale],
                   "superseded": [{"node": s.node, "name": s.name, "view": s.view, "version": s.version,
                                   "current": s.current, "ready": s.ready} for s in older],
                   "dropped": dropped, "kept": kept})
        return 0
    for index in stale:
        why = f" ({kept[index.name]})" if index.name in kept else ""
        print(f"{_done(index.name, dropped, kept, args.dry_run)}: {index.name} on {index.node}{why}")
    for old in older:
        where = f" on {old.node}" if old.node else ""
        if not old.ready:
            print(f"kept: {old.name}{where} ({old.current} is missing or still indexing)")
            continue
        done = _done(old.name, dropped, kept, args.dry_run)
        why = f"; {kept[old.name]}" if old.name in kept else ""
        print(f"{done}: {old.name}{where} (schema v{old.version}, superseded by {old.current}{why})")
    if not stale and not older:
        print(f"no stale index under the prefix {args.prefix!r}")
    return 0


def _done(name: str, dropped: list[str], kept: dict[str, str], dry_run: bool) -> str:
    """What became of the index `name`, as a line of the report begins."""
    if name in kept:
        return "kept"
    return "dropped" if name in dropped else "would drop" if dry_run else "gone meanwhile"


def register(commands: argparse._SubParsersAction[argparse.ArgumentParser], common: argparse.ArgumentParser) -> None:
    """Add ``drop-stale-indexes``."""
    parser = commands.add_parser(
        "drop-stale-indexes",
        parents=[common],
        help="Redis Cluster: drop the indexes slot moves left behind (each indexes a primary twice)",
        description=DESCRIPTION,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--dry-run", action="store_true", help="list the stale indexes, drop nothing")
    parser.add_argument("--superseded", action="store_true",
                        help="also drop indexes of an older schema version once the current one has finished its scan")
    parser.set_defaults(handler=_run)
