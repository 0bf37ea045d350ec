"""A lone put's ``store_put.lua`` call carries its log entry as the values of its fields alone:
the script names them (`streamsaver.store.put.ENTRY`), so the two lists, and the fields
`item_fields` writes for every shape of put, must agree; and the document it sends is the one
the projection (what replay applies) builds."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from projectors.store import project
from streamsaver.log.events import ItemPut, RunContext
from streamsaver.log.items import item_fields
from streamsaver.log.keys import Keyspace
from streamsaver.scripts import STORE_PUT
from streamsaver.store.put import ENTRY, OPTIONAL, SENT, put_call

KS = Keyspace("p", 8)
SCRIPT = Path(__file__).parents[2] / "streamsaver" / "scripts" / "store_put.lua"

EVENTS = [
    ItemPut("3", ("users", "ada"), "k", {"v": 1}, 5),
    ItemPut("3", ("users",), "k:1", {"v": [1, {"w": None}], "x": 2.5}, 5, 60_000, ((0.5, 0.25), (1.0, -2e-7)), "m",
            ("v",), 99),
    ItemPut("3", ("a", "b"), "k", {"t": "x"}, 7, 0, ((0.5, -1.25),), "model", None, 0, "agent é",
            RunContext("t-1", "node:0f9b", "r-1")),
    ItemPut("3", ("a",), "k", {"t": "x"}, 7, 1, (), "", None, 0, "", RunContext(thread_id="t")),
]


def test_the_script_names_the_entry_fields_the_call_sends() -> None:
    script = SCRIPT.read_text()
    source = script[script.index("local entry = {") : script.index("local id = ")]  # the entry's lines
    assert f"local entry = {{'type', '{ItemPut.TYPE}', 'v', '{ItemPut.VERSION}', " in source  # its constants
    assert ENTRY[:2] == (b"type", b"v") and ENTRY[2:] == SENT
    named = re.findall(r"'([a-z]+)', A\[(\d+)\]", source)
    assert [name.encode() for name, _ in named] == list(SENT)
    assert [int(at) for _, at in named] == list(range(5, 5 + len(SENT)))  # after body, stem, namespace, deadline
    optional = {name.encode() for line in source.splitlines() if line.startswith("if A[")
                for name, _ in re.findall(r"'([a-z]+)', A\[(\d+)\]", line)}
    assert optional == OPTIONAL  # each written only when its value is not ''


@pytest.mark.parametrize("event", EVENTS)
def test_a_lone_puts_arguments_are_its_entrys_fields_in_order_and_its_projection(event: ItemPut) -> None:
    fields = item_fields(event)
    names = [name for name in ENTRY if name in fields]
    assert names == list(fields)  # every field the entry has, in its order
    assert all(fields[name] for name in OPTIONAL if name in fields)  # '' only ever means absent
    call = put_call(KS, event)
    assert call[:2] == ["EVALSHA", STORE_PUT.sha]
    keys, args = call[3 : 3 + call[2]], call[3 + call[2] :]  # type: ignore[operator]
    body, stem, joined, deadline, *values = args
    assert values == [fields.get(name, b"") for name in SENT]
    assert fields[b"type"] == ItemPut.TYPE.encode() and fields[b"v"] == str(ItemPut.VERSION).encode()
    [item, expiry] = project(event, KS)
    assert (item[1], item[3], item[5], item[7]) == (keys[3], body, stem, joined)
    assert deadline == (expiry[2] if expiry[0] == "PEXPIREAT" else "")
    assert (item[2].encode(), item[9] == "1") == (fields[b"at"], int(fields[b"ttl"]) > 0)
