"""The run statistics' budget (opt-in: ``--scenarios stats``): ``GET /stats`` (the last hour per
minute, the last day per hour, one queue's day), the dashboard's queues page and its statistics
page, each timed with a large table of finished jobs and a day of counters, against the queues
page's old figures (a scan of up to 5,000 finished jobs per state) in the same run.

The SQL stores get `growth_finished` finished jobs (1,000,000 in the full run) from one
INSERT … SELECT, spread over the last day across four queues (95 % completed, 4 % dead, 1 %
cancelled, run times up to 2 s), and their counters from one INSERT … SELECT grouped by queue
and minute over those jobs: what the trigger would have written. PostgreSQL also gets 15,000
unfolded delta rows in the current minutes (a busy minute between the leader's folds). Redis
gets 100,000 jobs through its scripts and a day of counters written as its scripts write them
(a hash per queue and minute, and one per queue and hour).
The views run in this process through Django's RequestFactory, as a staff user.
"""

from __future__ import annotations

import statistics
import time
from datetime import timedelta
from types import SimpleNamespace
from typing import Any

from bench.common import log
from bench.context import Bench
from bench.report import Figure, figure

NAME = "stats"
QUEUES = ("default", "mail", "reports", "webhooks")
CALLS = 5
THROUGH_STORE_CAP = 100_000
PG_DELTAS = 15_000
#: One busy minute of one queue, as the Redis scripts leave it (only counters that moved).
MINUTE = {
    "started": 700,
    "completed": 670,
    "retried": 20,
    "dead": 10,
    "total_ms": 670 * 80,
    "max_ms": 1900,
    "h6": 600,
    "h9": 70,
}


def run(bench: Bench) -> list[Figure]:
    if bench.store == "memory":
        return []  # the memory store's counters are dicts under a lock: nothing to budget
    finished = bench.sizes.growth_finished
    bench.wipe()
    began = time.perf_counter()
    if bench.store in ("sqlite", "postgres"):
        _fill_sql(bench, finished)
    else:
        finished = min(finished, THROUGH_STORE_CAP)
        _fill_redis(bench, finished)
    bench.vacuum()
    log(
        f"{bench.store}: {finished:,} finished jobs and a day of counters in "
        f"{time.perf_counter() - began:.1f} s"
    )

    from anole_jobs.admin_api.routes import ROUTES
    from anole_jobs.admin_api.views import endpoint
    from anole_jobs.dashboard import stats_page, views

    stats_route = endpoint(next(r for r in ROUTES if r.name == "stats"))
    label = f"with {finished:,} finished jobs"
    scan = _ms(bench, lambda: _old_scan(bench))
    timings = {
        "stats_hour": ("GET /stats (last hour, per minute)", stats_route, {}),
        "stats_day": ("GET /stats?period=day (per hour)", stats_route, {"period": "day"}),
        "stats_queue_day": (
            "GET /stats?queue=mail&period=day",
            stats_route,
            {"queue": "mail", "period": "day"},
        ),
        "queues_page": ("dashboard queues page (with its chart)", views.queues, {}),
        "stats_page_day": (
            "dashboard statistics page, last day",
            stats_page.stats,
            {"period": "day"},
        ),
    }
    figures = []
    for key, (what, view, query) in timings.items():
        ms = _ms(bench, lambda view=view, query=query: _get(view, query))
        figures.append(
            figure(
                key,
                f"{what}, {label}",
                ms,
                "ms",
                ratio=ms / scan if key == "queues_page" else None,
                against="the old queues page's scan of finished jobs"
                if key == "queues_page"
                else "",
            )
        )
    figures.append(
        figure(
            "stats_old_scan",
            f"  the old queues page's scan (5,000 finished jobs per state), {label}",
            scan,
            "ms",
        )
    )
    bench.wipe()
    return figures


def _ms(bench: Bench, call: Any) -> float:
    call()  # warm-up: plans, caches, connection
    times = []
    for _ in range(CALLS):
        began = time.perf_counter()
        call()
        times.append(1000 * (time.perf_counter() - began))
    return statistics.median(times)


