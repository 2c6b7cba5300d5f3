"""Search and bulk-action previews with 1,000,000 finished jobs (opt-in: ``--scenarios
search``; Redis and memory: 100,000 waiting jobs inserted through the store): one page of
each search the surfaces offer, through
`anole_jobs.operations.listing.fetch_page` as the JSON route, the dashboard and the CLI call
it, against one page of the unfiltered listing measured in the same run.

The table is filled on the server with one INSERT … SELECT over generate_series (SQLite: a
recursive CTE): finished jobs of four kinds (three ``billing.*``), a third of them dead with a
``TimeoutError`` as their last error, and ``{"customer_id": i % 50000}`` as arguments, so a
customer's jobs are 20 in a million (a rare match: the page reads its whole id window) and a
kind prefix or an error text match often (the page fills at once). A search page looks at
`SEARCH_BUDGET` ids at most, so no search reads more than that however large the table is;
"no match" is the worst case.
"""

from __future__ import annotations

import statistics
import time
from datetime import timedelta
from typing import Any

from bench.common import QUEUE, log
from bench.context import Bench
from bench.report import Figure, figure

NAME = "search"
CALLS = 5

#: (key, label, query): the query as a surface sends it.
SEARCHES: tuple[tuple[str, str, dict[str, list[str]]], ...] = (
    ("search_kind_prefix", "kind starts with billing. (common)", {"kind_prefix": ["billing."]}),
    ("search_error_common", "last error contains 'timed out'", {"error": ["timed out"]}),
    (
        "search_args_rare",
        'args contain {"customer_id": 7} (20 in 1M)',
        {"args": ['{"customer_id": 7}']},
    ),
    (
        "search_args_dead",
        'state dead, args contain {"customer_id": 9}',
        {"state": ["dead"], "args": ['{"customer_id": 9}']},
    ),
    ("search_no_match", "last error contains text no job has", {"error": ["no such text"]}),
)


def run(bench: Bench) -> list[Figure]:
    from anole_jobs.operations import bulk
    from anole_jobs.operations.listing import SEARCH_BUDGET, fetch_page, parse_listing

    n = bench.sizes.growth_finished
    searches = SEARCHES
    rare = '{"customer_id": 7}'
    bench.wipe()
    began = time.perf_counter()
    if bench.store in ("postgres", "sqlite"):
        _fill(bench, n)
    else:
        n = min(n, THROUGH_STORE_CAP)
        _fill_through_store(bench, n)
        searches, rare = STORE_SEARCHES, '{"n": 7}'
    bench.vacuum()
    log(f"{bench.store}: {n:,} finished jobs in {time.perf_counter() - began:.1f} s")

    def page_ms(query: dict[str, list[str]]) -> float:
        listing = parse_listing({**query, "limit": ["50"]})
        fetch_page(listing)  # warm
        times = []
        for _ in range(CALLS):
            start = time.perf_counter()
            fetch_page(listing)
            times.append(1000 * (time.perf_counter() - start))
        return statistics.median(times)

    plain = page_ms({})
    figures = [figure("search_plain", f"one page of 50, no filter, {n:,} jobs", plain, "ms")]
    for key, label, query in searches:
        value = page_ms(query)
        figures.append(
            figure(
                key,
                f"  search page: {label}",
                value,
                "ms",
                ratio=value / plain,
                against="page, no filter",
                note=f"at most {SEARCH_BUDGET:,} ids per page",
            )
        )
    listing = parse_listing({"args": [rare]})
    start = time.perf_counter()
    preview = bulk.preview(listing)
    value = 1000 * (time.perf_counter() - start)
    figures.append(
        figure(
            "search_bulk_preview",
            "  bulk preview (count) of a rare args search",
            value,
            "ms",
            ratio=value / plain,
            against="page, no filter",
            note=f"counted {preview.count} ({'exact' if preview.exact else 'at least'})",
        )
    )
    bench.wipe()
    return figures


#: Redis and memory: waiting jobs inserted through the store (``{"n": i}``), capped.
THROUGH_STORE_CAP = 100_000
STORE_SEARCHES: tuple[tuple[str, str, dict[str, list[str]]], ...] = (
    ("search_kind_prefix", "kind starts with bench. (common)", {"kind_prefix": ["bench."]}),
    ("search_args_rare", 'args contain {"n": 7} (one job)', {"args": ['{"n": 7}']}),
    ("search_no_match", "last error contains text no job has", {"error": ["no such text"]}),
)


def _fill_through_store(bench: Bench, n: int) -> None:
    from bench.jobs import Noop

    service = bench.jobs.service
    now = service.clock()
    for start in range(0, n, 1000):
        service.store.insert(
            [service.build(Noop(n=i), now=now) for i in range(start, min(n, start + 1000))]
        )


def _fill(bench: Bench, n: int) -> None:
    from django.db import connection

    store: Any = bench.jobs.service.store.inner  # type: ignore[attr-defined]
    at = store.encode_time(bench.jobs.service.clock() - timedelta(hours=1))
    pg = bench.store == "postgres"
    json = "::jsonb" if pg else ""
    dead = "(i %% 3 = 0)"  # %% : the statement has parameters
    kinds = (
        "CASE i %% 4 WHEN 0 THEN 'billing.refund' WHEN 1 THEN 'billing.invoice'"
        " WHEN 2 THEN 'billing.charge' ELSE 'mail.send' END"
    )
    error = (
        '(\'[{"type": "TimeoutError", "message": "upstream \' || (i %% 100) ||'
        ' \' timed out", "attempt": 1, "at": "2026-01-01T00:00:00+00:00",'
        f' "traceback": ""}}]\'){json}'
    )
    columns = (
        "kind, queue, state, args, meta, errors, priority, attempt, max_attempts, claim_token,"
        " created_at, scheduled_at, attempted_at, finished_at, unique_scope"
    )
    values = (
        f"{kinds}, '{QUEUE}', CASE WHEN {dead} THEN 'dead' ELSE 'completed' END,"
        f" ('{{\"customer_id\": ' || (i %% 50000) || '}}'){json}, '{{}}',"
        f" CASE WHEN {dead} THEN {error} ELSE '[]'{json} END, 0, 1, 1, 1, %s, %s, %s, %s, 'live'"
    )
    table = store.job_table
    with connection.cursor() as cursor:
        if pg:
            cursor.execute(
                f"INSERT INTO {table} ({columns}) SELECT {values} FROM generate_series(1, %s) AS i",
                [at, at, at, at, n],
            )
        else:
            cursor.execute(
                "WITH RECURSIVE s(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM s WHERE i < %s)"
                f" INSERT INTO {table} ({columns}) SELECT {values} FROM s",
                [n, at, at, at, at],
            )
