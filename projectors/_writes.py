"""Commands that point a writes hash at a task's writes; shared by both views."""

from __future__ import annotations

from projectors.commands import POINT, POINT_IF_NEW, Command
from projectors.documents import write_field
from streamsaver.log.events import WritesSaved


def store_writes(key: str, event: WritesSaved) -> list[Command]:
    """LangGraph's rule: special writes (negative index) overwrite, others keep the first write."""
    ordinary: list[str] = [key]
    special: list[str] = [key]
    for w in event.writes:
        (special if w.idx < 0 else ordinary).append(write_field(event.task_id, w.idx))
    commands: list[Command] = [(POINT_IF_NEW, *ordinary)] if len(ordinary) > 1 else []
    if len(special) > 1:
        commands.append((POINT, *special))
    return commands