def _get(view: Any, query: dict[str, str]) -> None:
    from django.test import RequestFactory

    request = RequestFactory().get("/", query)
    request.user = SimpleNamespace(is_authenticated=True, is_active=True, is_staff=True)
    response = view(request)
    if response.status_code != 200:
        raise RuntimeError(f"stats: {view.__name__} answered {response.status_code}")


def _old_scan(bench: Bench) -> None:
    """What the queues page did before the counters: up to 5,000 finished jobs per state."""
    from anole_jobs.core import FINAL_STATES
    from anole_jobs.operations.listing import Listing, each_page

    for state in FINAL_STATES:
        seen = 0
        for page in each_page(Listing(state=state, limit=999)):
            seen += len(page.records)
            if not page.more or seen >= 5_000:
                break


def _fill_sql(bench: Bench, n: int) -> None:
    from django.db import connection

    from anole_jobs.stores.database.ddl import stat_table
    from anole_jobs.stores.stats import STAT_BUCKET_COLUMNS, STAT_COLUMNS
    from bench.schema_switches import bucket_case as _bucket_case

    store = bench.jobs.service.store.inner  # type: ignore[attr-defined]
    now = bench.jobs.service.clock()
    table = store.job_table  # type: ignore[attr-defined]
    stat = f'"{stat_table(store.prefix)}"'  # type: ignore[attr-defined]
    pg = bench.store == "postgres"
    queues = "ARRAY[" + ", ".join(f"'{q}'" for q in QUEUES) + "]"
    columns = (
        "kind, queue, state, args, meta, errors, priority, attempt, max_attempts, claim_token,"
        " created_at, scheduled_at, attempted_at, finished_at, unique_scope"
    )
    if pg:
        # Job i finished (i * 86,399 / n) seconds ago and ran (i % 2,000) ms.
        select = (
            f"SELECT 'bench.noop', ({queues})[1 + mod(i, 4)],"
            " CASE WHEN mod(i, 100) = 0 THEN 'cancelled' WHEN mod(i, 25) = 0 THEN 'dead'"
            " ELSE 'completed' END, '{\"n\":0}', '{}', '[]', 0, 1, 3, 1, f, f,"
            " f - mod(i, 2000) * interval '1 millisecond', f, 'live'"
            " FROM (SELECT i, %s::timestamptz - (i * 86399.0 / %s) * interval '1 second' AS f"
            " FROM generate_series(1, %s) AS i) AS g"
        )
        params: list[Any] = [now, n, n]
        minute = "floor(extract(epoch FROM finished_at) / 60)::bigint"
        ms = "ceil(extract(epoch FROM finished_at - attempted_at) * 1000)"
    else:
        names = " ".join(f"WHEN {i} THEN '{q}'" for i, q in enumerate(QUEUES))
        select = (
            f"SELECT 'bench.noop', CASE i % 4 {names} END,"
            " CASE WHEN i % 100 = 0 THEN 'cancelled' WHEN i % 25 = 0 THEN 'dead'"
            " ELSE 'completed' END, '{\"n\":0}', '{}', '[]', 0, 1, 3, 1, f, f,"
            " strftime('%%Y-%%m-%%d %%H:%%M:%%f', f, '-' || ((i % 2000) / 1000.0) || ' seconds'),"
            " f, 'live' FROM (SELECT i, strftime('%%Y-%%m-%%d %%H:%%M:%%f', %s,"
            " '-' || (i * 86399.0 / %s) || ' seconds') AS f FROM s) AS g"
        )
        select = (
            "WITH RECURSIVE s(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM s WHERE i < %s) " + select
        )
        params = [n, store.encode_time(now), n]  # type: ignore[attr-defined]
        minute = "CAST(strftime('%%s', finished_at) AS INTEGER) / 60"
        ms = "CAST(round((julianday(finished_at) - julianday(attempted_at)) * 86400000) AS INTEGER)"
    buckets = ", ".join(
        f"SUM(CASE WHEN b = {i} THEN 1 ELSE 0 END)" for i in range(len(STAT_BUCKET_COLUMNS))
    )
    counters = (
        f"INSERT INTO {stat} (queue, minute, {', '.join(STAT_COLUMNS)})"
        " SELECT queue, m, COUNT(*), SUM(CASE WHEN state = 'completed' THEN 1 ELSE 0 END), 0,"
        " SUM(CASE WHEN state = 'dead' THEN 1 ELSE 0 END),"
        " SUM(CASE WHEN state = 'completed' THEN ms ELSE 0 END),"
        f" MAX(CASE WHEN state = 'completed' THEN ms ELSE 0 END), {buckets}"
        f" FROM (SELECT queue, state, m, ms, CASE WHEN state = 'completed' THEN"
        f" {_bucket_case('ms')} END AS b FROM (SELECT queue, state, {minute} AS m, {ms} AS ms"
        f" FROM {table} WHERE state IN ('completed', 'dead')) AS j) AS t GROUP BY queue, m"
    )
    with connection.cursor() as cursor:
        cursor.execute(f"INSERT INTO {table} ({columns}) {select}", params)
        cursor.execute(counters, None if pg else [])  # SQLite: [] so that %% reads as %
        if pg:
            # A busy minute's statements between two folds: small delta rows, not yet folded.
            cursor.execute(
                f"INSERT INTO {stat} (queue, minute, {', '.join(STAT_COLUMNS)})"
                f" SELECT ({queues})[1 + mod(i, 4)], floor(extract(epoch FROM %s::timestamptz)"
                " / 60)::bigint - mod(i, 2), 10, 9, 1, 0, 90, 12, "
                + ", ".join("9" if c == "h5" else "0" for c in STAT_BUCKET_COLUMNS)
                + " FROM generate_series(1, %s) AS i",
                [now, PG_DELTAS],
            )


