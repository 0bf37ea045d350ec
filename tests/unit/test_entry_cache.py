"""The read cache's policy (`streamsaver.checkpoints.entry_cache`), without Redis: what a read
names to the server, what a reply leaves held, and the bound."""

from __future__ import annotations

from streamsaver.checkpoints.entry_cache import SETTLE_AFTER, Claim, EntryCache, links_of
from streamsaver.log import deltas
from streamsaver.log.codec import pack

LOG = "p:log:{p1}:t"
INC = b"inc-1"


def channel(name: bytes, type_: bytes, data: bytes) -> bytes:
    return pack([name, b'"1"', type_, data])


def delta_of(link: bytes) -> bytes:
    type_, data = deltas.encode(link.decode(), b'"1"', 10, 2, "msgpack", b"\x01")
    return channel(b"messages", type_.encode(), data)


def known(cache: EntryCache, incarnation: bytes = INC, log: str = LOG) -> None:
    """Let `cache` learn the thread's incarnation, as a read's reply does."""
    cache.absorb(Claim(log, b"", [], {}), incarnation, [])


def flat(entry: dict[bytes, bytes]) -> list[bytes]:
    return [x for pair in entry.items() for x in pair]


def test_an_append_is_held_under_the_incarnation_its_reply_named_before_any_read() -> None:
    cache = EntryCache(1 << 20)
    cache.wrote(LOG, b"1-0", [b"body", b"x"], INC)
    assert cache.claim(LOG) == Claim(LOG, INC, [b"1-0"], {b"1-0": {b"body": b"x"}})
    cache.wrote(LOG, b"2-0", [b"body", b"y"], b"")  # the server named none: not held
    assert cache.claim(LOG).ids == [b"1-0"]


def test_an_append_reply_names_the_entry_id_and_the_incarnation() -> None:
    cache = EntryCache(1 << 20)
    command = ["EVALSHA", "sha", "2", LOG, "p:pos:{p1}:t", "4", "body", b"x", "cid", "c1"]
    cache.appended(command, [b"1-0", b"inc-1"])
    cache.appended(command, None)  # a deletion that logged nothing
    cache.appended(command, [b"2-0", b""])  # a log erased, or without an incarnation
    assert cache.claim(LOG) == Claim(LOG, INC, [b"1-0"], {b"1-0": {b"body": b"x", b"cid": b"c1"}})


def test_a_read_names_the_entries_held_under_the_incarnation_it_learnt() -> None:
    cache = EntryCache(1 << 20)
    known(cache)
    cache.wrote(LOG, b"1-0", [b"body", b"one"], INC)
    cache.wrote(LOG, b"2-0", [b"body", b"two"], INC)
    claim = cache.claim(LOG)
    assert claim.incarnation == b"inc-1"
    assert claim.ids == [b"2-0", b"1-0"]
    assert claim.entries[b"1-0"] == {b"body": b"one"}


def test_a_reply_of_another_incarnation_drops_what_was_held_and_holds_what_it_shipped() -> None:
    cache = EntryCache(1 << 20)
    known(cache)
    cache.wrote(LOG, b"1-0", [b"body", b"old"], INC)
    claim = cache.claim(LOG)
    entries = cache.absorb(claim, b"inc-2", [b"1-0", [b"body", b"new"]])
    assert entries == {b"1-0": {b"body": b"new"}}
    assert cache.incarnation(LOG) == b"inc-2"
    assert cache.claim(LOG).entries == {b"1-0": {b"body": b"new"}}


def test_an_append_of_another_incarnation_drops_what_was_held_of_the_thread() -> None:
    cache = EntryCache(1 << 20)
    known(cache)
    cache.wrote(LOG, b"1-0", [b"body", b"old life"], INC)
    cache.wrote(LOG, b"1-0", [b"body", b"new life"], b"inc-2")  # the thread was made anew
    assert cache.claim(LOG) == Claim(LOG, b"inc-2", [b"1-0"], {b"1-0": {b"body": b"new life"}})
    cache.absorb(cache.claim(LOG), INC, [])  # a read sent before learnt the old one: it wins, empty
    assert cache.claim(LOG) == Claim(LOG, INC, [], {})


