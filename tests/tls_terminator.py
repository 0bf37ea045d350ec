"""A TLS terminator for tests: accepts TLS on a local port and relays the plain bytes to a server.

The embedded redis-server is built without TLS; in production a TLS terminator (or a TLS build
of Redis) sits in front of it. This one is Python's `ssl` (OpenSSL) on an asyncio server in a
thread of its own, so the TLS tests need no system package beyond `openssl` for the certificate.
Leaving the context closes the listener and every relayed connection, and fails (instead of
hanging) if the thread does not stop.
"""

from __future__ import annotations

import asyncio
import contextlib
import ssl
import threading
from pathlib import Path
from types import TracebackType

from typing_extensions import Self

__all__ = ["TlsTerminator"]

STOP_TIMEOUT_S = 10.0


class TlsTerminator:
    """Listen with TLS on 127.0.0.1 (a free port) and relay every connection to `upstream_port`."""

    def __init__(self, cert: Path, key: Path, upstream_port: int) -> None:
        self._context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        self._context.load_cert_chain(cert, key)
        self._upstream_port = upstream_port
        self._loop = asyncio.new_event_loop()
        self._ready = threading.Event()
        self._thread = threading.Thread(target=self._run, name="tls-terminator", daemon=True)
        self._server: asyncio.Server | None = None
        self._relays: set[asyncio.Task[None]] = set()
        self._writers: set[asyncio.StreamWriter] = set()
        self._startup_error: BaseException | None = None
        self.port = 0

    def __enter__(self) -> Self:
        self._thread.start()
        self._ready.wait(STOP_TIMEOUT_S)
        if self._server is None:
            raise RuntimeError(f"the TLS terminator did not start: {self._startup_error!r}")
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(STOP_TIMEOUT_S)
        if self._thread.is_alive():
            raise RuntimeError(f"the TLS terminator did not stop within {STOP_TIMEOUT_S} s")

    def _run(self) -> None:
        asyncio.set_event_loop(self._loop)
        try:
            self._server = self._loop.run_until_complete(
                asyncio.start_server(self._accept, "127.0.0.1", 0, ssl=self._context)
            )
            self.port = self._server.sockets[0].getsockname()[1]
        except (OSError, ssl.SSLError) as exc:
            self._startup_error = exc
        finally:
            self._ready.set()
        try:
            if self._server is not None:
                self._loop.run_forever()
                self._loop.run_until_complete(self._shut())
        finally:
            self._loop.close()

    async def _shut(self) -> None:
        """Close the listener and drop every relayed connection; the relays then end by
        themselves (their reads see the connection lost), and one that does not is cancelled."""
        assert self._server is not None
        self._server.close()
        # abort, not close: a TLS close waits for the peer's close_notify, which a client
        # blocked in the test's own thread never sends.
        for writer in self._writers:
            writer.transport.abort()
        if self._relays:
            _, stuck = await asyncio.wait(self._relays, timeout=STOP_TIMEOUT_S / 2)
            for task in stuck:
                task.cancel()

    async def _accept(self, client_reader: asyncio.StreamReader, client_writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._relays.add(task)
        self._writers.add(client_writer)
        try:
            upstream_reader, upstream_writer = await asyncio.open_connection("127.0.0.1", self._upstream_port)
        except OSError:
            client_writer.close()
            return
        self._writers.add(upstream_writer)
        try:
            await asyncio.gather(_pipe(client_reader, upstream_writer), _pipe(upstream_reader, client_writer))
        finally:
            self._relays.discard(task)


async def _pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    # A side that goes away (reset, TLS alert) ends the relay: closing is all there is to do.
    with contextlib.suppress(ConnectionError, ssl.SSLError):
        while chunk := await reader.read(65536):
            writer.write(chunk)
            await writer.drain()
    writer.close()
