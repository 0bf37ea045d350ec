"""OpenTelemetry: once `instrument` is called, every saver call (sync and async) and store call
is a span with its thread, namespace and operation, and is measured (duration, bytes sent,
retries after a refusal); `uninstrument` puts everything back; without it nothing of
OpenTelemetry is imported. Read with opentelemetry-sdk's in-memory exporter and reader."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from typing import Any

import pytest
import redis
import redis.asyncio
from helpers import config, new_checkpoint
from langchain_core.messages import AIMessage, HumanMessage
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import StatusCode

from streamsaver import AsyncStreamSaver, StreamSaver, StreamStore, telemetry
from streamsaver.checkpoints import programs


class Telemetry:
    def __init__(self) -> None:
        self.spans = InMemorySpanExporter()
        tracer_provider = TracerProvider()
        tracer_provider.add_span_processor(SimpleSpanProcessor(self.spans))
        self.reader = InMemoryMetricReader()
        telemetry.instrument(tracer_provider, MeterProvider(metric_readers=[self.reader]))

    def finished(self) -> list[Any]:
        return list(self.spans.get_finished_spans())

    def points(self, metric: str) -> dict[str, Any]:
        """The data points of `metric` by operation."""
        data = self.reader.get_metrics_data()
        found = {}
        for resource in data.resource_metrics if data else []:
            for scope in resource.scope_metrics:
                for m in scope.metrics:
                    if m.name == metric:
                        for point in m.data.data_points:
                            found[point.attributes["streamsaver.operation"]] = point
        return found


@pytest.fixture
def otel() -> Iterator[Telemetry]:
    recorded = Telemetry()
    yield recorded
    telemetry.uninstrument()


def test_every_saver_call_is_a_span_with_its_thread_namespace_and_operation(
    otel: Telemetry, client: redis.Redis, prefix: str
) -> None:
    saver = StreamSaver(client, prefix=prefix)
    saver.setup()
    checkpoint, versions = new_checkpoint({"n": 1})
    saved = saver.put(config("t1", "sub:1"), checkpoint, {"step": 1}, versions)
    saver.put_writes(saved, [("n", 2)], "task")
    assert saver.get_tuple(config("t1", "sub:1")) is not None
    assert len(list(saver.list(config("t1", None)))) == 1

    spans = {s.name: s for s in otel.finished()}
    assert {"streamsaver.put", "streamsaver.put_writes", "streamsaver.get_tuple", "streamsaver.list"} <= set(spans)
    put = spans["streamsaver.put"]
    assert put.attributes["langgraph.thread_id"] == "t1" and put.attributes["langgraph.checkpoint_ns"] == "sub:1"
    assert put.attributes["db.system.name"] == "redis" and put.attributes["streamsaver.round_trips"] == 1
    durations, sizes = otel.points("streamsaver.operation.duration"), otel.points("streamsaver.request.size")
    assert durations["put"].count == 1 and durations["get_tuple"].sum > 0
    assert sizes["put"].value > len(b"t1") and sizes["put_writes"].value > 0


async def test_the_async_saver_is_traced_by_the_same_wrap(
    otel: Telemetry, aclient: redis.asyncio.Redis, prefix: str
) -> None:
    saver = AsyncStreamSaver(aclient, prefix=prefix)
    await saver.setup()
    checkpoint, versions = new_checkpoint({"n": 1})
    await saver.aput(config("a1"), checkpoint, {"step": 1}, versions)
    assert await saver.aget_tuple(config("a1")) is not None

    names = [s.name for s in otel.finished()]
    assert "streamsaver.put" in names and "streamsaver.get_tuple" in names


def test_store_calls_are_spans_named_by_their_operation(otel: Telemetry, client: redis.Redis, prefix: str) -> None:
    store = StreamStore(client, prefix=prefix)
    store.setup()
    store.put(("users", "u1"), "k", {"text": "hi"})
    assert store.get(("users", "u1"), "k") is not None
    store.search(("users",))
    store.delete(("users", "u1"), "k")

    spans = {s.name: s for s in otel.finished()}
    assert {"streamsaver.store.put", "streamsaver.store.get", "streamsaver.store.search",
            "streamsaver.store.delete"} <= set(spans)
    assert spans["streamsaver.store.put"].attributes["langgraph.store.namespace"] == "users/u1"


def test_a_refused_append_sent_again_counts_as_a_retry_and_an_error_ends_the_span_as_one(
    otel: Telemetry, client: redis.Redis, prefix: str
) -> None:
    writer, other = StreamSaver(client, prefix=prefix), StreamSaver(client, prefix=prefix)
    writer.setup()
    messages: list[Any] = []
    previous: Any = None
    for step in range(4):
        if step == 3:
            other.delete_thread("t")  # what `writer` remembers is gone: its next delta is refused
        messages = [*messages, HumanMessage(f"q{step} " * 40, id=f"h{step}"),
                    AIMessage(f"a{step} " * 40, id=f"a{step}")]
        checkpoint, versions = new_checkpoint({"messages": messages}, previous)
        writer.put(config("t", "", previous["id"] if previous else None), checkpoint, {"step": step}, versions)
        previous = checkpoint
    with pytest.raises(ValueError, match="thread_id"):
        writer.get_tuple({"configurable": {}})

    assert otel.points("streamsaver.retries")["put"].value == 1
    failed = [s for s in otel.finished() if s.status.status_code == StatusCode.ERROR]
    assert [s.name for s in failed] == ["streamsaver.get_tuple"]
    assert failed[0].events[0].name == "exception"


def test_uninstrument_puts_the_programs_back_and_without_opentelemetry_nothing_needs_it() -> None:
    original = programs.put
    telemetry.instrument()
    assert programs.put is not original and telemetry.instrumented()
    telemetry.uninstrument()
    assert programs.put is original and not telemetry.instrumented()
    # A process where opentelemetry cannot be imported (None in sys.modules blocks the import):
    # the savers load and run their programs unwrapped; instrument() says what to install.
    code = (
        "import sys; sys.modules['opentelemetry'] = None\n"
        "from streamsaver import StreamSaver, AsyncStreamSaver, StreamStore, telemetry\n"
        "from streamsaver.checkpoints import programs\n"
        "assert programs.put.__module__ == 'streamsaver.checkpoints.programs'\n"
        "try:\n    telemetry.instrument()\nexcept Exception as exc:\n    print(type(exc).__name__, exc)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.startswith("ConfigurationError") and "streamsaver[otel]" in out