def test_an_append_noted_under_an_incarnation_gone_before_it_is_taken_in_is_not_held() -> None:
    cache = EntryCache(1 << 20)
    known(cache)
    cache.wrote(LOG, b"1-0", [b"body", b"x"], INC)  # noted, not taken in yet
    cache.forget(LOG)
    known(cache, b"inc-2")  # the thread made anew: the next read takes the note in
    assert cache.claim(LOG).ids == [] and cache.size == 0


def test_a_writer_that_never_reads_takes_its_appends_in_every_settle_after_notes() -> None:
    cache = EntryCache(1 << 20)
    known(cache)
    for n in range(SETTLE_AFTER - 1):
        cache.wrote(LOG, b"%d-0" % n, [b"body", b"x"], INC)
    assert cache.size == 0  # a put only notes its append
    cache.wrote(LOG, b"%d-0" % SETTLE_AFTER, [b"body", b"x"], INC)
    assert cache.size > 0
    assert len(cache.claim(LOG).ids) == min(SETTLE_AFTER, cache.claim_limit)


def test_a_reply_of_the_same_incarnation_reads_the_claimed_entries_with_those_shipped() -> None:
    cache = EntryCache(1 << 20)
    known(cache)
    cache.wrote(LOG, b"1-0", [b"body", b"one"], INC)
    claim = cache.claim(LOG)
    cache.forget(LOG)  # evicted meanwhile: the claim still holds what it named
    entries = cache.absorb(claim, b"inc-1", [b"2-0", [b"body", b"two"]])
    assert entries == {b"1-0": {b"body": b"one"}, b"2-0": {b"body": b"two"}}


def test_a_thread_without_an_incarnation_holds_nothing() -> None:
    cache = EntryCache(1 << 20)
    known(cache)
    entries = cache.absorb(cache.claim(LOG), b"", [b"1-0", [b"body", b"x"]])
    assert entries == {b"1-0": {b"body": b"x"}}
    assert cache.incarnation(LOG) is None and cache.size == 0


def test_a_delta_is_named_only_with_the_entry_it_links_to() -> None:
    cache = EntryCache(1 << 20, claim_limit=1)
    known(cache)
    base = {b"c:messages": channel(b"messages", b"msgpack", b"\x91\x01")}
    cache.wrote(LOG, b"1-0", flat(base), INC)
    cache.wrote(LOG, b"2-0", flat({b"c:messages": delta_of(b"1-0")}), INC)
    assert links_of({b"c:messages": delta_of(b"1-0")}) == (b"1-0",)
    assert sorted(cache.claim(LOG).ids) == [b"1-0", b"2-0"]
    cache.wrote(LOG, b"3-0", flat({b"c:messages": delta_of(b"0-1")}), INC)  # its link is not held
    assert b"3-0" not in cache.claim(LOG).ids


def test_an_entry_whose_values_cannot_be_read_is_never_named() -> None:
    cache = EntryCache(1 << 20)
    known(cache)
    cache.wrote(LOG, b"1-0", [b"c:x", b"\xff"], INC)
    assert cache.claim(LOG).ids == []


def test_the_least_recently_used_entries_go_first_past_the_bound() -> None:
    cache, other = EntryCache(2000), "p:log:{p1}:u"  # room for four of these entries
    known(cache)
    known(cache, log=other)
    for log in (LOG, other):
        for n in range(2):
            cache.wrote(log, b"%d-0" % n, [b"body", b"x" * 200], INC)
    assert cache.claim(LOG).ids == [b"1-0", b"0-0"]  # a read makes them the most recent
    cache.wrote(other, b"2-0", [b"body", b"x" * 200], INC)
    assert cache.size <= 2000
    assert cache.claim(LOG).ids == [b"1-0", b"0-0"]
    assert cache.claim(other).ids == [b"2-0", b"1-0"]


def test_an_entry_larger_than_a_quarter_of_the_bound_is_not_held() -> None:
    cache = EntryCache(4000)
    known(cache)
    cache.wrote(LOG, b"1-0", [b"body", b"x" * 1200], INC)
    assert cache.claim(LOG).ids == []


def test_a_read_names_at_most_the_claim_limit_of_newest_entries() -> None:
    cache = EntryCache(1 << 20, claim_limit=3)
    known(cache)
    for n in range(10):
        cache.wrote(LOG, b"%d-0" % n, [b"body", b"x"], INC)
    assert cache.claim(LOG).ids == [b"9-0", b"8-0", b"7-0"]


