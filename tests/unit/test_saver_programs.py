"""A saver's calls are programs: their sequence of steps is the decision, checked here without
Redis (the drivers only perform the steps)."""

from __future__ import annotations

from typing import Any

import pytest
from helpers import config, new_checkpoint
from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer

from streamsaver.checkpoints import programs
from streamsaver.checkpoints.core import SaverCore
from streamsaver.errors import DurabilityError
from streamsaver.log.keys import Keyspace
from streamsaver.log.program import Call, Owner, Refused
from streamsaver.log.routing import Routed


def _core(durability: str = "memory") -> SaverCore:
    core = SaverCore.configure(JsonPlusSerializer(), view="full", projections=["full"], prefix="p", partitions=4,
                               durability=durability)
    core.keyspace = Keyspace("p", 4)
    return core


def test_a_put_is_one_call_and_returns_the_config_of_the_checkpoint() -> None:
    core = _core()
    checkpoint, versions = new_checkpoint({"s": 1})
    program = programs.put(core, config("t"), checkpoint, {}, versions)
    call = next(program)
    assert isinstance(call, Call) and len(call.steps) == 1
    with pytest.raises(StopIteration) as done:
        program.send([b"1-0"])
    assert done.value.value["configurable"]["checkpoint_id"] == checkpoint["id"]


def test_a_refusal_other_than_a_refused_delta_leaves_the_put() -> None:
    core = _core()
    checkpoint, versions = new_checkpoint({"s": 1})
    program = programs.put(core, config("t"), checkpoint, {}, versions)
    next(program)
    refused = Refused(RuntimeError("OOM command not allowed"), False)
    with pytest.raises(Refused) as raised:
        program.throw(refused)
    assert raised.value is refused


def _durable_steps(core: SaverCore, owners: list[Any], waited: Any) -> tuple[list[Any], Any]:
    program = programs.durable(core, ["EVALSHA", "sha", 1, "p:log:{p1}:t"])
    steps, reply, owner_replies = [], None, iter(owners)
    try:
        step = next(program)
        while True:
            steps.append(step)
            reply = (
                next(owner_replies)
                if isinstance(step, Owner)
                else ([b"1-0", waited] if len(step.steps) > 1 else [waited])
            )
            step = program.send(reply)
    except StopIteration as done:
        return steps, done.value


def test_the_wait_is_sent_again_to_the_node_that_owns_the_thread_now() -> None:
    steps, entry = _durable_steps(_core("replica"), ["a", "b"], 1)
    wait = Routed("p:log:{p1}:t", ["WAIT", 1, 5000])
    assert steps[0] == Owner("p:log:{p1}:t") and steps[2] == Owner("p:log:{p1}:t")
    assert steps[3] == Call([wait], steps[3].reload) and entry == b"1-0"
    steps, _ = _durable_steps(_core("replica"), ["a", "a"], 1)
    assert len(steps) == 3


def test_a_wait_that_timed_out_raises_durability_error() -> None:
    with pytest.raises(DurabilityError):
        _durable_steps(_core("replica"), [None, None], 0)
