"""The process's event loop: one per process, run by one daemon thread for the process's life.

Every `async def` handler of the process runs as a task on it (the worker pools' and
`jobs.step()`'s alike), so what a handler builds on the loop (an `httpx.AsyncClient`, a
connection pool) may be kept and used again by later handlers of the same process. Nothing
stops the loop: it ends with the process (its thread is a daemon). A forked child starts its
own on first use.

Blocking work the runtime must do for an async job (a database write, an error reporter)
goes to the loop's default executor: a small pool of at most `IO_THREADS` threads, shared by
`asyncio.to_thread` and `loop.run_in_executor(None, ...)` in handlers, so the thread count
stays bounded however many async jobs run.
"""

from __future__ import annotations

import asyncio
import logging
import os
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any

logger = logging.getLogger("anole_jobs.worker")

#: Threads of the loop's default executor (`asyncio.to_thread`, `run_in_executor(None, ...)`).
IO_THREADS = 16

_lock = threading.Lock()
_loop: asyncio.AbstractEventLoop | None = None
_thread: threading.Thread | None = None
_pid: int | None = None


def _exception_handler(loop: asyncio.AbstractEventLoop, context: dict[str, Any]) -> None:
    exc = context.get("exception")
    logger.error(
        "event loop: %s",
        context.get("message", "unhandled error"),
        exc_info=(type(exc), exc, exc.__traceback__) if exc is not None else None,
    )


def shared_loop() -> asyncio.AbstractEventLoop:
    """The process's event loop, started on first use."""
    global _loop, _thread, _pid
    loop, thread = _loop, _thread
    if loop is not None and thread is not None and _pid == os.getpid() and thread.is_alive():
        return loop
    with _lock:
        if _loop is not None and _thread is not None and _pid == os.getpid() and _thread.is_alive():
            return _loop
        loop = asyncio.new_event_loop()
        loop.set_default_executor(
            ThreadPoolExecutor(max_workers=IO_THREADS, thread_name_prefix="anole-async-io")
        )
        loop.set_exception_handler(_exception_handler)
        ready = threading.Event()

        def run() -> None:
            asyncio.set_event_loop(loop)
            loop.call_soon(ready.set)
            loop.run_forever()

        thread = threading.Thread(target=run, name="anole-event-loop", daemon=True)
        thread.start()
        ready.wait()
        _loop, _thread, _pid = loop, thread, os.getpid()
        return loop


def in_loop_thread() -> bool:
    """Whether the calling thread is the one running the process's loop."""
    return _thread is not None and threading.current_thread() is _thread
