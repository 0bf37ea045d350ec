"""The namespace policy of the middleware: which labels of the runtime context scope a cache, a
memory or an audit, so no tenant (or user) ever reads another's entries."""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from streamsaver.errors import MiddlewareConfigError

__all__ = ["POLICIES", "ScopePolicy", "digest", "label"]

POLICIES = {"user": ("user",), "tenant": ("tenant",), "tenant+user": ("tenant", "user")}
"""A policy's name and the context fields, in order, whose values become the leading labels."""


def label(value: str) -> str:
    """`value` as a store namespace label: '%' and '.' escaped (labels hold no '.'), so
    ``"a@b.com"`` stays readable (``a@b%2Ecom``) and two values never share a label."""
    return value.replace("%", "%25").replace(".", "%2E").replace("\x00", "%00")


def digest(*parts: str) -> str:
    """A short stable hex digest of `parts` (labels and keys that must not hold raw text)."""
    h = hashlib.blake2b(digest_size=12)
    for part in parts:
        h.update(part.encode("utf-8", "surrogatepass"))
        h.update(b"\x00")
    return h.hexdigest()


def _field(context: Any, name: str) -> Any:
    if isinstance(context, Mapping):
        return context.get(name)
    return getattr(context, name, None)


@dataclass(frozen=True)
class ScopePolicy:
    """Where a middleware's entries live: the runtime context's tenant and/or user.

    Args:
        by: ``"user"``, ``"tenant"`` or ``"tenant+user"``.
        tenant_field, user_field: the names of those values in the context (a dict key, or an
            attribute of a dataclass or pydantic context).

    Raises:
        MiddlewareConfigError: an unknown policy or an empty field name.
    """

    by: str = "user"
    tenant_field: str = "tenant_id"
    user_field: str = "user_id"

    def __post_init__(self) -> None:
        if self.by not in POLICIES:
            raise MiddlewareConfigError(
                f"unknown namespace policy {self.by!r}: one of {', '.join(map(repr, POLICIES))}")
        for name in (self.tenant_field, self.user_field):
            if not isinstance(name, str) or not name:
                raise MiddlewareConfigError(f"a context field name is a non-empty string, not {name!r}")

    @classmethod
    def of(cls, policy: ScopePolicy | str) -> ScopePolicy:
        """`policy`, or the policy named by it."""
        return policy if isinstance(policy, ScopePolicy) else cls(policy)

    def labels(self, context: Any) -> tuple[str, ...] | None:
        """The leading namespace labels of the call whose runtime context is `context`; None when
        the context lacks one of them (the middleware then stays out of the call: nothing shared)."""
        out = []
        for role in POLICIES[self.by]:
            value = _field(context, self.tenant_field if role == "tenant" else self.user_field)
            if not isinstance(value, str) or not value:
                return None
            out.append(label(value))
        return tuple(out)
