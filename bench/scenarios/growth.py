"""Claim+complete cost and `counts()` cost as the job table grows, through the store
contract directly (no worker): on an empty table, with many finished jobs, with a large
backlog of available jobs, and (PostgreSQL) with a transaction held open by another session,
the classic killer of PostgreSQL queues (vacuum cannot remove the dead row versions each claim
and completion leaves behind while it is open).

Each shape times `rounds` rounds of `claim(limit=10)` + `finish(completed)` over probe jobs
that sort first (priority 1), and a few `counts()` calls; the ratio is against the empty table
measured in the same run. The SQL stores get their big tables from one INSERT … SELECT on the
server; Redis and memory through the store itself (capped at 100,000 jobs: filling millions
through Lua scripts would take longer than the whole bench).
"""

from __future__ import annotations

import time
from datetime import timedelta
from typing import Any

from bench.common import QUEUE, log
from bench.context import Bench
from bench.report import Figure, figure

NAME = "growth"
THROUGH_STORE_CAP = 100_000
CLAIM_LIMIT = 10


def run(bench: Bench) -> list[Figure]:
    rounds = bench.sizes.growth_rounds
    finished = bench.sizes.growth_finished
    backlog = bench.sizes.growth_backlog
    if bench.store in ("redis", "memory"):
        finished, backlog = min(finished, THROUGH_STORE_CAP), min(backlog, THROUGH_STORE_CAP)
    figures: list[Figure] = []

    bench.wipe()
    empty = _measure(bench, rounds)
    figures.append(_cost("growth_empty", "claim+complete, empty table", empty, None))
    figures.append(_counts("counts_empty", "counts(), empty table", empty, None))

    _fill(bench, finished, "completed")
    with_finished = _measure(bench, rounds)
    label = f"with {finished:,} finished jobs"
    figures.append(_cost("growth_finished", f"claim+complete, {label}", with_finished, empty))
    figures.append(_counts("counts_finished", f"counts(), {label}", with_finished, empty))
    if "scan_ms" in with_finished:
        figures.append(
            figure(
                "counts_scan_finished",
                f"  GROUP BY over the job table (counts() before 0003), {label}",
                with_finished["scan_ms"],
                "ms",
                ratio=with_finished["scan_ms"] / empty["counts_ms"],
                against="counts(), empty table",
            )
        )

    bench.wipe()
    _fill(bench, backlog, "available")
    with_backlog = _measure(bench, rounds)
    label = f"with {backlog:,} available jobs"
    figures.append(_cost("growth_backlog", f"claim+complete, {label}", with_backlog, empty))
    figures.append(_counts("counts_backlog", f"counts(), {label}", with_backlog, empty))

    if bench.store == "postgres":
        bench.wipe()
        figures.append(_open_transaction(bench, rounds, empty))
    bench.wipe()
    return figures


def _cost(key: str, label: str, shape: dict[str, float], empty: dict[str, float] | None) -> Figure:
    return figure(
        key,
        label,
        shape["us_per_job"],
        "µs/job",
        ratio=shape["us_per_job"] / empty["us_per_job"] if empty else None,
        against="empty table" if empty else "",
    )


def _counts(
    key: str, label: str, shape: dict[str, float], empty: dict[str, float] | None
) -> Figure:
    return figure(
        key,
        label,
        shape["counts_ms"],
        "ms",
        ratio=shape["counts_ms"] / empty["counts_ms"] if empty else None,
        against="empty table" if empty else "",
    )


def _measure(bench: Bench, rounds: int, *, chunks: int = 1) -> dict[str, Any]:
    """Insert the probes, then time `rounds` claim+complete rounds (per chunk) and counts()."""
    from anole_jobs.stores.base import Finish
    from bench.jobs import Noop

    service = bench.jobs.service
    store = service.store
    now = service.clock()
    warm_up = 3
    probes = [
        service.build(Noop(n=i), now=now, priority=1)
        for i in range((rounds * chunks + warm_up) * CLAIM_LIMIT)
    ]
    for start in range(0, len(probes), 1000):
        store.insert(probes[start : start + 1000])
    bench.vacuum()
    costs = []
    for chunk in range(-1, chunks):  # chunk -1: the untimed warm-up rounds
        jobs_done, began = 0, time.perf_counter()
        for _ in range(rounds if chunk >= 0 else warm_up):
            now = service.clock()
            claimed = store.claim(
                QUEUE,
                kinds=None,
                limit=CLAIM_LIMIT,
                now=now,
                lease_until=now + timedelta(minutes=5),
                worker="bench-growth",
            )
            if any(c.record.priority != 1 for c in claimed):
                raise RuntimeError("growth: a claim took a filler job before the probes")
            store.finish([Finish(run=c.run, state="completed", at=now) for c in claimed])
            jobs_done += len(claimed)
        if chunk >= 0:
            costs.append(1e6 * (time.perf_counter() - began) / max(1, jobs_done))
    store.counts()
    calls, began = 20, time.perf_counter()
    for _ in range(calls):
        store.counts()
    counts_ms = 1000 * (time.perf_counter() - began) / calls
    shape = {"us_per_job": costs[-1], "first_us_per_job": costs[0], "counts_ms": counts_ms}
    if bench.store in ("sqlite", "postgres"):
        shape["scan_ms"] = _scan_ms(bench)
    return shape


