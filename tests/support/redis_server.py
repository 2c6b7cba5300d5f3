"""A `redis-server` of the test's own, on a free port: for what a test must not do to the
shared server (kill it, restart it, flush its scripts, cut its clients)."""

from __future__ import annotations

import shutil
import subprocess
import threading
import time
from pathlib import Path

import pytest

from tests.support.network import free_port


def require_redis_server() -> None:
    """Skip the test when no `redis-server` binary is on PATH."""
    if shutil.which("redis-server") is None:
        pytest.skip("redis-server is not on PATH")


class RedisServer:
    """`redis-server` on a free port of 127.0.0.1, started, killed and restarted by the test.

    With `directory`, it persists to an append-only file there (`appendfsync always`), and a
    restart after `kill()` comes back with every write it acknowledged; without, it keeps
    nothing. Restarts reuse the port.
    """

    def __init__(self, directory: Path | None = None) -> None:
        self.directory = directory
        self.port = free_port()
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self, timeout: float = 15.0) -> None:
        if self.directory is not None:
            self.directory.mkdir(parents=True, exist_ok=True)
            persistence = ["--appendonly", "yes", "--appendfsync", "always"]
            persistence += ["--dir", str(self.directory)]
        else:
            persistence = ["--appendonly", "no"]
        self.proc = subprocess.Popen(
            [
                shutil.which("redis-server") or "redis-server",
                *("--port", str(self.port), "--bind", "127.0.0.1", "--save", ""),
                *persistence,
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        deadline = time.monotonic() + timeout
        while not self.answers():
            if self.proc.poll() is not None:
                raise AssertionError(f"redis-server on port {self.port} exited at start")
            if time.monotonic() > deadline:
                raise AssertionError(f"redis-server on port {self.port} did not answer")
            threading.Event().wait(0.05)  # the server is starting: poll its port

    def answers(self) -> bool:
        import redis

        try:
            return bool(redis.Redis.from_url(self.url, socket_connect_timeout=1).ping())
        except redis.RedisError:
            return False

    def kill(self) -> None:
        """kill -9: only what the append-only file holds survives."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
        if self.proc is not None:
            self.proc.wait(timeout=15)
