"""Commands that store a task's writes in a writes hash; shared by both views."""

from __future__ import annotations

from projectors.commands import Command
from projectors.documents import encode_write, write_field
from streamsaver.events import WritesSaved


def store_writes(key: str, event: WritesSaved) -> list[Command]:
    """LangGraph's rule: special writes (negative index) overwrite, others keep the first write."""
    special: list[str | bytes] = []
    commands: list[Command] = []
    for write in event.writes:
        field, value = write_field(event.task_id, write.idx), encode_write(event.task_id, event.task_path, write)
        if write.idx < 0:
            special += [field, value]
        else:
            commands.append(("HSETNX", key, field, value))
    if special:
        commands.append(("HSET", key, *special))
    return commands
