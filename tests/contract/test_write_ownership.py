"""Write ownership (fencing): a writer that claimed a thread writes it only while its claim is the
newest; a superseded writer's put and put_writes raise `StaleWriteOwnerError` and write nothing.

The clauses of the ``write_ownership`` capability of LangGraph's conformance suite
(``libs/checkpoint-conformance``, ``ownership.py``), which the installed suite does not ship yet,
on every saver variant and on one server and a cluster. Reads go through the saver that claimed,
never through a writer. Every test fails on a saver without the fence: the superseded write lands.
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from typing import Any

import pytest
from helpers import VARIANT_IDS, VARIANTS, SaverAdapter, config, new_checkpoint, open_adapter

from streamsaver import AsyncStreamSaver
from streamsaver.errors import InvalidInputError, StaleWriteOwnerError


@pytest.fixture(params=VARIANTS, ids=VARIANT_IDS)
async def saver(request: pytest.FixtureRequest, redis_url: str, prefix: str) -> AsyncIterator[SaverAdapter]:
    kind, view = request.param
    async with open_adapter(kind, view, redis_url, prefix) as adapter:
        yield adapter


async def claim(saver: SaverAdapter, thread_id: str) -> SaverAdapter:
    if isinstance(saver.saver, AsyncStreamSaver):
        writer: Any = await saver.saver.aclaim_write_ownership(thread_id)
    else:
        writer = saver.saver.claim_write_ownership(thread_id)
    return SaverAdapter(writer, saver.kind, saver.view)


async def check(writer: SaverAdapter) -> None:
    if isinstance(writer.saver, AsyncStreamSaver):
        await writer.saver.acheck_write_ownership()
    else:
        writer.saver.check_write_ownership()


async def put(writer: SaverAdapter, tid: str, parent: str | None = None, step: int = 0) -> str:
    checkpoint, versions = new_checkpoint({"step": step})
    saved = await writer.put(config(tid, "", parent), checkpoint, {"step": step}, versions)
    return str(saved["configurable"]["checkpoint_id"])


async def tip(saver: SaverAdapter, tid: str) -> str | None:
    found = await saver.get_tuple(config(tid))
    return None if found is None else str(found.checkpoint["id"])


async def ids(saver: SaverAdapter, tid: str) -> list[str]:
    return [str(t.checkpoint["id"]) for t in await saver.list(config(tid))]


async def pending(saver: SaverAdapter, tid: str, cid: str) -> list[tuple[str, str, Any]]:
    found = await saver.get_tuple(config(tid, "", cid))
    return [] if found is None else list(found.pending_writes or [])


def listed(saver: SaverAdapter, newest_first: list[str]) -> list[str]:
    """What a listing of one namespace holds: all of it (full view) or the newest (shallow)."""
    return newest_first if saver.view == "full" else newest_first[:1]


async def refused(call: Any) -> StaleWriteOwnerError:
    with pytest.raises(StaleWriteOwnerError) as caught:
        await call
    assert caught.value.is_stale_write_owner_error is True
    return caught.value


async def test_the_current_owner_puts_and_puts_writes(saver: SaverAdapter) -> None:
    tid = str(uuid.uuid4())
    owner = await claim(saver, tid)
    c1 = await put(owner, tid)
    await owner.put_writes(config(tid, "", c1), [("ch", "owned")], "task")

    assert await tip(saver, tid) == c1
    assert [w[2] for w in await pending(saver, tid, c1)] == ["owned"]
    await check(owner)


async def test_a_superseded_owners_put_raises_and_is_not_durable(saver: SaverAdapter) -> None:
    tid = str(uuid.uuid4())
    stale = await claim(saver, tid)
    c1 = await put(stale, tid)
    await claim(saver, tid)

    error = await refused(put(stale, tid, c1, step=1))

    assert error.thread_id == tid
    assert await ids(saver, tid) == [c1]
    with pytest.raises(StaleWriteOwnerError):
        await check(stale)


async def test_a_superseded_owner_cannot_fork_the_chain(saver: SaverAdapter) -> None:
    tid = str(uuid.uuid4())
    a = await claim(saver, tid)
    c1 = await put(a, tid)
    b = await claim(saver, tid)
    c2 = await put(b, tid, c1, step=1)

    await refused(put(a, tid, c1, step=1))  # the thawed worker's own child of c1

    assert await tip(saver, tid) == c2
    assert await ids(saver, tid) == listed(saver, [c2, c1])


async def test_a_superseded_owners_put_writes_raises_and_is_not_durable(saver: SaverAdapter) -> None:
    tid = str(uuid.uuid4())
    stale = await claim(saver, tid)
    c1 = await put(stale, tid)
    await claim(saver, tid)

    await refused(stale.put_writes(config(tid, "", c1), [("ch", "stale")], str(uuid.uuid4())))

    assert await pending(saver, tid, c1) == []


@pytest.mark.parametrize("channel", ["ch", "__resume__", "__error__", "__interrupt__", "__scheduled__"])
async def test_a_superseded_owner_cannot_displace_the_current_owners_write(saver: SaverAdapter, channel: str) -> None:
    """Same checkpoint, same task id: the current owner's value stays, also on the special
    channels whose later write replaces the earlier one (``__resume__`` holds a human's answer)."""
    tid = str(uuid.uuid4())
    stale = await claim(saver, tid)
    c1 = await put(stale, tid)
    current = await claim(saver, tid)
    task = str(uuid.uuid4())
    await current.put_writes(config(tid, "", c1), [(channel, "current")], task)

    await refused(stale.put_writes(config(tid, "", c1), [(channel, "stale")], task))

    assert [w[2] for w in await pending(saver, tid, c1) if w[1] == channel] == ["current"]


async def test_a_superseded_owner_stays_superseded(saver: SaverAdapter) -> None:
    tid = str(uuid.uuid4())
    stale = await claim(saver, tid)
    c1 = await put(stale, tid)
    await claim(saver, tid)

    await refused(put(stale, tid, c1, step=1))
    await refused(put(stale, tid, c1, step=2))
    assert await ids(saver, tid) == [c1]


async def test_ownership_is_per_thread(saver: SaverAdapter) -> None:
    t1, t2 = str(uuid.uuid4()), str(uuid.uuid4())
    owner1 = await claim(saver, t1)
    await claim(saver, t2)

    assert await tip(saver, t1) is None
    c1 = await put(owner1, t1)
    assert await tip(saver, t1) == c1


async def test_the_new_owner_writes_after_superseding(saver: SaverAdapter) -> None:
    tid = str(uuid.uuid4())
    old = await claim(saver, tid)
    c1 = await put(old, tid)
    new = await claim(saver, tid)
    c2 = await put(new, tid, c1, step=1)
    await new.put_writes(config(tid, "", c2), [("ch", "recovered")], "task")

    assert await tip(saver, tid) == c2
    assert [w[2] for w in await pending(saver, tid, c2)] == ["recovered"]


async def test_a_duplicate_write_of_the_current_owner_is_absorbed_not_refused(saver: SaverAdapter) -> None:
    tid = str(uuid.uuid4())
    owner = await claim(saver, tid)
    c1 = await put(owner, tid)
    task = str(uuid.uuid4())
    await owner.put_writes(config(tid, "", c1), [("ch", "v")], task)
    await owner.put_writes(config(tid, "", c1), [("ch", "v")], task)

    assert [w[2] for w in await pending(saver, tid, c1)] == ["v"]


async def test_unfenced_writes_are_not_fenced(saver: SaverAdapter) -> None:
    """A saver holding no claim writes a claimed thread as before: fencing is opt-in."""
    tid = str(uuid.uuid4())
    owner = await claim(saver, tid)
    c1 = await put(owner, tid)
    c2 = await put(saver, tid, c1, step=1)

    assert await tip(saver, tid) == c2
    await check(owner)  # the plain write superseded nothing


async def test_deleting_the_thread_ends_every_claim(saver: SaverAdapter) -> None:
    """A token never comes back: after a deletion the claim count restarts, the nonce differs."""
    tid = str(uuid.uuid4())
    stale = await claim(saver, tid)
    await put(stale, tid)
    if saver.is_async:
        await saver.saver.adelete_thread(tid)
    else:
        saver.saver.delete_thread(tid)

    error = await refused(put(stale, tid))
    assert "deleted or expired" in str(error)
    fresh = await claim(saver, tid)
    c1 = await put(fresh, tid)
    assert await ids(saver, tid) == [c1]


async def test_a_writer_writes_only_its_thread(saver: SaverAdapter) -> None:
    tid, other = str(uuid.uuid4()), str(uuid.uuid4())
    owner = await claim(saver, tid)

    with pytest.raises(InvalidInputError, match="claim"):
        await put(owner, other)
    assert await tip(saver, other) is None


async def test_a_saver_holding_no_claim_has_nothing_to_check(saver: SaverAdapter) -> None:
    with pytest.raises(InvalidInputError, match="no claim"):
        await check(saver)


async def test_claims_count_up_per_thread(saver: SaverAdapter) -> None:
    tid = str(uuid.uuid4())
    tokens = []
    for _ in range(3):
        writer = await claim(saver, tid)
        assert writer.saver.write_fence is not None
        tokens.append(writer.saver.write_fence.token)
    assert [t.split(":")[0] for t in tokens] == ["1", "2", "3"]
    assert len(set(tokens)) == 3
    assert saver.saver.write_fence is None
