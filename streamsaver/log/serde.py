"""The savers' and subscribers' default serializer: LangGraph's strict msgpack mode, which
never imports a module nor calls a function that a stored value names. Pure, no I/O.

LangGraph's `JsonPlusSerializer` rebuilds a typed msgpack value by importing the module and
calling the name the bytes spell; its default (``LANGGRAPH_STRICT_MSGPACK`` unset) does so for
any name, so a value naming ``os.system`` written into a thread's log runs when a reader loads
it. `SafeSerializer` is `JsonPlusSerializer` with ``allowed_msgpack_modules=None`` (strict):
it rebuilds LangGraph's safe types (``SAFE_MSGPACK_TYPES``: datetimes, UUIDs, messages,
``Send``, ...), the types of an explicit allowlist (`with_msgpack_allowlist`, which
`graph.compile` calls with the graph's schema types when ``LANGGRAPH_STRICT_MSGPACK`` is set),
and, because `graph.compile` hands over nothing otherwise, the application's *data classes*: a
class that is already imported (nothing is imported to decode a value) and is a pydantic model,
a dataclass or an Enum (the kinds LangGraph's own allowlist collects from a graph's schemas),
except pydantic-settings classes (which read the environment). Any other name (a function, any
other class, a module not loaded) is blocked: LangGraph's documented strict fallback returns
the value's stored arguments in its place (a kwargs dict, an args list) and logs ``Blocked
deserialization of <module>.<name>``; nothing named is imported or called.
"""

from __future__ import annotations

import dataclasses
import sys
from collections.abc import Iterable
from enum import Enum
from typing import Any

from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer, _create_msgpack_ext_hook

__all__ = ["SafeSerializer"]


class SafeSerializer(JsonPlusSerializer):
    """`JsonPlusSerializer` in strict msgpack mode that also rebuilds loaded data classes.

    Args:
        allowed_msgpack_modules: more ``(module, name)`` pairs or classes to rebuild.
    """

    def __init__(self, *, allowed_msgpack_modules: Iterable[tuple[str, ...] | type] = ()) -> None:
        super().__init__(allowed_msgpack_modules=tuple(allowed_msgpack_modules) or None)
        self._trust_loaded_data_classes()

    def with_msgpack_allowlist(self, extra_allowlist: Iterable[tuple[str, ...] | type]) -> JsonPlusSerializer:
        """A copy that also rebuilds `extra_allowlist` (self when it adds nothing)."""
        clone = super().with_msgpack_allowlist(extra_allowlist)
        if clone is not self and isinstance(clone, SafeSerializer):
            clone._trust_loaded_data_classes()
        return clone

    def _trust_loaded_data_classes(self) -> None:
        allowed = self._allowed_msgpack_modules
        trusted = _DataClassAllowlist(allowed if isinstance(allowed, set) else ())
        self._allowed_msgpack_modules = trusted
        self._unpack_ext_hook = _create_msgpack_ext_hook(trusted)


class _DataClassAllowlist(set[tuple[str, ...]]):
    """An allowlist that also holds every loaded data class (see the module docstring). A data
    class found is remembered beside the set (the set itself never changes, so copying it while
    another thread decodes is safe): the next lookup is one dict probe."""

    def __init__(self, names: Iterable[tuple[str, ...]] = ()) -> None:
        super().__init__(names)
        self._found: dict[tuple[str, ...], bool] = {}

    def __contains__(self, key: object) -> bool:
        if set.__contains__(self, key):
            return True
        if not isinstance(key, tuple):
            return False
        found = self._found.get(key)
        if found is None:
            found = _is_loaded_data_class(key)
            if found:  # a class not loaded yet may be later: only a yes is final
                self._found[key] = True
        return found


def _is_loaded_data_class(key: tuple[Any, ...]) -> bool:
    """Whether `key` (module, name) names a pydantic model, dataclass or Enum class of a module
    already imported; reads the module's namespace only (no import, no module ``__getattr__``)."""
    if len(key) != 2 or not all(isinstance(part, str) for part in key):
        return False
    module = sys.modules.get(key[0])
    found = vars(module).get(key[1]) if module is not None else None
    if not isinstance(found, type) or _reads_environment(found):
        return False
    return issubclass(found, Enum) or dataclasses.is_dataclass(found) or _is_pydantic_model(found)


def _is_pydantic_model(cls: type) -> bool:
    for module_name in ("pydantic", "pydantic.v1"):
        module = sys.modules.get(module_name)
        base = vars(module).get("BaseModel") if module is not None else None
        if isinstance(base, type) and issubclass(cls, base):
            return True
    return False


def _reads_environment(cls: type) -> bool:
    """pydantic-settings models fill their fields from the environment and files."""
    return any(base.__module__.split(".")[0] == "pydantic_settings" for base in cls.__mro__)
