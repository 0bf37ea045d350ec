"""`SafeSerializer` (streamsaver/log/serde.py): what it rebuilds and what it never runs."""

from __future__ import annotations

import dataclasses
import enum
import sys
from typing import Any

import ormsgpack
import pydantic
from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer

from streamsaver import SafeSerializer


class Colour(enum.Enum):
    RED = "red"


@dataclasses.dataclass
class Point:
    x: int
    y: int


class Shape(pydantic.BaseModel):
    colour: Colour
    corners: list[Point]


class Plain:
    """A class that is neither a pydantic model, a dataclass nor an Enum."""

    def __init__(self, *args: Any) -> None:
        raise AssertionError("a plain class is never constructed")


def _stored(code: int, *parts: Any) -> tuple[str, bytes]:
    return "msgpack", ormsgpack.packb([ormsgpack.Ext(code, ormsgpack.packb(parts))])


def test_the_applications_data_classes_round_trip() -> None:
    value = {"shape": Shape(colour=Colour.RED, corners=[Point(1, 2)]), "when": Colour.RED, "at": Point(3, 4)}
    serde = SafeSerializer()
    assert serde.loads_typed(JsonPlusSerializer().dumps_typed(value)) == value


def test_a_function_or_plain_class_named_reads_as_its_stored_arguments() -> None:
    serde = SafeSerializer()
    assert serde.loads_typed(_stored(0, "os", "system", "touch /tmp/never")) == ["touch /tmp/never"]
    assert serde.loads_typed(_stored(1, __name__, "Plain", [1, 2])) == [[1, 2]]


def test_a_module_not_loaded_is_never_imported() -> None:
    assert "antigravity" not in sys.modules
    assert SafeSerializer().loads_typed(_stored(0, "antigravity", "geohash", 1)) == [1]
    assert "antigravity" not in sys.modules


def test_an_allowlist_from_compile_keeps_the_data_class_rule() -> None:
    serde = SafeSerializer().with_msgpack_allowlist([("collections", "OrderedDict")])
    assert isinstance(serde, SafeSerializer)
    assert serde.loads_typed(JsonPlusSerializer().dumps_typed([Point(1, 2)])) == [Point(1, 2)]
    assert serde.loads_typed(_stored(0, "os", "system", "x")) == ["x"]
