"""No input reaches a RediSearch query unescaped: whatever thread id, namespace, metadata filter
or `before` a `list` call gets, the query it sends holds only field names and hex digests (and a
`before` id only when it is of ``[A-Za-z0-9._:-]``; anything else is refused)."""

from __future__ import annotations

import re

from hypothesis import given, settings
from hypothesis import strategies as st
from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer

from streamsaver.checkpoints.listing import ListPager
from streamsaver.errors import InvalidInputError
from streamsaver.log.codec import order_key
from streamsaver.log.keys import Keyspace
from streamsaver.scripts import LIST_WINDOW

QUERY = re.compile(r"^(\*|@(th|nh|mt):\{[0-9a-f]+\}( @(th|nh|mt):\{[0-9a-f]+\})*)$")
SAFE_BEFORE = re.compile(r"^[A-Za-z0-9._:-]*$")
text = st.text(alphabet=st.sampled_from("{}[]()|@*:;'\"\\-_ %$é字\x00aZ09."), max_size=20) | st.text(max_size=20)
json_values = st.none() | st.booleans() | st.integers(-(2**63), 2**63 - 1) | text | st.lists(text, max_size=3)


@settings(max_examples=300, deadline=None)
@given(
    thread=st.none() | text,
    ns=st.none() | text,
    filter=st.dictionaries(text, json_values, max_size=4),
    before=st.none() | text,
)
def test_list_queries_hold_only_digests(
    thread: str | None, ns: str | None, filter: dict[str, object], before: str | None
) -> None:
    config = (
        None
        if thread is None
        else {"configurable": {"thread_id": thread, **({} if ns is None else {"checkpoint_ns": ns})}}
    )
    before_config = None if before is None else {"configurable": {"checkpoint_id": before}}
    for view in ("full", "shallow"):
        pager = ListPager.plan(Keyspace("p", 4), view, JsonPlusSerializer(), config, filter, before_config, None)  # type: ignore[arg-type]
        try:
            request = pager.next_request()
        except InvalidInputError:
            assert before and not SAFE_BEFORE.match(before)
            continue
        assert request is not None
        command = request[0]
        if command[0] == "EVALSHA" and command[1] == LIST_WINDOW.sha:
            # across threads: list_window.lua builds its queries from the query, the `before`
            # id and numbers (its order key, offset, size, window)
            _, _, _, _, query, before_arg, before_key, *numbers, after, tk, nk = command
            assert QUERY.match(str(query)), query
            assert before_arg == (before or "") and SAFE_BEFORE.match(str(before_arg))
            assert before_key == (order_key(before) if before else "")
            assert all(isinstance(n, int) for n in numbers)
            assert (after, tk, nk) == ("0", "", "")  # a first page: no cursor yet
            continue
        if command[0] != "FT.AGGREGATE":
            continue  # the id walk of one thread: a script call, no query
        assert QUERY.match(str(command[2])), command[2]
        if "FILTER" in command:
            clause = str(command[command.index("FILTER") + 1])
            assert before and SAFE_BEFORE.match(before) and clause == f"@checkpoint_id < '{before}'"
