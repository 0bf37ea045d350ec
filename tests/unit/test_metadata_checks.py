"""The metadata checks of a put, without Redis: the shortest metadata that is too deep, or that
hides a NaN, is refused however little JSON it makes (the walk is skipped only for JSON that
can be neither)."""

from __future__ import annotations

import enum
from typing import Any

import pytest
from langgraph.checkpoint.base import empty_checkpoint
from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer

from streamsaver.checkpoints.append import checkpoint_saved
from streamsaver.checkpoints.metadata import MAX_METADATA_DEPTH
from streamsaver.errors import InvalidInputError


def _lists(levels: int) -> Any:
    value: Any = []
    for _ in range(levels - 1):
        value = [value]
    return value


def _put(metadata: dict[str, Any]) -> None:
    checkpoint_saved(JsonPlusSerializer(), {"configurable": {"thread_id": "t"}}, empty_checkpoint(), metadata, {})


def test_the_tightest_too_deep_metadata_is_refused() -> None:
    # The metadata mapping is one level; lists nest in two bytes of JSON each, the least any value takes.
    with pytest.raises(InvalidInputError, match="nested deeper"):
        _put({"": _lists(MAX_METADATA_DEPTH)})


def test_the_tightest_metadata_as_deep_as_allowed_is_accepted() -> None:
    _put({"": _lists(MAX_METADATA_DEPTH - 1)})


@pytest.mark.parametrize("value", [float("nan"), float("inf"), -float("inf")])
def test_a_short_metadata_with_a_float_json_cannot_hold_is_refused(value: float) -> None:
    with pytest.raises(InvalidInputError, match="no JSON form"):
        _put({"x": value})


class _Float(enum.Enum):
    """orjson writes an Enum as its value: a NaN there is written as null, as a bare one is."""

    NAN = float("nan")
    INF = float("inf")


@pytest.mark.parametrize("value", [_Float.NAN, _Float.INF, {"nested": [_Float.NAN]}])
def test_a_float_json_cannot_hold_inside_an_enum_is_refused(value: Any) -> None:
    with pytest.raises(InvalidInputError, match="no JSON form"):
        _put({"x": value})
