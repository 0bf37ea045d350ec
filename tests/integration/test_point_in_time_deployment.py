"""Point in time for a whole deployment: ``export --until`` then ``import`` under a new prefix
gives every thread exactly as it was at that moment, and no thread born later.

The export keeps each log only up to the moment; the import restores those entries under their
original ids and folds the views from them, so the copy is the deployment as the logs said then.
"""

from __future__ import annotations

from pathlib import Path

import redis
from langgraph.types import Command
from test_verify_and_restore import (
    Moment,
    approval_graph,
    cli,
    config,
    history_facts,
    let_the_server_clock_pass,
    moment,
)

from streamsaver import StreamSaver
from streamsaver.ops.transfer import import_logs
from streamsaver.ops.verify import verify

THREADS = ("alpha", "beta", "gamma")


def _millis(entry_id: str) -> int:
    return int(entry_id.split("-")[0])


def test_a_deployment_exported_until_a_moment_and_imported_is_every_thread_as_it_was_then(
    client: redis.Redis, redis_url: str, prefix: str, sync_saver: StreamSaver, tmp_path: Path
) -> None:
    graph = approval_graph(sync_saver)
    for thread_id in THREADS:
        graph.invoke({"trail": ["in"]}, config(thread_id))
    graph.invoke(Command(resume="yes"), config("beta"))
    then: dict[str, Moment] = {t: moment(client, sync_saver, graph, t) for t in THREADS}
    last = max((m.last_entry for m in then.values()), key=_millis)
    let_the_server_clock_pass(client, last)

    graph.invoke(Command(resume="no"), config("alpha"))
    graph.invoke({"trail": ["again"]}, config("beta"))
    graph.invoke({"trail": ["in"]}, config("born-later"))

    path = tmp_path / "then.jsonl.gz"
    assert cli(redis_url, prefix, "export", str(path), "--until", str(_millis(last)), "--json") == 0
    copy = f"{prefix}.then"
    import_logs(client, path, prefix=copy)

    restored = StreamSaver(client, prefix=copy)
    restored_graph = approval_graph(restored)
    for thread_id, was in then.items():
        assert history_facts(list(restored_graph.get_state_history(config(thread_id)))) == history_facts(was.history)
        assert restored.get_tuple(config(thread_id)) == was.latest
    assert restored.get_tuple(config("born-later")) is None
    assert sync_saver.get_tuple(config("born-later")) is not None
    assert verify(client, copy).matches
    # the copy goes on as a deployment of its own: resume the interrupted alpha there
    assert restored_graph.invoke(Command(resume="later"), config("alpha"))["trail"] == ["in", "a", "b:later"]
    assert graph.get_state(config("alpha")).values["trail"] == ["in", "a", "b:no"]
