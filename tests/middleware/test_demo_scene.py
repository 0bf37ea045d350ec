"""The demo's middleware scene shows what it says: a semantic cache hit, a tool cache hit, an
injected memory, a routed request and the audit events, read back from Redis."""

from __future__ import annotations

import io

import redis

from streamsaver import StreamSaver
from streamsaver.demo.agent_middleware import THREAD, middleware_scene
from streamsaver.demo.show import Show
from streamsaver.middleware import read_audit


def test_the_scene_shows_every_middleware_at_work(client: redis.Redis, saver: StreamSaver) -> None:
    out = io.StringIO()
    facts = middleware_scene(client, saver, Show(out))
    assert facts.answers[1] == facts.answers[0] and facts.cache_hits == 1
    assert facts.answers[3] == facts.answers[2] and (facts.tool_cache_hits, facts.tool_runs) == (1, 1)
    assert "favourite food is ramen" in facts.answers[4]
    assert facts.answers[5].startswith("The billing desk")
    assert facts.model_calls == 6
    agents = StreamSaver(client, prefix=facts.prefix)
    agents.setup()
    assert facts.prefix == saver.core.keys.prefix + "-agents"
    assert client.xlen(agents.core.keys.thread(THREAD).log) > 0  # the audit sits beside checkpoints
    stored = [(e["type"], e["cache"], e["route"]) for e in read_audit(agents, THREAD)]
    assert stored == list(facts.audit)
    assert ("ModelCalled", "hit", "") in stored and ("ToolCalled", "hit", "") in stored
    assert stored[-1] == ("ModelCalled", "", "billing")
    printed = out.getvalue()
    assert "Agent middleware" in printed and "memory injected for alice: - favourite food is ramen" in printed
