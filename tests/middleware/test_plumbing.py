"""What the middleware share: the namespace policy, and a lean checkpointer install."""

from __future__ import annotations

import subprocess
import sys
from dataclasses import dataclass

import pytest

from streamsaver.errors import MiddlewareConfigError
from streamsaver.middleware import ScopePolicy
from streamsaver.middleware.scope import label


def test_the_savers_and_the_store_do_not_import_langchain() -> None:
    code = ("import sys; from streamsaver import StreamSaver, AsyncStreamSaver, StreamStore, Subscriber; "
            "print(sorted(m for m in sys.modules if m == 'langchain' or m.startswith('langchain.')))")
    done = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True)
    assert done.stdout.strip() == "[]"


@dataclass
class Context:
    user_id: str | None = None
    tenant_id: str | None = None


@pytest.mark.parametrize(("policy", "context", "labels"), [
    ("user", {"user_id": "alice", "tenant_id": "acme"}, ("alice",)),
    ("tenant", {"user_id": "alice", "tenant_id": "acme"}, ("acme",)),
    ("tenant+user", Context("alice", "acme"), ("acme", "alice")),
    ("user", {"user_id": "a@b.com"}, ("a@b%2Ecom",)),
    ("user", {"tenant_id": "acme"}, None),
    ("tenant+user", Context("alice"), None),
    ("user", None, None),
    (ScopePolicy("user", user_field="uid"), {"uid": "z"}, ("z",)),
])
def test_the_policy_reads_its_labels_from_the_context(policy: str | ScopePolicy, context: object,
                                                      labels: tuple[str, ...] | None) -> None:
    assert ScopePolicy.of(policy).labels(context) == labels


def test_labels_of_different_values_differ() -> None:
    values = ["a.b", "a%2Eb", "a%b", "a%25b", "a.b.", "a..b"]
    assert len({label(v) for v in values}) == len(values)
    assert all("." not in label(v) for v in values)


@pytest.mark.parametrize("bad", [{"by": "team"}, {"by": ""}, {"user_field": ""}])
def test_an_unknown_policy_is_refused(bad: dict[str, str]) -> None:
    with pytest.raises(MiddlewareConfigError):
        ScopePolicy(**bad)
