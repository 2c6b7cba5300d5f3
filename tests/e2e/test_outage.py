"""A store that is down: `runjobs` refuses to start against it (exit 1, one line), and once
running it rides out an outage quietly and resumes by itself.

The outages are real: a closed port; a `redis-server` the test starts on a free port, stops
and starts again; for PostgreSQL a TCP proxy the test controls in front of the shared server
(stopping it drops every connection and refuses new ones).
"""

from __future__ import annotations

import contextlib
import shutil
import socket
import subprocess
import threading
import time
from collections.abc import Iterator

import pytest

from tests.e2e.conftest import Backend, Worker, wait_until

pytestmark = pytest.mark.e2e

OUTAGE = 15.0  # seconds each outage lasts
#: At most this many lines while the store is down (the issue: "a handful per minute").
MAX_LINES = 5


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class Proxy:
    """A TCP proxy on a free port to `upstream`; `stop()` drops every connection and refuses
    new ones until `start()`."""

    def __init__(self, upstream: tuple[str, int]) -> None:
        self.upstream = upstream
        self.port = free_port()
        self._sockets: set[socket.socket] = set()
        self._lock = threading.Lock()
        self._listener: socket.socket | None = None

    def start(self) -> None:
        listener = socket.socket()
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind(("127.0.0.1", self.port))
        listener.listen(64)
        self._listener = listener
        threading.Thread(target=self._accept, args=(listener,), daemon=True).start()

    def stop(self) -> None:
        listener, self._listener = self._listener, None
        if listener is not None:
            # shutdown() wakes the thread blocked in accept(); close() alone would not, and
            # one more connection would slip through.
            with contextlib.suppress(OSError):
                listener.shutdown(socket.SHUT_RDWR)
            listener.close()
        with self._lock:
            sockets, self._sockets = self._sockets, set()
        for sock in sockets:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
            sock.close()

    def _accept(self, listener: socket.socket) -> None:
        while True:
            try:
                client, _ = listener.accept()
            except OSError:
                return
            if self._listener is not listener:  # stopped meanwhile
                client.close()
                return
            try:
                server = socket.create_connection(self.upstream, timeout=5)
            except OSError:
                client.close()
                continue
            server.settimeout(None)
            with self._lock:
                self._sockets |= {client, server}
            for source, target in ((client, server), (server, client)):
                threading.Thread(target=self._pump, args=(source, target), daemon=True).start()

    def _pump(self, source: socket.socket, target: socket.socket) -> None:
        try:
            while data := source.recv(65536):
                target.sendall(data)
        except OSError:
            pass
        for sock in (source, target):
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)


class RedisServer:
    """A `redis-server` of the test's own, on a free port, without persistence."""

    def __init__(self) -> None:
        self.port = free_port()
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> None:
        self.proc = subprocess.Popen(
            [
                "redis-server",
                *("--port", str(self.port), "--bind", "127.0.0.1"),
                *("--save", "", "--appendonly", "no"),
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        wait_until(self._answers, f"redis-server on port {self.port}", 15)

    def _answers(self) -> bool:
        import redis

        try:
            return bool(redis.Redis(port=self.port, socket_connect_timeout=1).ping())
        except redis.RedisError:
            return False

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(timeout=15)


def lines_since(worker: Worker, start: int) -> list[str]:
    return [line for line in worker.output()[start:].splitlines() if line.strip()]


def wait_completed(worker: Worker, job_id: int, timeout: float) -> None:
    worker.wait_output(f"job {job_id} e2e.noop attempt 1/3 on default: completed", timeout)


def ride_out(worker: Worker, stop: object, start: object, enqueue: object) -> None:
    """Stop the server, hold the outage, start it again; check the lines and the recovery."""
    (before,) = enqueue()  # type: ignore[operator]
    wait_completed(worker, before, 30)
    mark = len(worker.output())
    stop()  # type: ignore[operator]
    worker.wait_output("store unreachable", 30)
    threading.Event().wait(OUTAGE)  # the outage lasts: this is the scenario, not a wait on it
    during = lines_since(worker, mark)
    assert len(during) <= MAX_LINES, "\n".join(during)
    assert not any("Traceback" in line for line in during), "\n".join(during)
    assert worker.proc.poll() is None, "runjobs exited during the outage"
    start()  # type: ignore[operator]
    (after,) = enqueue()  # type: ignore[operator]
    # Work resumes by itself: within the back-off cap (10 s) and a claim.
    wait_completed(worker, after, 40)
    output = worker.output()
    # One line when it went down, one when it came back: not one per thread or per try.
    assert output.count("store unreachable") == 1, output
    assert output.count("store reachable again after") == 1, output


# -- start-up ------------------------------------------------------------------------------------
def test_runjobs_exits_1_with_one_line_when_the_store_does_not_answer(backend: Backend) -> None:
    if backend.name == "sqlite":
        pytest.skip("a SQLite file has no server to be down")
    port = free_port()  # nothing listens there
    target = (
        {"PG_PORT": str(port)}
        if backend.name == "postgres"
        else {"REDIS": f"redis://127.0.0.1:{port}/0"}
    )
    began = time.monotonic()
    worker = backend.spawn(STARTUP_TIMEOUT="2", **target)
    status = worker.wait(timeout=30)
    took = time.monotonic() - began
    output = worker.output()
    assert status == 1, output
    assert took < 2 + 10, f"took {took:.1f} s to give up"
    (line,) = [line for line in output.splitlines() if "did not answer" in line]
    assert "within 2 s" in line and "STARTUP_TIMEOUT" in line, line
    assert "Traceback" not in output, output
    assert "running" not in output, "it started workers against a store that is down"


# -- outages while running -----------------------------------------------------------------------
@pytest.fixture
def redis_server() -> Iterator[RedisServer]:
    if shutil.which("redis-server") is None:
        pytest.skip("redis-server is not installed")
    server = RedisServer()
    server.start()
    yield server
    server.stop()


@pytest.mark.needs("redis")
def test_runjobs_rides_out_a_redis_outage(request, tmp_path, redis_server: RedisServer) -> None:
    from tests.e2e.conftest import _backend

    backend_iter = _backend(request, "redis", tmp_path)
    backend = next(backend_iter)
    try:
        backend.env["ANOLE_E2E_REDIS"] = redis_server.url
        worker = backend.spawn()
        worker.wait_ready()
        ride_out(worker, redis_server.stop, redis_server.start, lambda: backend.enqueue("noop"))
    finally:
        with contextlib.suppress(StopIteration):
            next(backend_iter)


def test_runjobs_rides_out_a_postgres_outage(pg_backend: Backend) -> None:
    proxy = Proxy(("127.0.0.1", 5432))
    proxy.start()
    try:
        worker = pg_backend.spawn(PG_PORT=str(proxy.port))
        worker.wait_ready()
        ride_out(worker, proxy.stop, proxy.start, lambda: pg_backend.enqueue("noop"))
    finally:
        proxy.stop()
