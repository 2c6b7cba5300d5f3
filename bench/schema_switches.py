"""Switches the bench flips in a migrated schema to measure what a part of it costs: the count
triggers, the statistics trigger, and PostgreSQL's claim and finish functions without the
statistics they write. Bench-only: the production schema has no such switch; these are built
from the migrations' frozen SQL (anole_jobs/migrations/sql), so they follow what a database
really runs."""

from __future__ import annotations

import re

from anole_jobs.stores.database.ddl import DEFAULT_PREFIX
from anole_jobs.stores.database.frozen import statements
from anole_jobs.stores.stats import RUNTIME_BUCKETS_MS

# What the claim and finish functions of migration 0009 add to write their statistics.
_CLAIM_STATS = re.compile(r"\n    IF n_claimed > 0 THEN\n.*?\n    END IF;", re.S)
_FINISH_STATS = re.compile(r",\n    counted AS \(.*?FROM counted\)", re.S)


def _starting(migration: str, vendor: str, direction: str, prefix: str, head: str) -> list[str]:
    found = statements(migration, vendor, direction, prefix)  # type: ignore[arg-type]
    return [statement for statement in found if statement.startswith(head)]


def count_triggers(vendor: str, *, on: bool, prefix: str = DEFAULT_PREFIX) -> list[str]:
    """The statements that drop the count triggers (migration 0003) and, `on`, create them
    again; the count table stays (counts() then reads stale figures while they are off)."""
    found = _starting("0003_counts", vendor, "down", prefix, "DROP TRIGGER")
    if on:
        found += _starting("0003_counts", vendor, "up", prefix, "CREATE TRIGGER")
    return found


def run_functions(vendor: str, *, stats: bool, prefix: str = DEFAULT_PREFIX) -> list[str]:
    """PostgreSQL's claim and finish functions (migration 0009), with or without the
    statistics they write; nothing on SQLite."""
    claim, finish = _starting("0009_stat_rows", vendor, "up", prefix, "CREATE OR REPLACE")[:2]
    if stats:
        return [claim, finish]
    bare = [_CLAIM_STATS.sub("", claim, count=1), _FINISH_STATS.sub("", finish, count=1)]
    if bare == [claim, finish]:
        raise RuntimeError("the frozen claim and finish functions no longer match the bench's cut")
    return bare


def stat_trigger(vendor: str, *, on: bool, prefix: str = DEFAULT_PREFIX) -> list[str]:
    """The statements that turn the run statistics off (the trigger of migration 0007 dropped,
    PostgreSQL's claim and finish functions without their statistics) or on again."""
    found = _starting("0007_stats", vendor, "down", prefix, "DROP TRIGGER")
    if on:
        found += _starting("0007_stats", vendor, "up", prefix, "CREATE TRIGGER")
    if vendor == "postgresql":
        found += run_functions(vendor, stats=on, prefix=prefix)
    return found


def bucket_case(ms: str) -> str:
    """A SQL CASE giving the run-time bucket of `ms`, as the statistics trigger computes it."""
    arms = " ".join(f"WHEN {ms} <= {bound} THEN {i}" for i, bound in enumerate(RUNTIME_BUCKETS_MS))
    return f"CASE WHEN {ms} IS NULL THEN NULL {arms} ELSE {len(RUNTIME_BUCKETS_MS)} END"
