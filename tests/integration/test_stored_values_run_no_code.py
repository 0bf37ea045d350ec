"""Reading stored data runs no code it names (docs/reliability.md, "Stored data runs no code").

A thread log entry whose msgpack names a callable (``os.system``, ``subprocess.Popen``, a
function of this module that plants a file) is written through the real append path, by a
writer whose serde emits the crafted bytes. A default `StreamSaver` (get_tuple, list) and a
default `Subscriber` (``FeedEvent.payload``) then read it, as do a saver and subscriber whose
serde encrypts over a `SafeSerializer`: nothing named is called, and each crafted value reads
back as LangGraph's strict fallback, its stored arguments. LangGraph's
permissive serde, the default before, does run them (the control case). A graph whose
TypedDict state holds the application's own pydantic model, dataclass and Enum still
round-trips through a default saver, read back by a new saver and a new graph.
"""

from __future__ import annotations

import dataclasses
import enum
import time
from pathlib import Path
from typing import Any, TypedDict

import ormsgpack
import pydantic
import pytest
import redis
from helpers import config, new_checkpoint
from langgraph.checkpoint.serde.encrypted import EncryptedSerializer
from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer
from langgraph.graph import END, START, StateGraph

from streamsaver import SafeSerializer, StreamSaver, Subscriber

PLANT = "crafted"
AES_KEY = b"0123456789abcdef"


def plant_flag(path: str) -> None:
    """What a crafted entry names: a function that leaves a file behind when it runs."""
    Path(path).write_text("ran")


def crafted_msgpack(flag_dir: Path) -> bytes:
    """A msgpack map whose ext values name callables that would each create a file in `flag_dir`."""
    def ext(code: int, *parts: Any) -> ormsgpack.Ext:
        return ormsgpack.Ext(code, ormsgpack.packb(parts))

    return ormsgpack.packb({
        "system": ext(0, "os", "system", f"touch {flag_dir / 'system'}"),
        "popen": ext(1, "subprocess", "Popen", [["touch", str(flag_dir / "popen")]]),
        "function": ext(0, __name__, "plant_flag", str(flag_dir / "function")),
    })


class CraftingSerde(JsonPlusSerializer):
    """A writer's serde that stores `crafted_msgpack` in place of the value ``PLANT``."""

    def __init__(self, flag_dir: Path) -> None:
        super().__init__()
        self.crafted = crafted_msgpack(flag_dir)

    def dumps_typed(self, obj: Any) -> tuple[str, bytes]:
        return ("msgpack", self.crafted) if obj == PLANT else super().dumps_typed(obj)


def _expected(flag_dir: Path) -> dict[str, Any]:
    """LangGraph's strict fallback: each blocked value reads back as its stored arguments."""
    return {
        "system": f"touch {flag_dir / 'system'}",
        "popen": [["touch", str(flag_dir / "popen")]],
        "function": str(flag_dir / "function"),
    }


def _plant(client: redis.Redis, prefix: str, flag_dir: Path) -> None:
    writer = StreamSaver(client, prefix=prefix, serde=CraftingSerde(flag_dir), compression=None)
    writer.setup()
    checkpoint, versions = new_checkpoint({"state": PLANT})
    saved = writer.put(config("victim"), checkpoint, {"source": "input", "step": 0}, versions)
    writer.put_writes(saved, [("state", PLANT)], "task-1")


def _ran(flag_dir: Path) -> list[str]:
    return sorted(p.name for p in flag_dir.iterdir())


@pytest.mark.parametrize("reader", ["default", "encrypted over SafeSerializer"])
def test_a_default_saver_and_subscriber_run_no_code_a_stored_value_names(
    client: redis.Redis, prefix: str, tmp_path: Path, reader: str
) -> None:
    """The encrypted reader shows why its inner serde matters: an entry stored unencrypted (no
    ``+cipher`` in its type) goes straight to the inner serde, key or no key."""
    _plant(client, prefix, tmp_path)
    serde = None if reader == "default" else EncryptedSerializer.from_pycryptodome_aes(SafeSerializer(), key=AES_KEY)
    saver = StreamSaver(client, prefix=prefix, serde=serde)
    found = saver.get_tuple(config("victim"))
    assert found is not None
    listed = list(saver.list(config("victim")))
    payloads: list[dict[str, Any] | None] = []
    Subscriber(client, "audit", lambda e: payloads.append(e.payload()), prefix=prefix, serde=serde).run_burst()

    assert _ran(tmp_path) == []
    expected = _expected(tmp_path)
    assert found.checkpoint["channel_values"]["state"] == expected
    assert found.pending_writes == [("task-1", "state", expected)]
    assert listed[0].checkpoint["channel_values"]["state"] == expected
    saved, written = (p for p in payloads if p is not None)
    assert saved["checkpoint"]["channel_values"]["state"] == expected
    assert written["writes"] == [("state", expected)]


def test_the_permissive_serde_runs_the_code_a_stored_value_names(
    client: redis.Redis, prefix: str, tmp_path: Path
) -> None:
    """The control case: LangGraph's permissive default (every saver's before) runs all three."""
    _plant(client, prefix, tmp_path)
    permissive = StreamSaver(client, prefix=prefix, serde=JsonPlusSerializer(allowed_msgpack_modules=True))
    permissive.get_tuple(config("victim"))
    deadline = time.monotonic() + 5  # the Popen'd touch runs on its own
    while len(_ran(tmp_path)) < 3 and time.monotonic() < deadline:
        time.sleep(0.02)
    assert _ran(tmp_path) == ["function", "popen", "system"]


class Mood(enum.Enum):
    CALM = "calm"
    ANGRY = "angry"


@dataclasses.dataclass
class Address:
    city: str
    zip_code: str


class Profile(pydantic.BaseModel):
    name: str
    mood: Mood
    address: Address


class Memory(TypedDict):
    profile: Profile
    moods: list[Mood]
    home: Address


def _graph() -> StateGraph:
    def update(state: Memory) -> dict[str, Any]:
        profile = state["profile"].model_copy(update={"mood": Mood.ANGRY})
        return {"profile": profile, "moods": [*state["moods"], Mood.ANGRY]}

    graph = StateGraph(Memory)
    graph.add_node("update", update)
    graph.add_edge(START, "update")
    graph.add_edge("update", END)
    return graph


def test_the_applications_own_types_round_trip_through_a_default_saver(client: redis.Redis, prefix: str) -> None:
    home = Address("Lyon", "69001")
    first = _graph().compile(checkpointer=StreamSaver(client, prefix=prefix))
    first.invoke({"profile": Profile(name="ada", mood=Mood.CALM, address=home), "moods": [Mood.CALM], "home": home},
                 config("typed"))

    again = _graph().compile(checkpointer=StreamSaver(client, prefix=prefix))
    values = again.get_state(config("typed")).values
    assert values == {"profile": Profile(name="ada", mood=Mood.ANGRY, address=home),
                      "moods": [Mood.CALM, Mood.ANGRY], "home": home}
    assert type(values["profile"]) is Profile and type(values["home"]) is Address
    assert all(type(m) is Mood for m in values["moods"])
