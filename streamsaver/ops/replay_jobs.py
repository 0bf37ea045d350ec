"""Replay with several processes: each folds the logs of its share of the partitions.

One replayer is one Python process, so its client side (decoding and projecting events) uses one
core. `replay_in_jobs` starts `jobs` processes; job ``j`` folds the partitions ``p`` with
``p % jobs == j``. Threads never span partitions and each thread's events are applied in log
order by the one job that owns it, with positions recorded in the same script, so the result is
the same as one replayer's, and a run stopped anywhere resumes (``keep=True``) like one.

    stats = replay_in_jobs("redis://...", "streamsaver", ["full", "shallow"], jobs=4)
"""

from __future__ import annotations

import multiprocessing
import queue
from collections.abc import Sequence
from typing import Any

from redis.exceptions import RedisError

from projectors.domain import CHECKPOINTS
from streamsaver.drivers.cluster import connect
from streamsaver.errors import InvalidInputError, ReplayJobError, StreamSaverError
from streamsaver.log.domain import Domain
from streamsaver.log.keys import ViewName
from streamsaver.ops.replay import Progress, Replayer, ReplayStats

__all__ = ["replay_in_jobs"]


def _job(
    url: str, prefix: str, views: Sequence[ViewName], page: int, jobs: int, job: int, out: Any, domain: Domain
) -> None:
    """One job's whole run, in its own process; reports ``("events", n)`` as it goes, then
    ``("done", threads, events, applied)`` or ``("error", text)``."""
    try:
        with connect(url) as client:
            replayer = Replayer.open(client, prefix, page=page, domain=domain)
            mine = range(job, replayer.keyspace.partitions, jobs)
            stats = replayer.replay(views, partitions=mine, progress=lambda n: out.put(("events", n)))
        out.put(("done", stats.threads, stats.events, stats.applied))
    except (StreamSaverError, RedisError) as exc:  # the parent raises it, with the others stopped
        out.put(("error", f"{type(exc).__name__}: {exc}"))


def replay_in_jobs(
    url: str,
    prefix: str,
    views: Sequence[str],
    *,
    jobs: int,
    page: int = 500,
    keep: bool = False,
    progress: Progress | None = None,
    domain: Domain = CHECKPOINTS,
) -> ReplayStats:
    """Fold every thread log of the deployment at `url` under `prefix` into `views` with `jobs`
    processes. Unless `keep`, the views are dropped first (by this process, before any job
    starts), as `Replayer.rebuild` does. Jobs are started with the "spawn" method, which
    imports the caller's ``__main__`` in each job: call this under ``if __name__ == "__main__"``.
    `domain` names whose logs and views (default: checkpoints).

    Raises:
        InvalidInputError: `jobs` below 1, or an unknown view.
        ConfigurationError: nothing was ever set up under `prefix`.
        ReplayJobError: a job failed (the others are stopped; run again with ``keep=True`` to
            resume where they stopped).
    """
    if jobs < 1:
        raise InvalidInputError(f"jobs must be at least 1, not {jobs}")
    names = [domain.view_of(v) for v in views]
    with connect(url) as client:
        replayer = Replayer.open(client, prefix, page=page, domain=domain)
        if not keep:
            replayer.drop(names)
    context = multiprocessing.get_context("spawn")
    out = context.Queue()
    workers = [
        context.Process(target=_job, args=(url, prefix, names, page, jobs, j, out, domain), daemon=True)
        for j in range(jobs)
    ]
    try:
        for worker in workers:
            worker.start()
        return _collect(out, workers, progress)
    finally:
        for worker in workers:
            if worker.is_alive():
                worker.terminate()
            if worker.pid is not None:
                worker.join()


def _collect(out: Any, workers: list[Any], progress: Progress | None) -> ReplayStats:
    """Read the jobs' reports until every job is done; raise the first failure."""
    total, running = ReplayStats(), len(workers)
    while running:
        try:
            message = out.get(timeout=1.0)
        except queue.Empty:
            if dead := [w for w in workers if w.exitcode not in (None, 0)]:
                raise ReplayJobError(f"a replay job died with exit code {dead[0].exitcode}") from None
            continue
        if message[0] == "events" and progress is not None:
            progress(message[1])
        elif message[0] == "done":
            running -= 1
            total.threads += message[1]
            total.events += message[2]
            total.applied += message[3]
        elif message[0] == "error":
            raise ReplayJobError(f"a replay job failed: {message[1]}")
    return total
