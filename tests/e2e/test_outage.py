"""A store that is down: `runjobs` refuses to start against it (exit 1, one line), and once
running it rides out an outage quietly and resumes by itself.

The outages are real: a closed port; a `redis-server` the test starts on a free port, stops
and starts again; for PostgreSQL a TCP proxy the test controls in front of the shared server
(dropping it cuts every connection and closes each new one at once).
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Iterator

import pytest
from django.conf import settings as django_settings

from tests.e2e.conftest import Backend, Worker, _backend
from tests.support.network import TcpProxy, free_port
from tests.support.redis_server import RedisServer, require_redis_server

pytestmark = pytest.mark.e2e

OUTAGE = 8.0  # seconds each outage lasts
#: At most this many lines while the store is down (the issue: "a handful per minute").
MAX_LINES = 5


def lines_since(worker: Worker, start: int) -> list[str]:
    return [line for line in worker.output()[start:].splitlines() if line.strip()]


def wait_completed(worker: Worker, job_id: int, timeout: float, *, since: int = 0) -> None:
    # `since`: a restarted server without persistence hands out job ids from 1 again.
    worker.wait_output(
        f"job {job_id} e2e.noop attempt 1/3 on default: completed", timeout, since=since
    )


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
    restarted = len(worker.output())
    (after,) = enqueue()  # type: ignore[operator]
    # Work resumes by itself: within the back-off cap (10 s) and a claim.
    wait_completed(worker, after, 40, since=restarted)
    output = worker.output()
    # One line when it went down, one when it came back: not one per thread or per try.
    assert output.count("store unreachable") == 1, output
    assert output.count("store reachable again after") == 1, output


# -- start-up ------------------------------------------------------------------------------------
@pytest.fixture(
    params=[
        pytest.param("postgres", marks=pytest.mark.needs("postgres")),
        pytest.param("redis", marks=pytest.mark.needs("redis")),
        # The cluster store answers some reads without a round trip: its probe must not.
        pytest.param("redis_cluster"),
    ]
)
def server_backend(request, tmp_path) -> Iterator[Backend]:
    """The stores with a server that can be down (a SQLite file has none)."""
    yield from _backend(request, request.param, tmp_path)


def test_runjobs_exits_1_with_one_line_when_the_store_does_not_answer(
    server_backend: Backend,
) -> None:
    backend = server_backend
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
    require_redis_server()
    server = RedisServer()
    server.start()
    yield server
    server.kill()


# The two outages below last OUTAGE seconds each: they belong to the chaos tier (stores cut
# off), which `make test` leaves out and CI runs.
@pytest.mark.chaos
@pytest.mark.needs("redis")
def test_runjobs_rides_out_a_redis_outage(request, tmp_path, redis_server: RedisServer) -> None:
    backend_iter = _backend(request, "redis", tmp_path)
    backend = next(backend_iter)
    try:
        backend.env["ANOLE_E2E_REDIS"] = redis_server.url
        worker = backend.spawn()
        worker.wait_ready()
        ride_out(worker, redis_server.kill, redis_server.start, lambda: backend.enqueue("noop"))
    finally:
        with contextlib.suppress(StopIteration):
            next(backend_iter)


@pytest.mark.chaos
def test_runjobs_rides_out_a_postgres_outage(pg_backend: Backend) -> None:
    proxy = TcpProxy((django_settings.PG_HOST, int(django_settings.PG_PORT)))
    proxy.start()
    try:
        worker = pg_backend.spawn(PG_PORT=str(proxy.port))
        worker.wait_ready()
        ride_out(worker, proxy.drop, proxy.restore, lambda: pg_backend.enqueue("noop"))
    finally:
        proxy.close()
