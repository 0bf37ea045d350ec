"""Commands that point a writes hash at a task's writes; shared by both views."""

from __future__ import annotations

from projectors.commands import POINT, POINT_IF_NEW, Command
from projectors.documents import write_field
from streamsaver.events import WritesSaved


def store_writes(key: str, event: WritesSaved) -> list[Command]:
    """LangGraph's rule: special writes (negative index) overwrite, others keep the first write."""
    special = [write_field(event.task_id, w.idx) for w in event.writes if w.idx < 0]
    ordinary = [write_field(event.task_id, w.idx) for w in event.writes if w.idx >= 0]
    commands: list[Command] = [(POINT_IF_NEW, key, *ordinary)] if ordinary else []
    if special:
        commands.append((POINT, key, *special))
    return commands
