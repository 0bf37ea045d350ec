"""The listeners of one cache share an `Outage`: one warning per outage however many threads fail at
once (a cluster's runtime ACL user is refused by every primary at the same moment)."""

import threading

from streamsaver.memory.invalidations import Outage


def test_threads_failing_together_claim_one_warning() -> None:
    outage, claimers = Outage(), 16
    start, claims = threading.Barrier(claimers), []

    def fail() -> None:
        start.wait()
        claims.append(outage.claim_warning())

    threads = [threading.Thread(target=fail) for _ in range(claimers)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert claims.count(True) == 1 and len(claims) == claimers


def test_the_next_outage_warns_again_once_the_last_one_ended() -> None:
    outage = Outage()
    assert [outage.claim_warning(), outage.claim_warning()] == [True, False]
    outage.end()
    assert [outage.claim_warning(), outage.claim_warning()] == [True, False]
