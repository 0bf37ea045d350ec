"""A TCP proxy in front of Redis that drops connections at chosen moments of a call.

`DroppingProxy` relays bytes both ways and, for the next `drops` requests that contain `marker`
(e.g. ``b"EVALSHA"``), closes the client's connection at one of three moments:

* ``"before"``: the request never reaches the server;
* ``"midway"``: half the request reaches the server (which discards a partial command);
* ``"after"``: the whole request reaches the server, which runs it; its reply is thrown away.

The client sees a dropped connection each time and (redis-py retries on ConnectionError by
default) sends the call again on a new connection.
"""

from __future__ import annotations

import contextlib
import socket
import threading
from types import TracebackType
from typing import Literal

from typing_extensions import Self

Moment = Literal["before", "midway", "after"]


class DroppingProxy:
    def __init__(self, upstream_port: int, *, marker: bytes, moment: Moment) -> None:
        self.upstream_port = upstream_port
        self.marker = marker
        self.moment = moment
        self.drops = 0
        self.dropped = 0
        self._lock = threading.Lock()
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port = self._listener.getsockname()[1]
        self._closed = False

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def __enter__(self) -> Self:
        threading.Thread(target=self._accept, daemon=True).start()
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self._closed = True
        self._listener.close()

    def _take_drop(self) -> bool:
        with self._lock:
            if self.drops > 0:
                self.drops -= 1
                self.dropped += 1
                return True
            return False

    def _accept(self) -> None:
        while not self._closed:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            upstream = socket.create_connection(("127.0.0.1", self.upstream_port))
            doomed = threading.Event()
            threading.Thread(target=self._requests, args=(client, upstream, doomed), daemon=True).start()
            threading.Thread(target=self._replies, args=(client, upstream, doomed), daemon=True).start()

    @staticmethod
    def _close(*socks: socket.socket) -> None:
        for sock in socks:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
            sock.close()

    def _requests(self, client: socket.socket, upstream: socket.socket, doomed: threading.Event) -> None:
        try:
            while data := client.recv(1 << 16):
                if self.marker in data and self._take_drop():
                    if self.moment == "after":
                        doomed.set()
                        upstream.sendall(data)
                        continue
                    if self.moment == "midway":
                        upstream.sendall(data[: len(data) // 2])
                    self._close(client, upstream)
                    return
                upstream.sendall(data)
        except OSError:
            pass
        self._close(client, upstream)

    def _replies(self, client: socket.socket, upstream: socket.socket, doomed: threading.Event) -> None:
        try:
            while data := upstream.recv(1 << 16):
                if doomed.is_set():
                    break
                client.sendall(data)
        except OSError:
            pass
        self._close(client, upstream)