def _fill_redis(bench: Bench, n: int) -> None:
    """`n` jobs completed through the store (its scripts count them), then a day of counters
    per queue written as the scripts write them (one hash per queue and minute, indexed)."""
    import redis

    from anole_jobs import NewQueue
    from anole_jobs.stores.base import Finish
    from anole_jobs.stores.stats import STATS_KEEP, minute_number
    from bench.common import REDIS_URL
    from bench.jobs import Noop

    service = bench.jobs.service
    store = service.store
    for queue in QUEUES:
        share = n // len(QUEUES)
        for start in range(0, share, 1000):
            count = min(1000, share - start)
            store.insert(
                [
                    service.build(Noop(n=i), now=service.clock(), queue=NewQueue(queue))
                    for i in range(count)
                ]
            )
        while True:
            now = service.clock()
            claimed = store.claim(
                queue,
                kinds=None,
                limit=1000,
                now=now,
                lease_until=now + timedelta(minutes=5),
                worker="bench-stats",
            )
            if not claimed:
                break
            store.finish([Finish(run=c.run, state="completed", at=now) for c in claimed])
    inner = store.inner  # type: ignore[attr-defined]
    client = redis.Redis.from_url(REDIS_URL)
    last = minute_number(service.clock())
    pipe = client.pipeline(transaction=False)
    for queue in QUEUES:
        for number in range(last - 24 * 60, last + 1):
            key = inner.keys.stat(number, queue)
            pipe.hset(key, mapping=MINUTE)  # the fields a minute's scripts would have moved
            pipe.expire(key, int(STATS_KEEP.total_seconds()))
            pipe.zadd(inner.keys.stat_minutes(), {key: number})
        for hour in range((last - 24 * 60) // 60, last // 60 + 1):
            key = inner.keys.stat_hour(hour, queue)
            pipe.hset(key, mapping={k: v if k == "max_ms" else 60 * v for k, v in MINUTE.items()})
            pipe.expire(key, int(STATS_KEEP.total_seconds()))
            pipe.zadd(inner.keys.stat_hours(), {key: hour})
    pipe.execute()
    client.close()
