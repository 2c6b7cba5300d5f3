"""One way for a test to wait for something another thread or process does: `wait_until`."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

#: Seconds between two checks when nothing says sooner that something changed.
RECHECK = 0.05


def wait_until(
    check: Callable[[], Any],
    what: str,
    timeout: float,
    recheck: float = RECHECK,
    *,
    changed: Callable[[], Callable[[float], Any]] | None = None,
) -> Any:
    """Call `check` until it returns something truthy, and return that; fail (AssertionError
    naming `what` and the last answer) after `timeout` seconds.

    Between two checks it waits `recheck` seconds, or less with `changed`: called before each
    check, it returns a wait that ends early when something changes after that point (a
    process printed a line, an event was emitted), so nothing that happens during the check
    is missed."""
    deadline = time.monotonic() + timeout
    pause = threading.Event()  # never set: a wait that a signal cannot cut short
    while True:
        wait: Callable[[float], Any] = pause.wait if changed is None else changed()
        last = check()
        if last:
            return last
        left = deadline - time.monotonic()
        if left <= 0:
            raise AssertionError(f"timed out after {timeout} s waiting for {what} (last: {last!r})")
        wait(min(left, recheck))
