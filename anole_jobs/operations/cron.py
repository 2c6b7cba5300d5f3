"""The cron entries for people: for each, its last run, which is a tick that ran (its job
was enqueued) or a run by hand, never the tick the leader records when it first sees an entry
(history starts there, and nothing ran).

The store keeps an entry's last recorded tick and its last job; which of the two ran is told
by that job's meta (``cron.tick`` for a scheduled run, ``cron.triggered`` for one by hand).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from anole_jobs.api import jobs
from anole_jobs.schedules import CronRecord


@dataclass(frozen=True)
class CronRow:
    record: CronRecord
    #: When the last run was: the tick it ran for, or when it was run by hand; None: none known.
    last_run_at: datetime | None
    by_hand: bool
    #: The last job no longer exists (it was deleted or pruned).
    job_gone: bool
    #: No run yet: the tick history starts from (nothing before it runs).
    history_from: datetime | None


def _tick(text: object) -> datetime | None:
    try:
        return datetime.fromisoformat(str(text))
    except ValueError:
        return None


def row(record: CronRecord) -> CronRow:
    if record.last_job_id is None:
        return CronRow(record, None, False, False, record.last_tick_at)
    job = jobs.get(record.last_job_id)
    if job is None:
        return CronRow(record, None, False, True, None)
    meta = job.meta.get("cron")
    meta = meta if isinstance(meta, dict) else {}
    if meta.get("triggered"):
        return CronRow(record, job.created_at, True, False, None)
    return CronRow(record, _tick(meta.get("tick")) or job.created_at, False, False, None)


def cron_rows() -> list[CronRow]:
    """One row per `CRON` entry, in order."""
    return [row(record) for record in jobs.cron_list()]
