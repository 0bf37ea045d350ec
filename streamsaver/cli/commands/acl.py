"""``streamsaver acl``: print the ``ACL SETUSER`` lines of a deployment's admin and runtime users."""

from __future__ import annotations

import argparse

from streamsaver.cli.commands._shared import emit_json

__all__ = ["register"]


def _run(args: argparse.Namespace) -> int:
    from streamsaver.log.acl import admin_rules, runtime_rules, setuser_lines

    if args.json:
        emit_json({"admin": {"user": args.admin_user, "rules": admin_rules(args.prefix)},
                   "runtime": {"user": args.runtime_user, "rules": runtime_rules(args.prefix)}})
    else:
        print("\n".join(setuser_lines(args.prefix, args.runtime_user, args.admin_user, args.password)))
    return 0


def register(commands: argparse._SubParsersAction[argparse.ArgumentParser], common: argparse.ArgumentParser) -> None:
    """Add ``acl``."""
    parser = commands.add_parser(
        "acl",
        parents=[common],
        help="print the ACL SETUSER lines of the deployment's admin and runtime users",
        description="Print two ACL SETUSER lines for --prefix (nothing is sent to a server). The admin "
        "(deploy) user runs `streamsaver setup` (or setup()) and the operator tools: it creates the "
        "indexes, loads the scripts and writes the settings, and may create an index over any prefix, "
        "so it stays the operator's. The runtime user is what the savers, the store and the subscribers "
        "connect as: only its deployment's keys and index names (one pattern per key family, so a "
        "nested prefix such as app:tenant1 stays apart from app) and only the commands they send; no "
        "FT.CREATE, FT._LIST, SCAN, KEYS, INFO, SCRIPT FLUSH, EVAL, CLIENT LIST, channel. See "
        "docs/security.md for what a shared server can and cannot isolate.",
    )
    parser.add_argument("--runtime-user", default="streamsaver", help="the runtime user's name (default: streamsaver)")
    parser.add_argument("--admin-user", default="streamsaver-admin",
                        help="the admin user's name (default: streamsaver-admin)")
    parser.add_argument("--password", default="PASSWORD",
                        help="the password to put in both lines (default: the placeholder PASSWORD)")
    parser.set_defaults(handler=_run)
