"""The item cache on Redis Cluster, without Redis: it is live only while the listener of every
primary of the slot map is subscribed (a listener of an older slot map changes nothing), holds
a reply only from a tracked primary and only of an item that exists, and asks for the slot map
at once when a reply came from a primary it does not track."""

from __future__ import annotations

from streamsaver.store.item_cache import ItemCache
from streamsaver.store.tracked_nodes import Primary, TrackedNodes, slot_map_of

A, B, C = b"a" * 40, b"b" * 40, b"c" * 40


def _gate() -> tuple[ItemCache, TrackedNodes]:
    cache = ItemCache(10, per_node=True)
    return cache, TrackedNodes(cache)


def test_live_once_every_primary_is_subscribed_and_dark_when_any_is_lost() -> None:
    cache, nodes = _gate()
    generation = nodes.expect([A, B])
    nodes.live(A, generation)
    assert not cache.live
    nodes.live(B, generation)
    assert cache.live and cache.asks_node
    reading = cache.reading()
    assert cache.offer(b"k", b"{}", -1, reading, A) and len(cache) == 1
    nodes.dark(B, generation)
    assert not cache.live and len(cache) == 0
    nodes.live(B, generation)
    assert cache.live and not cache.offer(b"k", b"{}", -1, reading, A)  # read before it went live again


def test_a_listener_of_an_older_slot_map_changes_nothing() -> None:
    cache, nodes = _gate()
    old = nodes.expect([A])
    stale_sink = nodes.sink(A)
    new = nodes.expect([A, B])
    stale_sink.go_live()
    nodes.live(A, new)
    assert not cache.live  # B is not subscribed yet, whatever the old listener of A says
    nodes.live(B, new)
    assert cache.live
    nodes.dark(A, old)
    stale_sink.go_dark()
    assert cache.live
    stale_sink.invalidate([b"k"])  # its invalidations still evict
    assert cache.sequence > 0


def test_no_primaries_is_never_live() -> None:
    cache, nodes = _gate()
    generation = nodes.expect([])
    nodes.live(A, generation)
    assert not cache.live


def test_a_reply_is_held_only_from_a_tracked_primary_and_only_of_an_item() -> None:
    cache, nodes = _gate()
    asked: list[bool] = []
    cache.on_untracked = lambda: asked.append(True)
    generation = nodes.expect([A, B])
    nodes.live(A, generation)
    nodes.live(B, generation)
    reading = cache.reading()
    assert not cache.offer(b"k", b"{}", -1, reading, C) and asked == [True]
    assert not cache.offer(b"k", b"{}", -1, reading, None)
    assert not cache.offer(b"k", None, -2, reading, A)  # a missing item: nothing to invalidate if its slot moves
    assert asked == [True, True]
    assert cache.offer(b"k", b"{}", -1, reading, B) and cache.lookup(b"k") is not None


def test_a_single_server_cache_needs_no_node() -> None:
    cache = ItemCache(10)
    cache.go_live()
    assert not cache.asks_node
    assert cache.offer(b"k", None, -2, cache.reading())


def _reply(*rows: tuple[int, int, bytes, int]) -> list[list[object]]:
    return [[start, end, [b"127.0.0.1", port, node, []], [b"127.0.0.1", port + 100, b"r" * 40, []]]
            for start, end, node, port in rows]


def test_two_slot_maps_are_equal_when_no_slot_changed_owner() -> None:
    first = slot_map_of(_reply((0, 99, A, 7000), (100, 16383, B, 7001)))
    assert first == slot_map_of(_reply((100, 16383, B, 7001), (0, 99, A, 7000)))
    assert first != slot_map_of(_reply((0, 98, A, 7000), (99, 16383, B, 7001)))
    assert first != slot_map_of(_reply((0, 99, C, 7000), (100, 16383, B, 7001)))  # another node at A's address
    assert first[0][2] == Primary(A, "127.0.0.1", 7000)
