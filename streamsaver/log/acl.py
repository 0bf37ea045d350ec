"""The ACL rules of a deployment's two Redis users, without I/O: an **admin** (deploy) user that
sets the deployment up, and a **runtime** user that the savers, the store and the subscribers
run as (docs/security.md says what each may do, and what a shared server cannot isolate).

* Keys: one pattern per key family, ``~P:<kind>:*`` for each word of `KEY_KINDS` (and the
  exact keys ``P:meta`` and ``P:probe``), never ``~P:*``: a deployment ``app:tenant1`` keeps
  its keys under ``app:tenant1:<kind>:...``, which no pattern of ``app`` matches, since a
  prefix with a key kind after its first word is refused (`streamsaver.log.keys.Keyspace`).
  RediSearch treats an index name as a key (``FT.SEARCH``, ``FT.AGGREGATE``, ``FT.INFO``), and
  the deployment's index names are ``P:<view>:idx:...``, so the patterns confine searches too.
* Runtime commands: exactly those the savers, the store and the subscribers send, each naming
  its keys, plus harmless connection commands. Not granted: ``FT.CREATE`` (RediSearch does not
  check an index's ``PREFIX`` against the user's key patterns: an index named in the user's
  pattern over another tenant's keys would read them), ``FT.DROPINDEX``, ``FT.ALTER``,
  ``FT._LIST``, ``SCAN``, ``KEYS``, ``RANDOMKEY``, ``DBSIZE``, ``INFO``, ``SCRIPT FLUSH`` /
  ``KILL``, ``FUNCTION``, ``EVAL``, ``CLIENT LIST`` / ``KILL``, ``CONFIG``, and no channel.
* Admin: the runtime's keys and the operator tools' scratch keys (``P:shadow:*``,
  ``P:verify.*``), every command but Redis's ``@dangerous`` ones, and ``INFO``. It can create
  an index over any prefix, so it is the operator's user, never the tenant's.

``streamsaver acl --prefix P`` prints the ``ACL SETUSER`` lines; tests/integration/
test_tenant_isolation.py runs every runtime command from one tenant against another's data.
"""

from __future__ import annotations

from streamsaver.log.keys import KEY_KINDS, Keyspace

__all__ = ["RUNTIME_COMMANDS", "admin_rules", "key_patterns", "runtime_rules", "setuser_lines"]

RUNTIME_COMMANDS: tuple[str, ...] = (
    # keys: strings, hashes, sets, sorted sets, expiry
    "get", "set", "del", "exists", "type", "rename",
    "hget", "hset", "hsetnx", "hdel", "hmget", "hgetall", "hlen", "hincrby",
    "sadd", "srem", "smembers",
    "zadd", "zrange", "zrem", "zremrangebyscore", "zlexcount",
    "pexpire", "pexpireat", "pexpiretime", "persist", "pttl",
    # streams: logs, feeds, consumer groups
    "xadd", "xrange", "xrevrange", "xlen", "xdel", "xtrim", "xread", "xreadgroup", "xack", "xautoclaim",
    "xpending", "xgroup|create", "xgroup|createconsumer", "xgroup|delconsumer", "xinfo|consumers",
    "xinfo|groups", "xinfo|stream",
    # modules: the index name is the key RediSearch checks
    "json.get", "json.set", "json.type", "ft.search", "ft.aggregate", "ft.info",
    # scripts run with the caller's rights (every key and command inside is checked)
    "evalsha", "script|load",
    # a transaction's commands are checked one by one (the agent audit's MULTI)
    "multi", "exec", "discard",
    # no keys, nothing about other users
    "ping", "hello", "auth", "select", "client|setinfo", "client|setname", "client|getname", "time", "wait",
    "waitaof", "command", "cluster|slots", "cluster|shards", "readonly", "asking",
)
"""The commands the runtime user may send (subcommands as ``command|sub``)."""


def key_patterns(prefix: str) -> list[str]:
    """The ``~pattern`` rules that cover every key and index name of deployment `prefix`, and
    no key of another deployment, nested (``app:tenant1`` beside ``app``) or not.

    Raises:
        ConfigurationError: `prefix` is no valid deployment prefix (`Keyspace`).
    """
    keyspace = Keyspace(prefix)
    return [f"~{keyspace.meta}", f"~{keyspace.probe}", *(f"~{prefix}:{kind}:*" for kind in sorted(KEY_KINDS))]


def runtime_rules(prefix: str) -> list[str]:
    """The ACL rules (after ``ACL SETUSER name on >password``) of the runtime user of `prefix`.

    Raises:
        ConfigurationError: see `key_patterns`.
    """
    return ["resetkeys", *key_patterns(prefix), "resetchannels", "-@all", *(f"+{c}" for c in RUNTIME_COMMANDS)]


def admin_rules(prefix: str) -> list[str]:
    """The ACL rules of the admin (deploy) user of `prefix`: `setup()`, ``streamsaver setup``
    and the operator tools (replay, verify, export, import, worker, doctor).

    Raises:
        ConfigurationError: see `key_patterns`.
    """
    # The operator tools' scratch keys: a shadow rebuild's (P:shadow:...) and verify's (P:verify.<hex>:...).
    scratch = [f"~{prefix}:shadow:*", f"~{prefix}:verify.*"]
    return ["resetkeys", *key_patterns(prefix), *scratch, "resetchannels", "+@all", "-@dangerous", "+info"]


def setuser_lines(
    prefix: str, runtime_user: str = "streamsaver", admin_user: str = "streamsaver-admin",
    password: str = "PASSWORD",
) -> list[str]:
    """The two ``ACL SETUSER`` lines, admin first, with `password` in both (``>`` sets it).

    Raises:
        ConfigurationError: see `key_patterns`.
    """
    return [
        " ".join(["ACL", "SETUSER", admin_user, "on", f">{password}", *admin_rules(prefix)]),
        " ".join(["ACL", "SETUSER", runtime_user, "on", f">{password}", *runtime_rules(prefix)]),
    ]
