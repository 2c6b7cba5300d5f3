"""Telling a real Ctrl-C apart from a handler's own `KeyboardInterrupt`.

A handler that raises `KeyboardInterrupt` (or `SystemExit`) fails its attempt like any error;
the runtime's handlers run in threads of their own, where signals never arrive. `jobs.step()`
runs handlers in the calling thread, though, often the main one, where a SIGINT raises
`KeyboardInterrupt` in whatever code runs: there it must still stop the step. While a step
runs, `watch_sigint` wraps the process's SIGINT handler so that the step knows when the
signal raised in its handler's code.

Only a SIGINT that the handler in place turns into an exception stops the step: a process
that ignores SIGINT (Python keeps it ignored when it started that way, as a program started
in the background by a shell does), or a program with a SIGINT handler of its own that only
takes note, has said a SIGINT must not interrupt the code that runs, so the step runs on.
"""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Iterator
from types import FrameType


class SigintWatch:
    """What the SIGINT handler in place raised while the watch was on, if anything."""

    def __init__(self) -> None:
        self.raised: BaseException | None = None


@contextlib.contextmanager
def watch_sigint() -> Iterator[SigintWatch]:
    """Pass every SIGINT while the block runs to the handler in place (Python's own raises
    `KeyboardInterrupt`), and note what it raised. Outside the main thread, or when SIGINT is
    ignored or left to the system, no signal handler is touched (and none can raise in this
    thread)."""
    watch = SigintWatch()
    if threading.current_thread() is not threading.main_thread():
        yield watch
        return
    previous = signal.getsignal(signal.SIGINT)
    if not callable(previous):
        yield watch
        return

    def on_sigint(signum: int, frame: FrameType | None) -> None:
        try:
            previous(signum, frame)
        except BaseException as exc:
            watch.raised = exc
            raise

    signal.signal(signal.SIGINT, on_sigint)
    try:
        yield watch
    finally:
        signal.signal(signal.SIGINT, previous)
