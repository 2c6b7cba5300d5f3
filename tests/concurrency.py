"""Real concurrency for tests: run one action in several threads released together."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from django.db import connections


def race(threads: int, action: Callable[[int], Any]) -> list[Any]:
    """Run `action(i)` in `threads` real threads released together by a barrier."""
    barrier = threading.Barrier(threads)
    results: list[Any] = [None] * threads
    errors: list[BaseException] = []

    def run(index: int) -> None:
        try:
            barrier.wait()
            results[index] = action(index)
        except BaseException as exc:  # noqa: BLE001 - reported by the assertion below
            errors.append(exc)
        finally:
            for connection in connections.all(initialized_only=True):
                connection.close()

    workers = [threading.Thread(target=run, args=(i,)) for i in range(threads)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(timeout=120)
    assert not any(worker.is_alive() for worker in workers), "a thread did not finish"
    assert errors == [], errors
    return results
