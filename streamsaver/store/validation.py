"""What the store refuses, checked before anything is sent: every op of a batch is checked
before its first write, so a rejected batch changes nothing."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from langgraph.store.base import GetOp, InvalidNamespaceError, ListNamespacesOp, Op, PutOp, SearchOp

from streamsaver.errors import InvalidInputError
from streamsaver.log.keys import checked_id
from streamsaver.log.ttl import MAX_TTL_MINUTES

__all__ = ["FILTER_OPERATORS", "RANGE_OPERATORS", "check_labels", "check_ops", "checked_namespace"]

RANGE_OPERATORS = {"$gt": ">", "$gte": ">=", "$lt": "<", "$lte": "<="}
"""The range operators of a filter, and the comparison each is in a RediSearch ``FILTER``."""
FILTER_OPERATORS = frozenset({"$eq", "$ne", "$in", *RANGE_OPERATORS})
RESERVED_ROOT = "langgraph"


def check_labels(labels: Iterable[Any], *, wildcards: bool = False) -> tuple[str, ...]:
    """`labels` as a tuple of valid labels: non-empty strings of valid Unicode without '.' or NUL.

    Raises:
        InvalidNamespaceError: (a ValueError) naming the first invalid label.
    """
    if isinstance(labels, str) or not isinstance(labels, (tuple, list)):
        raise InvalidNamespaceError(f"a namespace is a tuple of strings, not {type(labels).__name__}")
    out = tuple(labels)
    for label in out:
        if not isinstance(label, str) or not label or "." in label or "\x00" in label:
            raise InvalidNamespaceError(
                f"invalid namespace label {label!r} in {out}: labels are non-empty strings without '.' or NUL"
            )
        try:
            label.encode("utf-8")
        except UnicodeEncodeError as exc:
            raise InvalidNamespaceError(f"namespace label {label!r} is not valid Unicode") from exc
    return out


def checked_namespace(namespace: Any) -> tuple[str, ...]:
    """The namespace of an item (a put or a get): valid labels, at least one, not under the
    reserved root ``langgraph``.

    Raises:
        InvalidNamespaceError: an empty namespace, an invalid label or the reserved root.
    """
    labels = check_labels(namespace)
    if not labels:
        raise InvalidNamespaceError("a namespace cannot be empty")
    if labels[0] == RESERVED_ROOT:
        raise InvalidNamespaceError(f'the root label of a namespace cannot be "{RESERVED_ROOT}": {labels}')
    return labels


def _check_filter(filter: Mapping[str, Any] | None) -> None:
    if filter is None:
        return
    if not isinstance(filter, Mapping):
        raise InvalidInputError(f"a filter is a dict, not {type(filter).__name__}")
    for key, condition in filter.items():
        if not isinstance(key, str) or not key:
            raise InvalidInputError(f"filter keys are non-empty strings, not {key!r}")
        if isinstance(condition, Mapping) and any(str(op).startswith("$") for op in condition):
            for op, operand in condition.items():
                if op not in FILTER_OPERATORS:
                    raise InvalidInputError(f"unknown filter operator {op!r} (known: {sorted(FILTER_OPERATORS)})")
                if op in RANGE_OPERATORS and (isinstance(operand, bool) or not isinstance(operand, (int, float))):
                    raise InvalidInputError(f"{op} compares numbers, not {operand!r}")
                if op == "$in" and not isinstance(operand, (list, tuple)):
                    raise InvalidInputError(f"$in takes a list, not {operand!r}")
        elif isinstance(condition, Mapping):
            _check_filter(condition)


def _check_put(op: PutOp) -> None:
    if op.value is not None and not isinstance(op.value, Mapping):
        raise InvalidInputError(f"an item's value is a dict, not {type(op.value).__name__}")
    if op.ttl is not None and (isinstance(op.ttl, bool) or not isinstance(op.ttl, (int, float))
                               or not 0 < op.ttl <= MAX_TTL_MINUTES):  # NaN fails the comparison too
        raise InvalidInputError(f"ttl is a positive number of minutes (at most {MAX_TTL_MINUTES:.3g}), not {op.ttl!r}")
    index = op.index
    if index is not None and index is not False and (
            not isinstance(index, (list, tuple)) or not all(isinstance(path, str) for path in index)):
        raise InvalidInputError(f"index is False, None or a list of JSON paths (strings), not {index!r}")


def _check_op(op: Op) -> None:
    if isinstance(op, (GetOp, PutOp)):
        checked_namespace(op.namespace)
        if not isinstance(op.key, str):
            raise InvalidInputError(f"an item key is a string, not {type(op.key).__name__}")
        checked_id(op.key, "an item key")
        if isinstance(op, PutOp):
            _check_put(op)
    elif isinstance(op, SearchOp):
        check_labels(op.namespace_prefix)
        _check_filter(op.filter)
        if op.limit < 0 or op.offset < 0:
            raise InvalidInputError("limit and offset cannot be negative")
    elif isinstance(op, ListNamespacesOp):
        for condition in op.match_conditions or ():
            check_labels(condition.path)
            if condition.match_type not in ("prefix", "suffix"):
                raise InvalidInputError(f"unknown match type {condition.match_type!r}")
    else:
        raise InvalidInputError(f"unknown store op {op!r}")


def check_ops(ops: Iterable[Op]) -> list[Op]:
    """`ops` as a list, each checked.

    Raises:
        InvalidNamespaceError, InvalidInputError: (ValueErrors) the first invalid op.
    """
    checked = list(ops)
    for op in checked:
        _check_op(op)
    return checked
