"""The listeners of one cache (and a cluster's supervisor) share an `Outage`: one warning per
outage however many threads fail at once (a cluster's runtime ACL user is refused by every
primary at the same moment), and the outage lasts until none of them is failing."""

import threading

from streamsaver.memory.invalidations import Outage


def test_threads_failing_together_claim_one_warning() -> None:
    outage, claimers = Outage(), 16
    start, claims = threading.Barrier(claimers), []

    def fail() -> None:
        member = object()
        start.wait()
        claims.append(outage.claim_warning(member))

    threads = [threading.Thread(target=fail) for _ in range(claimers)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert claims.count(True) == 1 and len(claims) == claimers


def test_the_next_outage_warns_again_once_the_last_one_ended() -> None:
    outage, listener = Outage(), object()
    assert [outage.claim_warning(listener), outage.claim_warning(listener)] == [True, False]
    outage.end(listener)
    assert [outage.claim_warning(listener), outage.claim_warning(listener)] == [True, False]


def test_one_member_back_does_not_end_the_outage_of_another_still_failing() -> None:
    outage, back, down = Outage(), object(), object()
    assert [outage.claim_warning(back), outage.claim_warning(down)] == [True, False]
    outage.end(back)
    assert outage.claim_warning(down) is False  # still the same outage: no second warning
    outage.end(down)
    assert outage.claim_warning(back) is True  # a new one


def test_a_member_that_was_never_failing_ends_nothing() -> None:
    outage, supervisor, listener = Outage(), object(), object()
    assert outage.claim_warning(listener) is True
    outage.end(supervisor)  # the supervisor read the slot map: the listener is still down
    assert outage.claim_warning(listener) is False
