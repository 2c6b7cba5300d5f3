"""Opt-in diagnostics for the runjobs process (``ANOLE_BENCH_DIAG=FILE``, set by
`python -m bench --diagnose`): every `claim`, `finish` and `heartbeat` call of the store is
recorded (wall time, duration, jobs asked for and got) and written to FILE as JSON every
`DUMP_EVERY` seconds and at exit: the bench reads it while the worker still runs.

It wraps the store object the facade builds; nothing in `anole_jobs` changes. The wrappers
cost a few microseconds per call, so the figures of a diagnosed run are not the headline ones.
"""

from __future__ import annotations

import atexit
import json
import os
import threading
import time
from collections.abc import Callable
from typing import Any

_lock = threading.Lock()
_events: list[tuple[str, float, float, int, int]] = []  # (op, started, seconds, asked, got)
#: Seconds between two writes of the file.
DUMP_EVERY = 0.2


def _record(op: str, started: float, seconds: float, asked: int, got: int) -> None:
    with _lock:
        _events.append((op, started, seconds, asked, got))


def _wrap_store(store: Any) -> Any:
    claim, finish, heartbeat = store.claim, store.finish, store.heartbeat

    def traced_claim(queue: str, **kwargs: Any) -> Any:
        began, t0 = time.time(), time.perf_counter()
        result = claim(queue, **kwargs)
        _record("claim", began, time.perf_counter() - t0, kwargs.get("limit", 0), len(result))
        return result

    def traced_finish(results: Any) -> Any:
        began, t0 = time.time(), time.perf_counter()
        written = finish(results)
        _record("finish", began, time.perf_counter() - t0, len(results), sum(map(bool, written)))
        return written

    def traced_heartbeat(runs: Any, **kwargs: Any) -> Any:
        began, t0 = time.time(), time.perf_counter()
        held = heartbeat(runs, **kwargs)
        _record("heartbeat", began, time.perf_counter() - t0, len(runs), len(held))
        return held

    store.claim, store.finish, store.heartbeat = traced_claim, traced_finish, traced_heartbeat
    return store


def install(path: str) -> None:
    import anole_jobs.api as api

    original: Callable[..., Any] = api.open_store

    def open_store(settings: Any) -> Any:
        return _wrap_store(original(settings))

    api.open_store = open_store  # type: ignore[assignment]

    def dump() -> None:
        with _lock:
            events = list(_events)
        written = {"at": time.time(), "events": events}
        with open(path + ".tmp", "w") as out:
            json.dump(written, out)
        os.replace(path + ".tmp", path)  # a reader never sees half a file

    def dump_often() -> None:
        while True:
            time.sleep(DUMP_EVERY)
            dump()

    threading.Thread(target=dump_often, name="bench-diag", daemon=True).start()
    atexit.register(dump)


def summarise(events: list[list[Any]], since: float, until: float) -> dict[str, Any]:
    """Per operation within [since, until] (wall time): calls, jobs, jobs per call, seconds."""
    out: dict[str, Any] = {}
    for op in ("claim", "finish", "heartbeat"):
        rows = [e for e in events if e[0] == op and since <= e[1] <= until]
        if not rows:
            continue
        got = [e[4] for e in rows]
        empty = sum(1 for n in got if n == 0)
        busy = sum(e[2] for e in rows)
        sizes: dict[str, int] = {}
        for n in got:
            bucket = (
                "0"
                if n == 0
                else "1"
                if n == 1
                else "2-4"
                if n <= 4
                else "5-9"
                if n < 10
                else "10+"
            )
            sizes[bucket] = sizes.get(bucket, 0) + 1
        out[op] = {
            "calls": len(rows),
            "empty_calls": empty,
            "jobs": sum(got),
            "jobs_per_nonempty_call": sum(got) / max(1, len(rows) - empty),
            "mean_ms": 1000 * busy / len(rows),
            "busy_seconds": busy,
            "sizes": sizes,
        }
    return out