def _scan_ms(bench: Bench) -> float:
    """What counts() cost before the count table: one GROUP BY over the job table, timed in
    the same run as its replacement."""
    from django.db import connection

    table = bench.jobs.service.store.inner.job_table  # type: ignore[attr-defined]
    calls, began = 3, time.perf_counter()
    with connection.cursor() as cursor:
        for _ in range(calls):
            cursor.execute(f"SELECT queue, state, COUNT(*) FROM {table} GROUP BY 1, 2")
            cursor.fetchall()
    return 1000 * (time.perf_counter() - began) / calls


def _fill(bench: Bench, n: int, state: str) -> None:
    """Put `n` filler jobs in `state` (completed or available, priority 0) in the table."""
    began = time.perf_counter()
    if bench.store in ("sqlite", "postgres"):
        _fill_sql(bench, n, state)
    else:
        _fill_through_store(bench, n, state)
    bench.vacuum()
    log(f"{bench.store}: {n:,} {state} filler jobs in {time.perf_counter() - began:.1f} s")


def _fill_sql(bench: Bench, n: int, state: str) -> None:
    from django.db import connection

    # Table name and time encoding belong to the database store itself, under the service's
    # instrumented wrapper (which only carries the contract's methods).
    store = bench.jobs.service.store.inner  # type: ignore[attr-defined]
    then = bench.jobs.service.clock() - timedelta(hours=1)
    at = store.encode_time(then)  # type: ignore[attr-defined]
    done = state == "completed"
    columns = (
        "kind, queue, state, args, meta, errors, priority, attempt, max_attempts, claim_token,"
        " created_at, scheduled_at, attempted_at, finished_at, unique_scope"
    )
    values = (
        f"'bench.noop', '{QUEUE}', '{state}', '{{\"n\":0}}', '{{}}', '[]', 0, {int(done)}, 3,"
        f" {int(done)}, %s, %s, {'%s' if done else 'NULL'}, {'%s' if done else 'NULL'}, 'live'"
    )
    params = [at, at] + ([at, at] if done else [])
    table = store.job_table  # type: ignore[attr-defined]
    with connection.cursor() as cursor:
        if bench.store == "postgres":
            cursor.execute(
                f"INSERT INTO {table} ({columns}) SELECT {values} FROM generate_series(1, %s)",
                [*params, n],
            )
        else:
            cursor.execute(
                "WITH RECURSIVE s(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM s WHERE i < %s)"
                f" INSERT INTO {table} ({columns}) SELECT {values} FROM s",
                [n, *params],
            )


def _fill_through_store(bench: Bench, n: int, state: str) -> None:
    from anole_jobs.stores.base import Finish
    from bench.jobs import Noop

    service = bench.jobs.service
    store = service.store
    now = service.clock() - timedelta(hours=1)
    for start in range(0, n, 1000):
        store.insert(
            [service.build(Noop(n=i), now=now) for i in range(start, min(n, start + 1000))]
        )
    if state != "completed":
        return
    while True:
        now = service.clock()
        claimed = store.claim(
            QUEUE,
            kinds=None,
            limit=1000,
            now=now,
            lease_until=now + timedelta(minutes=5),
            worker="bench-fill",
        )
        if not claimed:
            return
        store.finish([Finish(run=c.run, state="completed", at=now) for c in claimed])


def _open_transaction(bench: Bench, rounds: int, empty: dict[str, Any]) -> Figure:
    """Claim+complete with another session idle in a REPEATABLE READ transaction: the cost of
    the last of 5 chunks of rounds, against the empty table without it."""
    import psycopg

    from bench.common import PG

    chunks = 5
    with psycopg.connect(dbname=bench.pg_db, **PG) as holder:  # type: ignore[arg-type]
        holder.execute("BEGIN ISOLATION LEVEL REPEATABLE READ")
        holder.execute("SELECT count(*) FROM pg_class").fetchone()  # take the snapshot
        shape = _measure(bench, rounds, chunks=chunks)
        holder.rollback()
    return figure(
        "growth_open_txn",
        f"claim+complete, another session's transaction open ({chunks * rounds * 10:,} jobs)",
        shape["us_per_job"],
        "µs/job",
        ratio=shape["us_per_job"] / empty["us_per_job"],
        against="empty table",
        note=f"first chunk {shape['first_us_per_job']:.0f} µs/job, last "
        f"{shape['us_per_job']:.0f} µs/job",
    )
