"""Raw baselines: what the store's server does for the same work with no queue library in
between, measured in the same run, next to each figure (the machine is shared and noisy, so
only ratios between figures taken moments apart mean anything).

Per store, each baseline is a rate per second:

=============  ==========================================  ====================================
name           PostgreSQL (psycopg) / SQLite (sqlite3)      Redis (redis-py)
=============  ==========================================  ====================================
round_trip     ``SELECT 1``                                 ``PING``
commit         one-row ``INSERT`` + ``COMMIT`` (autocommit) ``HSET`` + ``ZADD`` in one MULTI
bulk           ``COPY`` of 20,000 rows (PG); one            a pipeline of ``HSET`` + ``ZADD``
               transaction of ``executemany`` (SQLite)      per job, 1,000 jobs a pipeline
claim_complete ``UPDATE … FOR UPDATE SKIP LOCKED LIMIT 10   ``ZPOPMIN 10`` + a pipeline of 10
               RETURNING`` then one ``UPDATE … = ANY``      ``HSET state completed``
               per batch (jobs/s)
=============  ==========================================  ====================================

The memory store's only baseline is a ping-pong between two threads (`common.thread_ping_pong`).
Scratch tables live in the bench's own database (PostgreSQL) or a scratch file (SQLite) and are
dropped after; Redis scratch keys live under the bench's prefix.
"""

from __future__ import annotations

import json
import os
import sqlite3
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from bench.common import PG, REDIS_URL, rate_for, thread_ping_pong

#: The claim batch size of the claim baseline (runjobs' concurrency).
CLAIM_BATCH = 10
ARGS = json.dumps({"n": 1})


@dataclass(frozen=True)
class Where:
    """Where the baselines may write: the child's temp dir, PostgreSQL database, Redis prefix."""

    store: str
    tmp: str
    pg_db: str
    prefix: str
    seconds: float
    rows: int  # the bulk baseline's rows, and the claim baseline's backlog


NAMES = {
    "memory": ("round_trip",),
    "sqlite": ("round_trip", "commit", "bulk", "claim_complete"),
    "postgres": ("round_trip", "commit", "bulk", "claim_complete"),
    "redis": ("round_trip", "commit", "bulk", "claim_complete"),
}

LABELS = {
    ("memory", "round_trip"): "thread ping-pong",
    ("sqlite", "round_trip"): "sqlite3 SELECT 1",
    ("sqlite", "commit"): "sqlite3 1-row INSERT+COMMIT",
    ("sqlite", "bulk"): "sqlite3 executemany, 1 txn",
    ("sqlite", "claim_complete"): "sqlite3 claim 10 + complete",
    ("postgres", "round_trip"): "psycopg SELECT 1",
    ("postgres", "commit"): "psycopg 1-row INSERT+COMMIT",
    ("postgres", "bulk"): "psycopg COPY",
    ("postgres", "claim_complete"): "psycopg claim 10 + complete",
    ("redis", "round_trip"): "redis-py PING",
    ("redis", "commit"): "redis-py HSET+ZADD (MULTI)",
    ("redis", "bulk"): "redis-py pipeline HSET+ZADD",
    ("redis", "claim_complete"): "redis-py ZPOPMIN 10 + HSETs",
}


def measure(where: Where, names: tuple[str, ...]) -> dict[str, float]:
    """Each named baseline of `where.store` (unknown names are skipped)."""
    out: dict[str, float] = {}
    for name in names:
        if name in NAMES.get(where.store, ()):
            out[name] = _MEASURES[(where.store, name)](where)
    return out


# -- SQLite ----------------------------------------------------------------------------------


def _sqlite(where: Where) -> sqlite3.Connection:
    conn = sqlite3.connect(os.path.join(where.tmp, "baseline.sqlite3"), isolation_level=None)
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("PRAGMA busy_timeout=20000")
    sync = os.environ.get("ANOLE_BENCH_SQLITE_SYNC")  # the same durability as the store
    if sync:
        conn.execute(f"PRAGMA synchronous={sync}")
    return conn


def _scratch_sql(conn: Any, serial: str) -> None:
    conn.execute("DROP TABLE IF EXISTS bench_scratch")
    conn.execute(
        f"CREATE TABLE bench_scratch (id {serial} PRIMARY KEY, state text NOT NULL,"
        " priority int NOT NULL, args text NOT NULL)"
    )
    conn.execute(
        "CREATE INDEX bench_scratch_claim ON bench_scratch (priority DESC, id)"
        " WHERE state = 'available'"
    )