def checkpoint_fields(kind: str, checkpoint_id: str, body: bytes) -> list[str | bytes]:
    """An append's flat fields as the saver sends them (`streamsaver.log.stored`'s order)."""
    return ["type", kind, "v", "1", "thread", "t", "ns", "", "cid", checkpoint_id, "body", body]


def test_a_read_by_id_names_the_entries_of_that_checkpoint_beyond_the_newest() -> None:
    cache = EntryCache(1 << 20, claim_limit=2)
    known(cache)
    for n in range(1, 5):
        cache.wrote(LOG, b"%d-0" % n, checkpoint_fields("CheckpointSaved", f"c{n}", b"b%d" % n), INC)
        cache.wrote(LOG, b"%d-1" % n, checkpoint_fields("WritesSaved", f"c{n}", b"w%d" % n), INC)
    assert cache.claim(LOG).ids == [b"4-1", b"4-0"]
    by_id = cache.claim(LOG, b"c2")
    assert by_id.ids == [b"4-1", b"4-0", b"2-0", b"2-1"]
    assert by_id.entries[b"2-0"][b"body"] == b"b2"
    assert cache.claim(LOG, b"c9").ids == [b"4-1", b"4-0"]  # a checkpoint it holds nothing of
    # a reply's entries are indexed too
    shipped = [b"5-0", [b"type", b"CheckpointSaved", b"cid", b"c5", b"body", b"b5"]]
    cache.absorb(cache.claim(LOG), INC, shipped)
    cache.wrote(LOG, b"6-0", checkpoint_fields("CheckpointSaved", "c6", b"b6"), INC)
    cache.wrote(LOG, b"6-1", checkpoint_fields("WritesSaved", "c6", b"w6"), INC)
    assert b"5-0" not in cache.claim(LOG).ids
    assert b"5-0" in cache.claim(LOG, b"c5").ids


def test_a_read_names_the_newest_entry_of_each_channel_however_old() -> None:
    cache = EntryCache(1 << 20, claim_limit=2)
    value = channel(b"x", b"msgpack", b"\x01")
    cache.wrote(LOG, b"1-0", [*checkpoint_fields("CheckpointSaved", "c1", b"b1"), "c:context", value], INC)
    for n in range(2, 6):
        cache.wrote(LOG, b"%d-0" % n, [*checkpoint_fields("CheckpointSaved", f"c{n}", b"b"), "c:turns", value], INC)
    # shipped by a read: an older value of `turns` than the one held names nothing new
    cache.absorb(cache.claim(LOG), INC, [b"0-5", [b"type", b"CheckpointSaved", b"c:turns", value]])
    assert cache.claim(LOG).ids == [b"0-5", b"5-0", b"1-0"]  # the newest two, and context's entry
    assert cache.claim(LOG, limit=3).ids == [b"0-5", b"5-0", b"4-0", b"1-0"]  # a page's: more of the newest


def test_a_first_page_is_guessed_from_the_newest_checkpoint_and_its_held_parents() -> None:
    cache = EntryCache(1 << 20)
    known(cache)

    def logged(entry_id: bytes, checkpoint_id: str, parent: str, ns: str = "") -> None:
        fields = ["type", "CheckpointSaved", "v", "1", "thread", "t", "ns", ns, "cid", checkpoint_id, "parent", parent]
        cache.wrote(LOG, entry_id, fields, INC)

    logged(b"1-0", "c1", "")
    logged(b"3-0", "c3", "c2")  # c2 is not held: the chain stops there
    logged(b"4-0", "c4", "c3")
    logged(b"5-0", "s5", "", ns="sub")
    shipped = [b"2-0", [b"type", b"CheckpointSaved", b"ns", b"", b"cid", b"c9", b"parent", b"c4"]]
    cache.absorb(cache.claim(LOG), INC, shipped)  # held last, yet the newest in log order is 5-0
    entries, chain = cache.recent(LOG, b"", 10)
    assert chain == [b"4-0", b"3-0"]  # 2-0 came last but is older in the log
    assert set(entries) == {b"4-0", b"3-0"}
    assert cache.recent(LOG, b"", 1)[1] == [b"4-0"]
    assert cache.recent(LOG, b"sub", 10)[1] == [b"5-0"]
    assert cache.recent("p:log:{p1}:other", b"", 10) == ({}, [])
