"""``inspect --store --limit N`` reads the store partition logs from their ends and stops once it
has the last N rows: the same rows the whole history ends with, whatever the namespace, key or
partition asked, across pages and partitions."""

from __future__ import annotations

import json
from typing import Any

import pytest
import redis
from cli_harness import run
from langgraph.store.base import PutOp
from store_adapter import TripCounter, counting_connections

from streamsaver import StreamStore
from streamsaver.errors import InvalidInputError
from streamsaver.ops import store_history
from streamsaver.ops.store_history import store_history as history
from streamsaver.ops.store_history import store_logs

USERS = [f"user{n}" for n in range(6)]  # first labels over several partitions


@pytest.fixture
def filled(client: Any, prefix: str, monkeypatch: pytest.MonkeyPatch) -> StreamStore:
    """A store whose logs span many pages of three entries (and partitions with none)."""
    monkeypatch.setattr(store_history, "PAGE", 3)
    store = StreamStore(client, prefix=prefix, partitions=8)
    store.setup()
    for round_ in range(5):
        store.batch([PutOp((user, "facts"), f"k{(round_ + n) % 3}", {"round": round_}) for n, user in enumerate(USERS)])
        store.delete((USERS[round_], "facts"), f"k{round_ % 3}")
    return store


@pytest.mark.parametrize("where", [{}, {"namespace": ("user2",)}, {"namespace": ("user2", "facts"), "key": "k1"},
                                   {"partition": 0}])
def test_the_last_n_rows_are_those_the_whole_history_ends_with(
        filled: StreamStore, client: Any, prefix: str, where: dict[str, Any]) -> None:
    if "partition" in where:
        where = {"partition": int(filled.core.keyspace.store_partition("user3"))}
    whole = history(client, prefix, **where)
    assert whole
    for limit in sorted({1, 2, 3, 4, 7, len(whole) - 1, len(whole), len(whole) + 5} - {0}):
        assert history(client, prefix, limit=limit, **where) == whole[-limit:], limit


def test_a_limited_history_stops_reading_once_it_has_its_rows(
        filled: StreamStore, client: Any, redis_url: str, prefix: str) -> None:
    counter = TripCounter()
    counting = redis.Redis.from_url(redis_url, connection_class=counting_connections(counter)[0])
    counting.ping()  # the connection's handshake
    counter.reset()
    store_logs(counting, prefix)
    locating = counter.trips  # what finding the logs costs (the deployment's settings)
    lengths = [client.xlen(log) for log in store_logs(client, prefix)]
    while lengths and not lengths[-1]:
        lengths.pop()
    empty_at_the_end = 8 - len(lengths)  # partitions after the last one holding entries: one read each
    assert lengths[-1] >= 3
    counter.reset()
    history(counting, prefix, limit=3)
    assert counter.trips == locating + empty_at_the_end + 1  # one page of the last log holding entries
    counter.reset()
    history(counting, prefix)
    assert counter.trips > locating + 8  # every log, many pages


def test_inspect_limit_prints_the_rows_it_printed_before(
        filled: StreamStore, redis_url: str, prefix: str, capsys: pytest.CaptureFixture[str]) -> None:
    base = ["inspect", "--url", redis_url, "--prefix", prefix]
    for where in (["--store"], ["--namespace", "user4"]):
        code, out, _ = run(capsys, *base, *where, "--json")
        whole = json.loads(out)
        code, out, _ = run(capsys, *base, *where, "--json", "--limit", "4")
        assert code == 0 and json.loads(out) == whole[-4:]
        code, out, _ = run(capsys, *base, *where, "--limit", "4")
        entries = [line.split()[-2] for line in out.splitlines()[2:-1]]  # the log entry column
        assert code == 0 and entries == [row["entry_id"] for row in whole[-4:]]
        assert out.splitlines()[-1].startswith("the last 4 store events under")
    code, out, _ = run(capsys, *base, "--namespace", "user4", "--limit", "1000")
    assert code == 0 and out.splitlines()[-1].startswith(f"{len(whole)} store events under user4")


def test_a_limit_below_one_is_refused(filled: StreamStore, client: Any, prefix: str) -> None:
    with pytest.raises(InvalidInputError, match="limit"):
        history(client, prefix, limit=0)
