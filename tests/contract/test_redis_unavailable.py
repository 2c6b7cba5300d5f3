"""What a user reads when Redis is down: what happened to the connection, in their words, and
whether the job may exist. Against a closed port and a server (owned by the test) that
drops the connection once the command was sent or never answers; no Redis server needed."""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator
from typing import Any

import pytest

redis = pytest.importorskip("redis")
from redis.backoff import NoBackoff  # noqa: E402
from redis.retry import Retry  # noqa: E402

from anole_jobs.errors import StoreUnavailable  # noqa: E402
from anole_jobs.stores.redis.store import RedisStore  # noqa: E402
from tests.contract.redis_support import new_job  # noqa: E402
from tests.support.network import free_port  # noqa: E402


def store_at(port: int, **options: Any) -> RedisStore:
    client = redis.Redis(
        host="127.0.0.1", port=port, retry=Retry(NoBackoff(), 0), protocol=2, **options
    )
    return RedisStore(client, key_prefix="anole-test:unavailable:")


class Server:
    """Answers the connection handshake with +OK, then, on the first script call, either
    closes the connection ("drop") or keeps it open without a word ("mute")."""

    def __init__(self, mode: str) -> None:
        self.mode = mode
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self.script_seen = threading.Event()
        self.done = threading.Event()
        self.thread = threading.Thread(target=self.serve, daemon=True)
        self.thread.start()

    def serve(self) -> None:
        connection, _ = self.listener.accept()
        with connection:
            while not self.done.is_set():
                data = connection.recv(65536)
                if not data:
                    return
                if b"EVALSHA" in data.upper():
                    self.script_seen.set()
                    if self.mode == "drop":
                        return
                    self.done.wait(10)  # mute until the test ends
                    return
                commands = data.count(b"\r\n*") + data.startswith(b"*")
                connection.sendall(b"+OK\r\n" * commands)

    def close(self) -> None:
        self.done.set()
        self.listener.close()
        self.thread.join(10)


@pytest.fixture
def server(request: Any) -> Iterator[Server]:
    running = Server(request.param)
    yield running
    running.close()


def test_a_refused_connection_says_so_and_that_the_job_was_not_stored():
    port = free_port()
    with pytest.raises(StoreUnavailable) as caught:
        store_at(port).insert([new_job()])
    assert str(caught.value) == (
        f"enqueue failed: connection refused to 127.0.0.1:{port}; the job was not stored"
    )
    with pytest.raises(StoreUnavailable) as caught:
        store_at(port).get(1)
    assert str(caught.value) == (
        f"reading from Redis (HGETALL) failed: connection refused to 127.0.0.1:{port}"
    )


@pytest.mark.parametrize("server", ["drop"], indirect=True)
def test_a_connection_lost_after_sending_says_the_job_may_have_been_stored(server):
    with pytest.raises(StoreUnavailable) as caught:
        store_at(server.port).insert([new_job()])
    assert server.script_seen.is_set()
    message = str(caught.value)
    assert message.startswith(
        f"enqueue failed: the connection to 127.0.0.1:{server.port} broke after the command "
        "was sent"
    )
    assert message.endswith("; the job may have been stored")


@pytest.mark.parametrize("server", ["mute"], indirect=True)
def test_no_answer_within_the_timeout_says_the_job_may_have_been_stored(server):
    with pytest.raises(StoreUnavailable) as caught:
        store_at(server.port, socket_timeout=0.3).insert([new_job()])
    assert str(caught.value) == (
        f"enqueue failed: no answer from 127.0.0.1:{server.port} within the socket timeout; "
        "the job may have been stored"
    )
