"""The stored field names the Lua scripts spell are the constants of `streamsaver.log.fields`.

Python spells each stored name once (`streamsaver.log.fields`); the scripts spell the names they
read or write as string literals. Each script is checked against the constants it must spell
(so renaming a constant without its scripts fails here), and every literal shaped like a
reserved hash field (``@...``) or a stream field prefix (``c:``, ``w:``) must be one of the
constants or an index field (so a script cannot invent one).
"""

from __future__ import annotations

import re
from importlib import resources

import pytest

from projectors.schema import FIELDS as INDEX_FIELDS
from streamsaver.log import fields

LITERAL = re.compile(r"'([^'\\]*)'")


def _literals(script: str) -> set[str]:
    text = resources.files("streamsaver.scripts").joinpath(script).read_text()
    code = "\n".join(line.split("--", 1)[0] for line in text.splitlines())
    return set(LITERAL.findall(code))


def _text(name: str | bytes) -> str:
    return name.decode() if isinstance(name, bytes) else name


SPELT_BY = {
    "_read.lua": [fields.BODY, fields.CHANNEL_PREFIX, fields.WRITE_PREFIX, fields.TASK, fields.TASK_PATH,
                  fields.BODY_POINTER, fields.CURRENT_CHECKPOINT],
    "read_history.lua": [fields.CHANNEL_PREFIX, fields.EMPTY_TYPE],
    "append.lua": [fields.ENTRY_ID, fields.INCARNATION, fields.BASE_RECORD, fields.NAMESPACE],
    "append_batch.lua": [fields.INCARNATION],
    "store_put.lua": [fields.INCARNATION],
    "rewrite.lua": [fields.ENTRY_ID, fields.INCARNATION, fields.BASE_RECORD],
    "read_cached.lua": [fields.INCARNATION],
    "_lib.lua": [fields.CURRENT_CHECKPOINT, fields.PINNED],
    "apply.lua": [fields.PINNED],
    "ttl.lua": [fields.PINNED],
    "_fence.lua": [fields.OWNER],
    "claim.lua": [fields.OWNER],
}
"""Each script that spells stored names, and the names it spells."""

SCRIPTS = [p.name for p in resources.files("streamsaver.scripts").iterdir() if p.name.endswith(".lua")]


@pytest.mark.parametrize("script", sorted(SPELT_BY))
def test_scripts_spell_the_python_constants(script: str) -> None:
    missing = {_text(name) for name in SPELT_BY[script]} - _literals(script)
    assert not missing, f"{script} no longer spells {missing}: update it with streamsaver/log/fields.py"


def test_append_tests_the_channel_prefix_by_its_bytes() -> None:
    text = resources.files("streamsaver.scripts").joinpath("append.lua").read_text()
    first, second = fields.CHANNEL_PREFIX
    assert f"string.byte(name, 1) == {first} and string.byte(name, 2) == {second}" in text


@pytest.mark.parametrize("script", sorted(SCRIPTS))
def test_scripts_invent_no_stored_name(script: str) -> None:
    reserved = {_text(getattr(fields, name)) for name in fields.__all__}
    index = {"@" + field["name"] for field in INDEX_FIELDS} | {"@__key"}
    for literal in _literals(script):
        if re.fullmatch(r"@[\w]+", literal):
            # "@last": the analytics example's own counter field (count.lua), no stored name
            assert literal in reserved | index | {"@last"}, f"{script}: {literal!r} is not a stored name"
        if re.fullmatch(r"[a-z]:", literal):
            assert literal in reserved, f"{script}: {literal!r} is not a stream field prefix"
