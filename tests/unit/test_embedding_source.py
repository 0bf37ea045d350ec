"""What ``streamsaver reembed --embed/--index`` accepts: a reference the operator types,
resolved to an embedding or an IndexConfig of their code; everything else is refused by name
before a store is opened."""

from __future__ import annotations

import sys
import types
from collections.abc import Iterator
from typing import Any

import pytest
from langchain_core.embeddings import Embeddings

from streamsaver.errors import ConfigurationError, InvalidInputError
from streamsaver.ops.embedding_source import index_config, resolve


class Named(Embeddings):
    model = "named"

    def __init__(self, scale: float = 1.0) -> None:
        self.scale = scale

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return [[self.scale] for _ in texts]

    def embed_query(self, text: str) -> list[float]:
        return [self.scale]


def texts_to_vectors(texts: list[str]) -> list[list[float]]:
    return [[0.5] for _ in texts]


@pytest.fixture
def module() -> Iterator[types.ModuleType]:
    made = types.ModuleType("operators_code")
    made.Named = Named  # type: ignore[attr-defined]
    made.instance = Named(2.0)  # type: ignore[attr-defined]
    made.function = texts_to_vectors  # type: ignore[attr-defined]
    made.factory = lambda: Named(3.0)  # type: ignore[attr-defined]
    made.bad_factory = lambda: 42  # type: ignore[attr-defined]
    made.INDEX = {"dims": 1, "embed": Named(), "fields": ["text"]}  # type: ignore[attr-defined]
    made.make_index = lambda: {"dims": 1, "embed": texts_to_vectors}  # type: ignore[attr-defined]
    made.nested = types.SimpleNamespace(inner=Named(4.0))  # type: ignore[attr-defined]
    sys.modules["operators_code"] = made
    yield made
    del sys.modules["operators_code"]


def test_each_kind_of_embedding_reference_becomes_an_index_embed(module: Any) -> None:
    def embed(ref: str) -> Any:
        return index_config(embed=f"operators_code:{ref}", dims=1)["embed"]

    assert embed("instance") is module.instance
    assert embed("function") is texts_to_vectors
    assert isinstance(embed("Named"), Named) and embed("Named").scale == 1.0
    assert embed("factory").scale == 3.0
    assert embed("nested.inner") is module.nested.inner
    config = index_config(embed="operators_code:instance", dims=1, fields=["a", "b"], distance="l2", model="m")
    assert {k: v for k, v in config.items() if k != "embed"} == {"dims": 1, "fields": ["a", "b"],
                                                                 "distance_type": "l2", "model": "m"}


def test_an_index_reference_gives_the_applications_config(module: Any) -> None:
    assert index_config(index="operators_code:INDEX") == module.INDEX
    assert index_config(index="operators_code:make_index")["embed"] is texts_to_vectors
    assert index_config(index="operators_code:INDEX", model="m")["model"] == "m"


@pytest.mark.parametrize(("options", "error", "message"), [
    ({}, InvalidInputError, "--embed module:attr or"),
    ({"embed": "operators_code:instance", "index": "operators_code:INDEX"}, InvalidInputError, "or the whole"),
    ({"embed": "operators_code:instance"}, InvalidInputError, "--dims"),
    ({"index": "operators_code:INDEX", "dims": 1}, InvalidInputError, "whole config"),
    ({"embed": "operators_code", "dims": 1}, InvalidInputError, "package.module:attribute"),
    ({"embed": ":x", "dims": 1}, InvalidInputError, "package.module:attribute"),
    ({"embed": "operators_code:absent", "dims": 1}, ConfigurationError, "no attribute 'absent'"),
    ({"embed": "no_module_named_so_42:x", "dims": 1}, ConfigurationError, "cannot import"),
    ({"embed": "operators_code:bad_factory", "dims": 1}, ConfigurationError, "returned int"),
    ({"index": "operators_code:instance"}, ConfigurationError, "not an IndexConfig"),
])
def test_bad_references_are_refused_by_name(module: Any, options: dict[str, Any], error: type[Exception],
                                            message: str) -> None:
    with pytest.raises(error, match=message):
        index_config(**options)


def test_resolve_imports_a_module_of_the_current_directory(tmp_path: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "operators_local_module.py").write_text("VALUE = 7\n")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "path", [p for p in sys.path if p not in ("", str(tmp_path))])
    try:
        assert resolve("operators_local_module:VALUE") == 7
    finally:
        sys.modules.pop("operators_local_module", None)
