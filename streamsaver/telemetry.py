"""OpenTelemetry for the savers and the store: a span per call and three metrics, opt-in.

``pip install 'streamsaver[otel]'`` (``opentelemetry-api``) and call `instrument` once at
startup, after configuring your OpenTelemetry SDK (or pass providers). Until then nothing of
this runs and ``opentelemetry`` is never imported: the savers' calls go straight to their
drivers, with no check on the way.

How: every saver and store call is a program of the domain cores
(`streamsaver.checkpoints.programs`, `streamsaver.store.programs`) that the sync and async
shells hand to their driver. `instrument` replaces those program functions (the shells look
them up on their module at each call) with wrappers that return the same program inside a
traced one; `uninstrument` puts the originals back. So the sync and the async savers, full and
shallow, are traced by one wrap, and the drivers are untouched. The traced program passes every
step and reply through unchanged and:

* opens a span ``streamsaver.<operation>`` (``put``, ``put_writes``, ``get_tuple``, ``list``,
  ``delete_thread``, ..., ``store.put``, ``store.get``, ``store.search``, ``store.batch``, ...)
  when the program starts and ends it when the program ends (for ``list``: when the caller stops
  iterating), with attributes ``db.system.name`` (``redis``), ``streamsaver.operation``,
  ``langgraph.thread_id`` and ``langgraph.checkpoint_ns`` (checkpoint calls naming them),
  ``langgraph.store.namespace`` (the first op's, labels joined by ``/``) and
  ``streamsaver.store.ops`` (store calls), and ``streamsaver.round_trips``; an error it raises is
  recorded on the span, which ends with an error status;
* records ``streamsaver.operation.duration`` (histogram, seconds), ``streamsaver.request.size``
  (counter, bytes of command arguments sent) and ``streamsaver.retries`` (counter: requests sent
  again after the server refused one, e.g. a delta whose base another process replaced, or slots
  that moved), each with the ``streamsaver.operation`` attribute. (A script reloaded after
  ``NOSCRIPT`` is resent inside the driver and not counted.)

Cost when instrumented: a generator frame around each program and a span (a no-op span while no
SDK is configured); nothing at all when not.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Generator, Sequence
from dataclasses import dataclass
from functools import wraps
from importlib import import_module
from typing import Any

from streamsaver.errors import ConfigurationError

__all__ = ["CHECKPOINT_OPERATIONS", "instrument", "instrumented", "uninstrument"]

CHECKPOINT_OPERATIONS = {
    "put": "put", "put_writes": "put_writes", "get_tuple": "get_tuple", "list_checkpoints": "list",
    "delete_thread": "delete_thread", "copy_thread": "copy_thread", "prune": "prune", "retain": "retain",
    "delete_for_runs": "delete_for_runs", "delta_channel_history": "delta_channel_history",
}
"""Program function of `streamsaver.checkpoints.programs` -> the operation its span names."""

_ORIGINALS: dict[tuple[str, str], Callable[..., Any]] = {}


@dataclass(frozen=True)
class _Instruments:
    tracer: Any
    duration: Any
    size: Any
    retries: Any
    error_status: Any


def _instruments(tracer_provider: Any, meter_provider: Any) -> _Instruments:
    try:
        trace = import_module("opentelemetry.trace")
        metrics = import_module("opentelemetry.metrics")
    except ImportError as exc:
        raise ConfigurationError("streamsaver.telemetry needs opentelemetry-api: pip install 'streamsaver[otel]'") \
            from exc
    from streamsaver._version import __version__

    tracer = trace.get_tracer("streamsaver", __version__, tracer_provider=tracer_provider)
    meter = metrics.get_meter("streamsaver", __version__, meter_provider=meter_provider)
    return _Instruments(
        tracer,
        meter.create_histogram("streamsaver.operation.duration", unit="s",
                               description="how long a saver or store call took, round trips included"),
        meter.create_counter("streamsaver.request.size", unit="By",
                             description="bytes of command arguments a call sent"),
        meter.create_counter("streamsaver.retries", description="requests sent again after a refusal"),
        trace.Status(trace.StatusCode.ERROR),
    )


def _step_size(step: Any) -> tuple[int, int]:
    """(round trips, argument bytes) of a program step (a `Call`, a pipeline list, or other)."""
    steps = getattr(step, "steps", step if isinstance(step, list) else None)
    if steps is None:
        return 0, 0
    size = 0
    for command in steps:
        for arg in getattr(command, "command", command):
            size += len(arg) if isinstance(arg, (bytes, str)) else 8
    return 1, size


def _traced(
    program: Generator[Any, Any, Any], operation: str, attributes: dict[str, Any], ins: _Instruments
) -> Generator[Any, Any, Any]:
    """`program`, its steps and replies passed through unchanged, inside a span."""
    span = ins.tracer.start_span(f"streamsaver.{operation}", attributes=attributes)
    started, trips, size, retries, refused = time.perf_counter(), 0, 0, 0, False
    reply: Any = None
    thrown: BaseException | None = None
    failure: BaseException | None = None
    try:
        while True:
            try:
                step = program.send(reply) if thrown is None else program.throw(thrown)
            except StopIteration as stop:
                return stop.value
            thrown, reply = None, None
            more, sent = _step_size(step)
            retries += more if refused else 0
            trips, size, refused = trips + more, size + sent, False
            try:
                reply = yield step
            except GeneratorExit:
                program.close()
                raise
            except Exception as exc:  # noqa: BLE001 - what the driver raises into the program is the program's
                thrown, refused = exc, True
    except BaseException as exc:
        failure = exc
        raise
    finally:
        _finish(span, ins, operation, failure, time.perf_counter() - started, trips, size, retries)


def _finish(span: Any, ins: _Instruments, operation: str, failure: BaseException | None, seconds: float,
            trips: int, size: int, retries: int) -> None:
    labels = {"streamsaver.operation": operation}
    span.set_attribute("streamsaver.round_trips", trips)
    if failure is not None and not isinstance(failure, GeneratorExit):
        span.record_exception(failure)
        span.set_status(ins.error_status)
        labels["error.type"] = type(failure).__name__
    span.end()
    ins.duration.record(seconds, labels)
    ins.size.add(size, labels)
    if retries:
        ins.retries.add(retries, labels)


def _checkpoint_attributes(operation: str, args: Sequence[Any]) -> dict[str, Any]:
    attributes: dict[str, Any] = {"db.system.name": "redis", "streamsaver.operation": operation}
    config = args[1] if len(args) > 1 and isinstance(args[1], dict) else None
    configurable = (config or {}).get("configurable") or {}
    if isinstance(configurable.get("thread_id"), str):
        attributes["langgraph.thread_id"] = configurable["thread_id"]
    elif len(args) > 1 and isinstance(args[1], str):
        attributes["langgraph.thread_id"] = args[1]  # delete_thread, copy_thread (source)
    if isinstance(configurable.get("checkpoint_ns"), str):
        attributes["langgraph.checkpoint_ns"] = configurable["checkpoint_ns"]
    return attributes


def _store_operation(ops: Sequence[Any]) -> tuple[str, dict[str, Any]]:
    kinds = {type(op).__name__ for op in ops}
    names = {"PutOp": "put", "GetOp": "get", "SearchOp": "search", "ListNamespacesOp": "list_namespaces"}
    kind = names.get(next(iter(kinds)), "batch") if len(kinds) == 1 and len(ops) == 1 else "batch"
    if kind == "put" and getattr(ops[0], "value", 0) is None:
        kind = "delete"
    operation = f"store.{kind}"
    attributes: dict[str, Any] = {"db.system.name": "redis", "streamsaver.operation": operation,
                                  "streamsaver.store.ops": len(ops)}
    namespace = getattr(ops[0], "namespace", None) or getattr(ops[0], "namespace_prefix", None) if ops else None
    if namespace:
        attributes["langgraph.store.namespace"] = "/".join(namespace)
    return operation, attributes


def _wrap_checkpoint(original: Callable[..., Any], operation: str, ins: _Instruments) -> Callable[..., Any]:
    @wraps(original)
    def traced(*args: Any, **kwargs: Any) -> Any:
        return _traced(original(*args, **kwargs), operation, _checkpoint_attributes(operation, args), ins)

    return traced


def _wrap_store(original: Callable[..., Any], ins: _Instruments) -> Callable[..., Any]:
    @wraps(original)
    def traced(core: Any, ops: Any, *args: Any, **kwargs: Any) -> Any:
        listed = list(ops)
        operation, attributes = _store_operation(listed)
        return _traced(original(core, listed, *args, **kwargs), operation, attributes, ins)

    return traced


def instrument(tracer_provider: Any = None, meter_provider: Any = None) -> None:
    """Trace and measure every saver and store call from now on (see the module docstring);
    the providers default to OpenTelemetry's global ones. Calling it again re-instruments with
    the providers given.

    Raises:
        ConfigurationError: opentelemetry-api is not installed.
    """
    ins = _instruments(tracer_provider, meter_provider)
    uninstrument()
    checkpoint_programs = import_module("streamsaver.checkpoints.programs")
    store_programs = import_module("streamsaver.store.programs")
    for name, operation in CHECKPOINT_OPERATIONS.items():
        original = getattr(checkpoint_programs, name)
        _ORIGINALS[checkpoint_programs.__name__, name] = original
        setattr(checkpoint_programs, name, _wrap_checkpoint(original, operation, ins))
    _ORIGINALS[store_programs.__name__, "batch"] = store_programs.batch
    setattr(store_programs, "batch", _wrap_store(store_programs.batch, ins))  # noqa: B010 - mypy: a module's function


def uninstrument() -> None:
    """Put the program functions back as they were (no tracing, no cost)."""
    for (module, name), original in _ORIGINALS.items():
        setattr(import_module(module), name, original)
    _ORIGINALS.clear()


def instrumented() -> bool:
    """Whether `instrument` is in effect."""
    return bool(_ORIGINALS)
