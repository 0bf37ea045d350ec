"""The subcommands of the ``streamsaver`` CLI, one module each.

A module here defines ``register(commands, common)``, adding its parser with
``commands.add_parser(name, parents=[common], ...)`` and ``set_defaults(handler=...)``; the
handler takes the parsed arguments and returns the exit code. Modules are found by name, so a
new subcommand is a new module and nothing else. Handlers stay thin: they call the library.
"""

from __future__ import annotations

import pkgutil
from importlib import import_module
from types import ModuleType

__all__ = ["modules"]


def modules() -> list[ModuleType]:
    """Every subcommand module, in name order (modules starting with ``_`` are helpers)."""
    names = sorted(m.name for m in pkgutil.iter_modules(__path__) if not m.name.startswith("_"))
    return [import_module(f"{__name__}.{name}") for name in names]
