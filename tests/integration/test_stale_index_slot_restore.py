"""`drop_stale_indexes` makes the slot it sets ``IMPORTING`` (to drop an index named for a slot
its primary gave away) stable again whatever happens: its connection killed while the drop waits
(``CLIENT PAUSE WRITE``, from the moment the slot is ``IMPORTING``, holds the drop; a node's client
has no retries, so they are spent at once), the slot is made ``STABLE`` on a new connection; when
even that is refused, `SlotLeftImportingError` names the command, and that command restores it."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest
import redis
from helpers import cluster_of_three
from redis.cluster import RedisCluster

from streamsaver import StreamSaver
from streamsaver.errors import SlotLeftImportingError
from streamsaver.ops import slot_window
from streamsaver.ops.stale_indexes import StaleIndex, drop_stale_indexes, stale_indexes
from streamsaver.server.cluster import EmbeddedCluster
from tests.integration.test_stale_indexes import _move_the_first_tag

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def cluster() -> Iterator[EmbeddedCluster]:
    with cluster_of_three() as made:  # slots move: a cluster of its own
        yield made


@pytest.fixture(scope="module")
def left_behind(cluster: EmbeddedCluster) -> StaleIndex:
    """A stale index named for a slot its primary gave away (dropped inside ``IMPORTING``)."""
    return _left_behind(cluster, "moved")


def _left_behind(cluster: EmbeddedCluster, prefix: str) -> StaleIndex:
    """Set up deployment `prefix`, move its first index tag's slot away, set it up again: the
    stale index that names the slot its primary gave away."""
    saver = StreamSaver(RedisCluster.from_url(cluster.url), prefix=prefix)  # type: ignore[arg-type]
    saver.setup()
    _move_the_first_tag(cluster, saver)
    StreamSaver(RedisCluster.from_url(cluster.url), prefix=prefix).setup()  # type: ignore[arg-type]
    return next(s for s in stale_indexes(RedisCluster.from_url(cluster.url), prefix) if s.named_elsewhere)


def _importing(admin: redis.Redis) -> bool:
    return b"-<-" in admin.execute_command("CLUSTER", "NODES")


def _indexes(admin: redis.Redis) -> set[str]:
    return {name.decode() for name in admin.execute_command("FT._LIST")}


def _held_drops(killer: redis.Redis) -> list[str]:
    """The ids of the connections whose drop (``FT.DROPINDEX`` or the script) the pause holds
    (blocked: flag ``b``; an idle connection whose last command was a drop is not one)."""
    clients = [dict(f.split("=", 1) for f in line.split(" ") if "=" in f)
               for line in killer.execute_command("CLIENT", "LIST").decode().splitlines()]
    return [c["id"] for c in clients if c.get("cmd", "").lower() in ("ft.dropindex", "eval") and "b" in c["flags"]]


def _kill_the_waiting_drop(port: int, before_kill: Callable[[], object]) -> None:
    """Kill the connection whose drop the pause holds, then lift the pause."""
    with redis.Redis(port=port) as killer:
        try:
            deadline = time.monotonic() + 30
            while not (held := _held_drops(killer)):
                assert time.monotonic() < deadline, "the drop never reached the server"
                time.sleep(0.01)  # polling the server's client list, not waiting a guessed time
            before_kill()
            killer.execute_command("CLIENT", "KILL", "ID", held[0])
        finally:
            killer.execute_command("CLIENT", "UNPAUSE")


def _drop_with_its_connection_killed(cluster: EmbeddedCluster, index: StaleIndex, monkeypatch: pytest.MonkeyPatch,
                                     before_kill: Callable[[], object] = lambda: None) -> BaseException:
    """Drop `index`, its connection killed while its ``FT.DROPINDEX`` waits (``CLIENT PAUSE WRITE``
    from the moment the slot is ``IMPORTING``: a pause from the start would hold ``SETSLOT`` too);
    what the drop raised."""
    port = int(index.node.rpartition(":")[2])
    killer = threading.Thread(target=_kill_the_waiting_drop, args=(port, before_kill))
    opened = slot_window._set_importing

    def then_hold_the_drop(node: Any, stale: StaleIndex) -> None:
        opened(node, stale)
        with redis.Redis(port=port) as pauser:
            pauser.execute_command("CLIENT", "PAUSE", 60_000, "WRITE")
        killer.start()

    try:
        with monkeypatch.context() as patched:
            patched.setattr(slot_window, "_set_importing", then_hold_the_drop)
            with pytest.raises(Exception) as raised:  # noqa: PT011 - the caller asserts which one
                drop_stale_indexes(RedisCluster.from_url(cluster.url), [index])
    finally:
        if killer.is_alive():
            killer.join()
    return raised.value


def test_a_lost_connection_leaves_the_slot_stable_and_the_drop_can_run_again(
        cluster: EmbeddedCluster, left_behind: StaleIndex, monkeypatch: pytest.MonkeyPatch) -> None:
    admin = redis.Redis(port=int(left_behind.node.rpartition(":")[2]))
    failed = _drop_with_its_connection_killed(cluster, left_behind, monkeypatch)
    assert isinstance(failed, redis.ConnectionError)
    assert not _importing(admin)  # made STABLE again on a new connection
    assert left_behind.name in _indexes(admin)  # the drop never ran

    assert drop_stale_indexes(RedisCluster.from_url(cluster.url), [left_behind]) == [left_behind.name]
    assert left_behind.name not in _indexes(admin) and not _importing(admin)
    admin.close()


def test_a_slot_that_cannot_be_made_stable_is_named_with_its_command(
        cluster: EmbeddedCluster, monkeypatch: pytest.MonkeyPatch) -> None:
    index = _left_behind(cluster, "again")
    admin = redis.Redis(port=int(index.node.rpartition(":")[2]))
    try:
        failed = _drop_with_its_connection_killed(
            cluster, index, monkeypatch, lambda: admin.execute_command("ACL", "SETUSER", "default", "-cluster|setslot"))
    finally:
        admin.execute_command("ACL", "SETUSER", "default", "+cluster|setslot")
    assert isinstance(failed, SlotLeftImportingError)
    chain, cause = [], failed.__context__
    while cause is not None:
        chain, cause = [*chain, cause], cause.__context__
    assert any(isinstance(c, redis.ConnectionError) for c in chain)  # the lost connection came first
    assert (failed.node, failed.slot) == (index.node, index.slot)
    assert f"CLUSTER SETSLOT {index.slot} STABLE" in str(failed) and index.node in str(failed)
    assert _importing(admin)

    admin.execute_command(*failed.command.split(" "))  # the operator's remedy, as the error spells it
    assert not _importing(admin)
    admin.close()


def test_an_interrupt_inside_the_window_leaves_the_slot_stable(
        cluster: EmbeddedCluster, monkeypatch: pytest.MonkeyPatch) -> None:
    # Ctrl-C (or any error that is not redis-py's) right after IMPORTING took effect: the slot
    # is the node's state and outlives the process, so it is made STABLE before the interrupt
    # goes on (it stayed IMPORTING: only RedisError was handled).
    index = _left_behind(cluster, "interrupted")
    admin = redis.Redis(port=int(index.node.rpartition(":")[2]))
    opened = slot_window._set_importing

    def then_interrupted(node: Any, stale: StaleIndex) -> None:
        opened(node, stale)
        assert _importing(admin)
        raise KeyboardInterrupt

    try:
        with monkeypatch.context() as patched:
            patched.setattr(slot_window, "_set_importing", then_interrupted)
            with pytest.raises(KeyboardInterrupt):
                drop_stale_indexes(RedisCluster.from_url(cluster.url), [index])
        assert not _importing(admin)
        assert index.name in _indexes(admin)  # the drop never ran
    finally:
        if _importing(admin):
            admin.execute_command("CLUSTER", "SETSLOT", index.slot, "STABLE")
        admin.close()
