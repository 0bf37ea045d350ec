"""The ACL rules of a deployment's users (`streamsaver.log.acl`): the lines docs/security.md
shows are the ones ``streamsaver acl`` prints, and the key patterns of nested prefixes match
none of each other's keys (tests/integration/test_tenant_isolation.py runs them on a server)."""

from __future__ import annotations

import fnmatch
import re
import subprocess
import sys
from pathlib import Path

import pytest

from streamsaver.errors import ConfigurationError
from streamsaver.log.acl import RUNTIME_COMMANDS, admin_rules, key_patterns, runtime_rules, setuser_lines
from streamsaver.log.keys import KEY_KINDS, Keyspace

DOCS = Path(__file__).parents[2] / "docs" / "security.md"


def test_the_documented_lines_are_the_ones_the_cli_prints() -> None:
    documented = re.findall(r"^ACL SETUSER .+$", DOCS.read_text(), flags=re.MULTILINE)
    assert documented == setuser_lines("streamsaver")
    printed = subprocess.run([sys.executable, "-m", "streamsaver", "acl", "--prefix", "streamsaver"],
                             capture_output=True, text=True, check=True).stdout.splitlines()
    assert printed == documented


def _keys(prefix: str) -> list[str]:
    keyspace = Keyspace(prefix)
    thread = keyspace.thread("t")
    return [keyspace.meta, keyspace.probe, thread.log, thread.positions, keyspace.feed(0), keyspace.index("full"),
            keyspace.lease(0, "full"), keyspace.subscriber_lease(0, "g"), keyspace.store("0").item("ns:k"),
            *(f"{prefix}:{kind}:x" for kind in KEY_KINDS)]


def _matches(prefix: str, key: str) -> bool:
    return any(fnmatch.fnmatchcase(key, pattern[1:]) for pattern in key_patterns(prefix))


@pytest.mark.parametrize(("outer", "inner"), [("app", "app:tenant1"), ("app", "app.then"), ("a:b", "a:b:c:d")])
def test_nested_prefixes_match_none_of_each_others_keys(outer: str, inner: str) -> None:
    assert all(_matches(outer, key) for key in _keys(outer))
    assert all(_matches(inner, key) for key in _keys(inner))
    assert not any(_matches(outer, key) for key in _keys(inner))
    assert not any(_matches(inner, key) for key in _keys(outer))


def test_the_runtime_user_gets_no_command_that_lists_creates_or_flushes() -> None:
    granted = set(RUNTIME_COMMANDS)
    for command in ("ft.create", "ft.dropindex", "ft.alter", "ft._list", "ft.config", "scan", "keys", "randomkey",
                    "dbsize", "info", "script|flush", "script|kill", "script", "function", "eval", "client|list",
                    "client|kill", "client", "config", "flushall", "flushdb", "@all", "@connection", "@scripting"):
        assert command not in granted
    rules = runtime_rules("app")
    assert rules[:1] == ["resetkeys"] and "-@all" in rules and "resetchannels" in rules
    assert "~app:*" not in rules and "~app:*" not in admin_rules("app")


def test_a_prefix_a_deployment_may_not_have_has_no_rules() -> None:
    with pytest.raises(ConfigurationError):
        runtime_rules("app:full")
