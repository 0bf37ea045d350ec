"""Deployments on one server keep to their own keys: a prefix that would nest its keys among
those of another deployment's key kinds (``app:full`` inside ``app``'s full view, whose rebuild
deletes ``app:full:*``) is refused, while other nested prefixes stay apart."""

from __future__ import annotations

import pytest
import redis
from helpers import config, new_checkpoint

from streamsaver import StreamSaver
from streamsaver.errors import ConfigurationError
from streamsaver.log.keys import KEY_KINDS
from streamsaver.ops.replay import Replayer


@pytest.mark.parametrize("kind", sorted(KEY_KINDS))
def test_a_prefix_nesting_a_key_kind_is_refused(client: redis.Redis, prefix: str, kind: str) -> None:
    for nested in (f"{prefix}:{kind}", f"{prefix}:tenant:{kind}", f"{prefix}:{kind}:more"):
        with pytest.raises(ConfigurationError, match="among those of the deployment"):
            StreamSaver(client, prefix=nested)
    assert not client.keys(f"{prefix}*")


@pytest.mark.parametrize("word", ["shadow", "verify.0a1b2c"])
def test_a_prefix_nesting_an_operator_tools_scratch_word_is_refused(
    client: redis.Redis, prefix: str, word: str
) -> None:
    """A shadow rebuild of ``P`` writes, then deletes, ``P:shadow:*``; a verify ``P:verify.<hex>:*``."""
    for nested in (f"{prefix}:{word}", f"{prefix}:{word}:more"):
        with pytest.raises(ConfigurationError, match="scratch keys"):
            StreamSaver(client, prefix=nested)
    assert not client.keys(f"{prefix}*")


def test_a_nested_prefix_of_another_word_survives_a_rebuild_of_the_outer_deployment(
    client: redis.Redis, prefix: str
) -> None:
    outer, inner = StreamSaver(client, prefix=prefix), StreamSaver(client, prefix=f"{prefix}:tenant")
    outer.setup()
    inner.setup()
    checkpoint, versions = new_checkpoint({"x": 1})
    saved = inner.put(config("t"), checkpoint, {}, versions)
    before = inner.get_tuple(saved)

    Replayer.open(client, prefix).rebuild(["full", "shallow"])

    assert before is not None and inner.get_tuple(saved) == before
