"""A local Redis Cluster of three masters the tests start: three `redis-server --cluster-enabled
yes` on free ports in a temporary directory, joined by `redis-cli --cluster create`, torn down
at the end of the session.

`cluster_unavailable()` says why it cannot run here (no `redis-server` or `redis-cli`); the
fixture then skips, or fails when ANOLE_TEST_REQUIRE names redis.
"""

from __future__ import annotations

import contextlib
import shutil
import socket
import subprocess
import threading
import time
from pathlib import Path
from typing import Any

from tests.support.network import free_port

MASTERS = 3
START_TIMEOUT = 60.0


def cluster_unavailable() -> str | None:
    missing = [name for name in ("redis-server", "redis-cli") if shutil.which(name) is None]
    if missing:
        return (
            f"{' and '.join(missing)} not on PATH: the Redis Cluster tests start a local "
            "3-master cluster (apt-get install redis-server)"
        )
    return None


def _port_with_free_bus() -> int:
    """A free port whose cluster bus port (port + 10000) is free too."""
    for _ in range(200):
        port = free_port()
        if port + 10000 > 65535:
            continue
        with socket.socket() as sock:
            try:
                sock.bind(("127.0.0.1", port + 10000))
            except OSError:
                continue
        return port
    raise AssertionError("no free port pair for a cluster node")


class RedisCluster:
    """Three cluster masters on 127.0.0.1, in `directory`, each with `replicas` replicas
    (none by default) that take over when it fails."""

    def __init__(self, directory: Path, *, replicas: int = 0, node_timeout_ms: int = 5000) -> None:
        self.directory = directory
        self.replicas = replicas
        self.node_timeout_ms = node_timeout_ms
        self.ports: list[int] = []
        self.procs: list[subprocess.Popen[bytes]] = []

    def kill(self, port: int) -> None:
        """SIGKILL the node on `port` (a master's replica then takes over, if it has one)."""
        proc = self.procs[self.ports.index(port)]
        proc.kill()
        proc.wait(timeout=10)

    @property
    def urls(self) -> list[str]:
        return [f"redis://127.0.0.1:{port}/0" for port in self.ports]

    def start(self) -> None:
        self.directory.mkdir(parents=True, exist_ok=True)
        while len(self.ports) < MASTERS * (1 + self.replicas):
            port = _port_with_free_bus()
            if port not in self.ports:
                self.ports.append(port)
        for port in self.ports:
            self.procs.append(
                subprocess.Popen(
                    [
                        shutil.which("redis-server") or "redis-server",
                        *("--port", str(port), "--bind", "127.0.0.1", "--save", ""),
                        *("--appendonly", "no", "--cluster-enabled", "yes"),
                        *("--cluster-config-file", f"nodes-{port}.conf"),
                        *("--cluster-node-timeout", str(self.node_timeout_ms)),
                        *("--dir", str(self.directory)),
                    ],
                    stdout=subprocess.DEVNULL,
                    stderr=subprocess.DEVNULL,
                )
            )
        deadline = time.monotonic() + START_TIMEOUT
        for port, proc in zip(self.ports, self.procs, strict=True):
            while not self._answers(port):
                if proc.poll() is not None:
                    raise AssertionError(f"cluster node on port {port} exited at start")
                self._wait(deadline, f"cluster node on port {port} did not answer")
        subprocess.run(
            [
                shutil.which("redis-cli") or "redis-cli",
                "--cluster",
                "create",
                *(f"127.0.0.1:{port}" for port in self.ports),
                "--cluster-replicas",
                str(self.replicas),
                "--cluster-yes",
            ],
            check=True,
            capture_output=True,
            timeout=START_TIMEOUT,
        )
        for port in self.ports:
            while "cluster_state:ok" not in self._info(port):
                self._wait(deadline, f"the cluster did not reach cluster_state:ok on {port}")

    def wait_replicas_synced(self, timeout: float = START_TIMEOUT) -> None:
        """Until every replica's link to its master is up (a failover then loses nothing)."""
        deadline = time.monotonic() + timeout
        for port in self.ports:
            while True:
                info = self._client(port).info("replication")
                if info.get("role") != "slave" or info.get("master_link_status") == "up":
                    break
                self._wait(deadline, f"replica {port} did not sync with its master")

    @staticmethod
    def _wait(deadline: float, message: str) -> None:
        if time.monotonic() > deadline:
            raise AssertionError(message)
        threading.Event().wait(0.05)  # the nodes are starting or gossiping: poll them

    @staticmethod
    def _client(port: int) -> Any:
        import redis

        return redis.Redis(host="127.0.0.1", port=port, socket_connect_timeout=1)

    def _answers(self, port: int) -> bool:
        import redis

        try:
            return bool(self._client(port).ping())
        except redis.RedisError:
            return False

    def _info(self, port: int) -> str:
        import redis

        try:
            raw = self._client(port).execute_command("CLUSTER", "INFO")
        except redis.RedisError:
            return ""
        return raw.decode() if isinstance(raw, bytes) else str(raw)

    def node_of_slot(self, slot: int) -> int:
        """The port of the master that serves `slot`."""
        for start, end, master, *_ in self._client(self.ports[0]).execute_command(
            "CLUSTER", "SLOTS"
        ):
            if start <= slot <= end:
                return int(master[1])
        raise AssertionError(f"no node serves slot {slot}")

    def delete(self, pattern: str) -> None:
        """Delete the keys matching `pattern` on every node."""
        for port in self.ports:
            client = self._client(port)
            doomed = list(client.scan_iter(match=pattern, count=1000))
            for key in doomed:  # one by one: keys of different slots
                client.delete(key)

    def stop(self) -> None:
        for proc in self.procs:
            if proc.poll() is None:
                proc.terminate()
        for proc in self.procs:
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(timeout=10)
            if proc.poll() is None:
                proc.kill()
                proc.wait(timeout=10)