def sqlite_round_trip(where: Where) -> float:
    conn = _sqlite(where)
    try:
        return rate_for(where.seconds, lambda i: conn.execute("SELECT 1").fetchone())
    finally:
        conn.close()


def sqlite_commit(where: Where) -> float:
    conn = _sqlite(where)
    try:
        _scratch_sql(conn, "INTEGER")
        return rate_for(
            where.seconds,
            lambda i: conn.execute(
                "INSERT INTO bench_scratch (state, priority, args) VALUES ('available', 0, ?)",
                (ARGS,),
            ),
        )
    finally:
        conn.execute("DROP TABLE IF EXISTS bench_scratch")
        conn.close()


def sqlite_bulk(where: Where) -> float:
    conn = _sqlite(where)
    try:
        _scratch_sql(conn, "INTEGER")
        rows = [("available", 0, ARGS)] * where.rows
        began = time.perf_counter()
        conn.execute("BEGIN IMMEDIATE")
        conn.executemany("INSERT INTO bench_scratch (state, priority, args) VALUES (?, ?, ?)", rows)
        conn.execute("COMMIT")
        return where.rows / (time.perf_counter() - began)
    finally:
        conn.execute("DROP TABLE IF EXISTS bench_scratch")
        conn.close()


def sqlite_claim_complete(where: Where) -> float:
    conn = _sqlite(where)
    try:
        _scratch_sql(conn, "INTEGER")
        conn.execute("BEGIN IMMEDIATE")
        conn.executemany(
            "INSERT INTO bench_scratch (state, priority, args) VALUES (?, ?, ?)",
            [("available", 0, ARGS)] * where.rows,
        )
        conn.execute("COMMIT")

        def round_trip() -> int:
            conn.execute("BEGIN IMMEDIATE")
            ids = [
                row[0]
                for row in conn.execute(
                    "UPDATE bench_scratch SET state = 'running' WHERE id IN (SELECT id FROM"
                    " bench_scratch WHERE state = 'available' ORDER BY priority DESC, id"
                    " LIMIT ?) RETURNING id",
                    (CLAIM_BATCH,),
                )
            ]
            conn.execute("COMMIT")
            conn.execute(
                "UPDATE bench_scratch SET state = 'completed' WHERE id IN"
                " (SELECT value FROM json_each(?))",
                (json.dumps(ids),),
            )
            return len(ids)

        return _drain(round_trip, where.seconds)
    finally:
        conn.execute("DROP TABLE IF EXISTS bench_scratch")
        conn.close()


# -- PostgreSQL ------------------------------------------------------------------------------


def _pg(where: Where) -> Any:
    import psycopg

    return psycopg.connect(dbname=where.pg_db, autocommit=True, **PG)  # type: ignore[arg-type]


def pg_round_trip(where: Where) -> float:
    with _pg(where) as conn:
        return rate_for(where.seconds, lambda i: conn.execute("SELECT 1").fetchone())


def pg_commit(where: Where) -> float:
    with _pg(where) as conn:
        try:
            _scratch_sql(conn, "bigserial")
            return rate_for(
                where.seconds,
                lambda i: conn.execute(
                    "INSERT INTO bench_scratch (state, priority, args) VALUES ('available', 0, %s)",
                    (ARGS,),
                ),
            )
        finally:
            conn.execute("DROP TABLE IF EXISTS bench_scratch")


def _pg_copy(conn: Any, rows: int) -> None:
    sql = "COPY bench_scratch (state, priority, args) FROM STDIN"
    with conn.cursor() as cursor, cursor.copy(sql) as copy:
        for _ in range(rows):
            copy.write_row(("available", 0, ARGS))


def pg_bulk(where: Where) -> float:
    with _pg(where) as conn:
        try:
            _scratch_sql(conn, "bigserial")
            began = time.perf_counter()
            _pg_copy(conn, where.rows)
            return where.rows / (time.perf_counter() - began)
        finally:
            conn.execute("DROP TABLE IF EXISTS bench_scratch")


