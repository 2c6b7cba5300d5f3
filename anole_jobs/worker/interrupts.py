"""Telling a real Ctrl-C apart from a handler's own `KeyboardInterrupt`.

A handler that raises `KeyboardInterrupt` (or `SystemExit`) fails its attempt like any error;
the runtime's handlers run in threads of their own, where signals never arrive. `jobs.step()`
runs handlers in the calling thread, though, often the main one, where a SIGINT raises
`KeyboardInterrupt` in whatever code runs: there it must still stop the step. While a step
runs, `watch_sigint` wraps the process's SIGINT handler so that the step knows one arrived.
"""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Iterator
from types import FrameType


class SigintWatch:
    """Whether a SIGINT reached this process while the watch was on."""

    def __init__(self) -> None:
        self.received = False


@contextlib.contextmanager
def watch_sigint() -> Iterator[SigintWatch]:
    """Note every SIGINT while the block runs, then pass it to the handler in place (Python's
    own raises `KeyboardInterrupt`). Outside the main thread, or when SIGINT is ignored or
    left to the system, no signal handler is touched (and none can raise in this thread)."""
    watch = SigintWatch()
    if threading.current_thread() is not threading.main_thread():
        yield watch
        return
    previous = signal.getsignal(signal.SIGINT)
    if not callable(previous):
        yield watch
        return

    def on_sigint(signum: int, frame: FrameType | None) -> None:
        watch.received = True
        previous(signum, frame)

    signal.signal(signal.SIGINT, on_sigint)
    try:
        yield watch
    finally:
        signal.signal(signal.SIGINT, previous)
