"""The store's item cache without Redis: what it answers, when a reply may enter it (never after
an invalidation newer than the read), and the deadline it keeps for items with a TTL."""

from __future__ import annotations

from streamsaver.store.item_cache import ItemCache


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def live_cache(capacity: int = 10) -> tuple[ItemCache, Clock]:
    clock = Clock()
    cache = ItemCache(capacity, clock)
    cache.go_live()
    return cache, clock


def test_a_reply_is_held_and_answers_until_invalidated() -> None:
    cache, _ = live_cache()
    assert cache.offer(b"k", b"{}", -1, cache.reading())
    held = cache.lookup(b"k")
    assert held is not None and held.document == b"{}" and held.deadline is None
    cache.invalidate([b"k"])
    assert cache.lookup(b"k") is None and (cache.hits, cache.misses) == (1, 1)


def test_a_missing_item_is_held_as_none() -> None:
    cache, _ = live_cache()
    assert cache.offer(b"k", None, -2, cache.reading())
    held = cache.lookup(b"k")
    assert held is not None and held.document is None


def test_a_reply_read_before_an_invalidation_of_its_key_is_refused() -> None:
    cache, _ = live_cache()
    reading = cache.reading()
    cache.invalidate([b"other"])
    assert cache.offer(b"k", b"{}", -1, reading)
    reading = cache.reading()
    cache.invalidate([b"k"])
    assert not cache.offer(b"k", b"old", -1, reading) and not cache.holds(b"k")
    assert cache.offer(b"k", b"new", -1, cache.reading())


def test_a_flush_or_a_lost_connection_refuses_every_read_in_flight() -> None:
    cache, _ = live_cache()
    reading = cache.reading()
    cache.offer(b"a", b"{}", -1, cache.reading())
    cache.flush()
    assert not cache.offer(b"k", b"{}", -1, reading) and len(cache) == 0
    reading = cache.reading()
    cache.offer(b"a", b"{}", -1, reading)
    cache.go_dark()
    assert len(cache) == 0 and cache.reading() is None and not cache.offer(b"k", b"{}", -1, reading)
    cache.go_live()
    assert not cache.offer(b"k", b"{}", -1, reading)  # read before the subscription was back


def test_forgetting_old_invalidations_refuses_the_reads_in_flight() -> None:
    cache, _ = live_cache()
    reading = cache.reading()
    cache.invalidate(str(n).encode() for n in range(5000))
    assert not cache.offer(b"k", b"{}", -1, reading)


def test_an_item_with_a_ttl_is_not_served_past_its_deadline_nor_to_a_refreshing_get() -> None:
    cache, clock = live_cache()
    reading = cache.reading()
    clock.now += 0.5  # the reply came half a second after the read was sent
    assert cache.offer(b"k", b"{}", 2_000, reading)
    held = cache.lookup(b"k")
    assert held is not None and held.deadline == 100.0 + 1.999  # counted from the send
    assert cache.lookup(b"k", refresh=True) is None
    clock.now = 101.998
    assert cache.lookup(b"k") is not None
    clock.now = 101.999
    assert cache.lookup(b"k") is None
    assert not cache.offer(b"j", b"{}", 1, cache.reading())  # expires within a millisecond


def test_it_holds_the_most_recently_used() -> None:
    cache, _ = live_cache(capacity=2)
    for key in (b"a", b"b"):
        cache.offer(key, b"{}", -1, cache.reading())
    cache.lookup(b"a")
    cache.offer(b"c", b"{}", -1, cache.reading())
    assert [cache.holds(key) for key in (b"a", b"b", b"c")] == [True, False, True]


def test_nothing_is_held_before_it_goes_live() -> None:
    cache = ItemCache(10)
    assert cache.reading() is None and not cache.offer(b"k", b"{}", -1, None) and not cache.live
