"""A free TCP port, and a TCP proxy a test owns in front of a server (PostgreSQL, Redis) to cut
it off without touching the server, which other projects may share."""

from __future__ import annotations

import contextlib
import socket
import threading


def free_port() -> int:
    """A port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class TcpProxy:
    """A TCP proxy on a free port of 127.0.0.1 in front of `target`.

    `drop()` cuts every open connection and closes each new one at once (a full outage as the
    client sees it); `restore()` forwards again; `close()` ends it. The listening socket stays
    open until `close()`, so the port never changes hands during an outage.
    """

    def __init__(self, target: tuple[str, int]) -> None:
        self.target = target
        self.down = False
        self._lock = threading.Lock()
        self._sockets: list[socket.socket] = []
        self._listener = socket.socket()
        self._listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self._listener.bind(("127.0.0.1", 0))
        self._listener.listen(64)
        self.port = int(self._listener.getsockname()[1])

    def start(self) -> None:
        threading.Thread(target=self._accept, daemon=True).start()

    def close(self) -> None:
        # shutdown() wakes the thread blocked in accept(); close() alone would not.
        with contextlib.suppress(OSError):
            self._listener.shutdown(socket.SHUT_RDWR)
        self._listener.close()
        self.drop()

    def drop(self) -> None:
        with self._lock:
            self.down = True
            sockets, self._sockets = self._sockets, []
        for sock in sockets:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
            sock.close()

    def restore(self) -> None:
        with self._lock:
            self.down = False

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return  # closed
            with self._lock:
                down = self.down
            if down:
                client.close()
                continue
            try:
                upstream = socket.create_connection(self.target, timeout=5)
            except OSError:
                client.close()
                continue
            upstream.settimeout(None)
            with self._lock:
                if self.down:  # dropped while connecting
                    client.close()
                    upstream.close()
                    continue
                self._sockets += [client, upstream]
            for a, b in ((client, upstream), (upstream, client)):
                threading.Thread(target=self._pipe, args=(a, b), daemon=True).start()

    @staticmethod
    def _pipe(source: socket.socket, sink: socket.socket) -> None:
        try:
            while data := source.recv(65536):
                sink.sendall(data)
        except OSError:
            pass
        finally:
            for sock in (source, sink):
                with contextlib.suppress(OSError):
                    sock.shutdown(socket.SHUT_RDWR)
