"""A filtered listing of one thread and namespace pages by the last id it fetched, not by an
offset: checkpoints deleted between two pages (by `delete_for_runs`, `prune`, retention) shift
nothing past the page, so no checkpoint still there is skipped."""

from __future__ import annotations

import redis
from helpers import config, new_checkpoint

from streamsaver import StreamSaver
from streamsaver.checkpoints.listing import PAGE


def test_checkpoints_deleted_between_pages_skip_none_of_those_left(redis_url: str, prefix: str) -> None:
    client = redis.Redis.from_url(redis_url)
    saver = StreamSaver(client, prefix=prefix)
    saver.setup()
    total, newest = 2 * PAGE + 50, PAGE // 2
    parent, previous, saved = config("t"), None, []
    for i in range(total):
        checkpoint, versions = new_checkpoint({"i": i}, previous)
        run = "r-new" if i >= total - newest else "r-old"
        parent = saver.put(parent, checkpoint, {"kind": "k", "run_id": run}, versions)
        previous = checkpoint
        saved.append(parent["configurable"]["checkpoint_id"])

    listing = saver.list(config("t"), filter={"kind": "k"})
    first_page = [next(listing).config["configurable"]["checkpoint_id"] for _ in range(PAGE)]
    saver.delete_for_runs(["r-new"])  # the newest, all of them on the page already returned
    rest = [t.config["configurable"]["checkpoint_id"] for t in listing]

    newest_first = saved[::-1]
    assert first_page == newest_first[:PAGE]
    assert rest == newest_first[PAGE:]
    client.close()