def pg_claim_complete(where: Where) -> float:
    with _pg(where) as conn:
        try:
            _scratch_sql(conn, "bigserial")
            _pg_copy(conn, where.rows)
            conn.execute("VACUUM ANALYZE bench_scratch")

            def round_trip() -> int:
                ids = [
                    row[0]
                    for row in conn.execute(
                        "UPDATE bench_scratch SET state = 'running' WHERE id IN (SELECT id FROM"
                        " bench_scratch WHERE state = 'available' ORDER BY priority DESC, id"
                        " LIMIT %s FOR UPDATE SKIP LOCKED) RETURNING id",
                        (CLAIM_BATCH,),
                    ).fetchall()
                ]
                conn.execute(
                    "UPDATE bench_scratch SET state = 'completed' WHERE id = ANY(%s)", (ids,)
                )
                return len(ids)

            return _drain(round_trip, where.seconds)
        finally:
            conn.execute("DROP TABLE IF EXISTS bench_scratch")


# -- Redis -----------------------------------------------------------------------------------


def _redis() -> Any:
    import redis

    return redis.Redis.from_url(REDIS_URL)


def _redis_clean(client: Any, prefix: str) -> None:
    keys = list(client.scan_iter(match=prefix + "raw:*", count=1000))
    for start in range(0, len(keys), 1000):
        client.delete(*keys[start : start + 1000])


def redis_round_trip(where: Where) -> float:
    client = _redis()
    try:
        return rate_for(where.seconds, lambda i: client.ping())
    finally:
        client.close()


def redis_commit(where: Where) -> float:
    client = _redis()
    queue = where.prefix + "raw:queue"

    def one(i: int) -> None:
        pipe = client.pipeline(transaction=True)
        pipe.hset(f"{where.prefix}raw:job:{i}", mapping={"state": "available", "args": ARGS})
        pipe.zadd(queue, {str(i): 0})
        pipe.execute()

    try:
        return rate_for(where.seconds, one)
    finally:
        _redis_clean(client, where.prefix)
        client.close()


def _redis_fill(client: Any, prefix: str, rows: int) -> None:
    queue = prefix + "raw:queue"
    for start in range(0, rows, 1000):
        pipe = client.pipeline(transaction=False)
        for i in range(start, min(rows, start + 1000)):
            pipe.hset(f"{prefix}raw:job:{i}", mapping={"state": "available", "args": ARGS})
            pipe.zadd(queue, {str(i): 0})
        pipe.execute()


def redis_bulk(where: Where) -> float:
    client = _redis()
    try:
        began = time.perf_counter()
        _redis_fill(client, where.prefix, where.rows)
        return where.rows / (time.perf_counter() - began)
    finally:
        _redis_clean(client, where.prefix)
        client.close()


def redis_claim_complete(where: Where) -> float:
    client = _redis()
    queue = where.prefix + "raw:queue"
    try:
        _redis_fill(client, where.prefix, where.rows)

        def round_trip() -> int:
            popped = client.zpopmin(queue, CLAIM_BATCH)
            pipe = client.pipeline(transaction=False)
            for member, _score in popped:
                pipe.hset(f"{where.prefix}raw:job:{member.decode()}", "state", "completed")
            pipe.execute()
            return len(popped)

        return _drain(round_trip, where.seconds)
    finally:
        _redis_clean(client, where.prefix)
        client.close()


def _drain(round_trip: Callable[[], int], seconds: float) -> float:
    """Jobs per second of `round_trip()` calls (each returns the jobs it moved) over about
    `seconds`, or until the scratch backlog runs out."""
    for _ in range(3):
        round_trip()
    jobs, began = 0, time.perf_counter()
    while True:
        moved = round_trip()
        jobs += moved
        elapsed = time.perf_counter() - began
        if moved == 0 or elapsed >= seconds:
            return jobs / elapsed if elapsed else 0.0


_MEASURES: dict[tuple[str, str], Callable[[Where], float]] = {
    ("memory", "round_trip"): lambda where: thread_ping_pong(where.seconds),
    ("sqlite", "round_trip"): sqlite_round_trip,
    ("sqlite", "commit"): sqlite_commit,
    ("sqlite", "bulk"): sqlite_bulk,
    ("sqlite", "claim_complete"): sqlite_claim_complete,
    ("postgres", "round_trip"): pg_round_trip,
    ("postgres", "commit"): pg_commit,
    ("postgres", "bulk"): pg_bulk,
    ("postgres", "claim_complete"): pg_claim_complete,
    ("redis", "round_trip"): redis_round_trip,
    ("redis", "commit"): redis_commit,
    ("redis", "bulk"): redis_bulk,
    ("redis", "claim_complete"): redis_claim_complete,
}
