"""A real PgBouncer in transaction pooling mode, started for the tests on a free port in front
of the test PostgreSQL server (Debian's package: ``apt-get install pgbouncer``)."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import tempfile
import time
from pathlib import Path

BINARY = os.environ.get("ANOLE_TEST_PGBOUNCER", "pgbouncer")


def pgbouncer_unavailable() -> str | None:
    """Why PgBouncer cannot run here, or None."""
    if shutil.which(BINARY) is None:
        return f"{BINARY} is not installed (apt-get install pgbouncer)"
    return None


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


class PgBouncer:
    """``pgbouncer`` in the foreground, pool_mode=transaction, trust auth, every database of
    `host`:`port` reachable through it under its own name."""

    def __init__(self, *, host: str, port: int, user: str, listen_port: int | None = None) -> None:
        # Its own directory under the system's temporary one: PgBouncer, started as root,
        # runs as postgres, which may not enter pytest's per-user temporary directories.
        self.directory = Path(tempfile.mkdtemp(prefix="anole-pgbouncer-"))
        self.host = host
        self.server_port = port
        self.user = user
        self.port = listen_port or free_port()
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self, timeout: float = 15.0) -> None:
        users = self.directory / "users.txt"
        users.write_text(f'"{self.user}" ""\n')
        ini = self.directory / "pgbouncer.ini"
        ini.write_text(
            "[databases]\n"
            f"* = host={self.host} port={self.server_port}\n"
            "[pgbouncer]\n"
            "listen_addr = 127.0.0.1\n"
            f"listen_port = {self.port}\n"
            "unix_socket_dir =\n"
            "auth_type = trust\n"
            f"auth_file = {users}\n"
            "pool_mode = transaction\n"
            "default_pool_size = 4\n"
            "max_client_conn = 200\n"
            "server_reset_query =\n"
            "ignore_startup_parameters = extra_float_digits,options\n"
            f"logfile = {self.directory / 'pgbouncer.log'}\n"
        )
        os.chmod(self.directory, 0o777)  # noqa: S103 - the test's own temporary directory
        for path in (users, ini):
            os.chmod(path, 0o644)
        command = [BINARY, str(ini)]
        if os.geteuid() == 0:  # PgBouncer refuses to run as root
            command[1:1] = ["-u", "postgres"]
        self.proc = subprocess.Popen(
            command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL
        )
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                error = self.proc.stderr.read().decode(errors="replace") if self.proc.stderr else ""
                raise RuntimeError(f"pgbouncer exited {self.proc.returncode}: {error}{self.log()}")
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=0.5).close()
                return
            except OSError:
                time.sleep(0.05)  # polling a port that a process opens: no event to wait on
        raise RuntimeError(f"pgbouncer did not listen on {self.port} within {timeout} s")

    def log(self) -> str:
        path = self.directory / "pgbouncer.log"
        return path.read_text(errors="replace") if path.exists() else ""

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=10)
        shutil.rmtree(self.directory, ignore_errors=True)
