"""A local HTTP server whose every response takes `DELAY` seconds, and the raw asyncio client
the `async_io` scenario's jobs use (a pool of keep-alive connections shared by every job of
the process's event loop; httpx is no dependency of the bench).

    python -m bench.slow_http [DELAY]     # prints "listening PORT", serves until killed
"""

from __future__ import annotations

import asyncio
import sys
import time

RESPONSE = b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 2\r\n\r\nok"


async def _serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, delay: float) -> None:
    try:
        while True:
            await reader.readuntil(b"\r\n\r\n")
            await asyncio.sleep(delay)
            writer.write(RESPONSE)
            await writer.drain()
    except (asyncio.IncompleteReadError, ConnectionError, asyncio.LimitOverrunError):
        pass
    finally:
        writer.close()


async def serve(delay: float) -> None:
    server = await asyncio.start_server(
        lambda r, w: _serve(r, w, delay), "127.0.0.1", 0, backlog=4096
    )
    port = server.sockets[0].getsockname()[1]
    print(f"listening {port}", flush=True)
    async with server:
        await server.serve_forever()


class Pool:
    """Keep-alive connections to one server, shared by every coroutine of one event loop."""

    def __init__(self, host: str, port: int) -> None:
        self.host = host
        self.port = port
        self.idle: list[tuple[asyncio.StreamReader, asyncio.StreamWriter]] = []

    async def get(self) -> bytes:
        """One ``GET /``; the response's body."""
        if self.idle:
            reader, writer = self.idle.pop()
        else:
            reader, writer = await asyncio.open_connection(self.host, self.port)
        try:
            writer.write(b"GET / HTTP/1.1\r\nHost: bench\r\n\r\n")
            head = await reader.readuntil(b"\r\n\r\n")
            length = 0
            for line in head.split(b"\r\n"):
                if line.lower().startswith(b"content-length:"):
                    length = int(line.split(b":", 1)[1])
            body = await reader.readexactly(length)
        except BaseException:
            writer.close()
            raise
        self.idle.append((reader, writer))
        return body


_POOLS: dict[tuple[int, str], Pool] = {}


def pool(url: str) -> Pool:
    """The pool of the running loop for ``HOST:PORT``: built once, shared by later jobs."""
    key = (id(asyncio.get_running_loop()), url)
    found = _POOLS.get(key)
    if found is None:
        host, port = url.rsplit(":", 1)
        found = _POOLS[key] = Pool(host, int(port))
    return found


async def raw_calls(url: str, n: int, concurrency: int) -> float:
    """`n` calls through one pool, `concurrency` at a time, no queue: calls per second."""
    limit = asyncio.Semaphore(concurrency)
    client = pool(url)

    async def one() -> None:
        async with limit:
            await client.get()

    began = time.perf_counter()
    await asyncio.gather(*(one() for _ in range(n)))
    return n / (time.perf_counter() - began)


if __name__ == "__main__":
    asyncio.run(serve(float(sys.argv[1]) if len(sys.argv) > 1 else 0.05))
