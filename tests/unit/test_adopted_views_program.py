"""`inline_views.adopt`, driven with the replies a server gives: which views a saver that
declares no projections adopts, what it records, and when it is refused (the integration tests
in ``test_adopted_views.py`` run it against Redis; these cover the replies a test server is
hard to bring to: a full server, a refused read)."""

from __future__ import annotations

from typing import Any

import pytest
from redis.exceptions import ResponseError

from streamsaver.checkpoints import inline_views
from streamsaver.errors import InlineViewsError

OOM = ResponseError("OOM command not allowed when used memory > 'maxmemory'.")


def _run(read_view: str, *replies: Any) -> tuple[tuple[str, ...], bool, list[Any]]:
    """The views `adopt` returns, whether it recorded them on a new deployment, and what it sent."""
    program = inline_views.adopt("app", read_view)
    sent = [next(program)]
    try:
        for reply in replies:
            step = program.send(reply)
            sent.append(step)
    except StopIteration as done:
        views, fresh = done.value
        return views, fresh, sent
    raise AssertionError(f"adopt wants more replies after {sent}")


def test_recorded_views_holding_the_read_view_are_adopted_in_one_round_trip() -> None:
    views, fresh, sent = _run("shallow", [[b"full,shallow", b"16"]])
    assert (views, fresh) == (("full", "shallow"), False)
    assert sent == [[["HMGET", "app:meta", "views", "partitions"]]]


def test_a_new_deployment_records_the_read_view() -> None:
    views, fresh, sent = _run("full", [[None, None]], [1, b"full"])
    assert (views, fresh) == (("full",), True)
    assert sent[1] == [["HSETNX", "app:meta", "views", "full"], ["HGET", "app:meta", "views"]]


def test_a_deployment_without_a_record_but_with_settings_records_both_views() -> None:
    views, fresh, sent = _run("full", [[None, b"16"]], [1, b"full,shallow"])
    assert (views, fresh) == (("full", "shallow"), False)
    assert sent[1][0] == ["HSETNX", "app:meta", "views", "full,shallow"]


def test_another_saver_recording_first_wins() -> None:
    views, fresh, _ = _run("full", [[None, None]], [0, b"full,shallow"])
    assert (views, fresh) == (("full", "shallow"), False)


def test_a_full_server_that_refuses_the_record_leaves_the_saver_its_choice() -> None:
    views, fresh, _ = _run("shallow", [[None, None]], [OOM, None])
    assert (views, fresh) == (("shallow",), False)


def test_a_refused_read_is_a_named_error() -> None:
    with pytest.raises(InlineViewsError, match="cannot read the inline views"):
        _run("full", [ResponseError("NOPERM this user has no permissions")])


def test_a_reader_of_a_view_only_a_worker_keeps_is_let_in() -> None:
    groups = [{"name": b"audit"}, {"name": b"projector:shallow"}]
    views, _, sent = _run("shallow", [[b"full", b"16"]], [groups])
    assert views == ("full",)
    assert sent[1] == [["XINFO", "GROUPS", "app:feed:{p0}"]]


@pytest.mark.parametrize("groups", [ResponseError("ERR no such key"), [], [{"name": b"projector:full"}]])
def test_a_reader_of_a_view_nobody_keeps_is_refused(groups: Any) -> None:
    with pytest.raises(InlineViewsError, match="does not keep"):
        _run("shallow", [[b"full", b"16"]], [groups])
