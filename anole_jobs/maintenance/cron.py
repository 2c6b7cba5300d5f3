"""Cron's duty (docs/cron.md): the leader enqueues each due tick of every `CRON` entry.

Parsing and tick arithmetic live in `anole_jobs.schedules`; `jobs.cron_list()` and
`jobs.cron_trigger()` live in the service.

Exactly once per tick, across instances: the store's `cron_advance` records a tick and inserts
its job in one atomic step, and only when the tick is later than the entry's last one; the job
also carries a unique key scoped "any" per entry and tick, so even two leaders (one that has
not yet noticed it lost leadership) cannot enqueue one tick twice. History starts when an entry
is first seen: a fresh install records the latest past tick and enqueues nothing. After a gap
only the latest missed tick is enqueued, once.
"""

from __future__ import annotations

import logging
from datetime import datetime
from typing import TYPE_CHECKING

from anole_jobs import events
from anole_jobs.errors import InvalidJob
from anole_jobs.schedules import CronEntry, load_cron
from anole_jobs.unique import Unique

if TYPE_CHECKING:
    from anole_jobs.service import JobService

__all__ = ["CronScheduler", "load_cron"]  # load_cron: where `runjobs` has always found it

logger = logging.getLogger("anole_jobs.cron")


# -- the leader's duty -------------------------------------------------------------------------


class CronScheduler:
    """Enqueues each due tick of every entry; run by the leader only."""

    def __init__(self, service: JobService) -> None:
        self.service = service

    def run_once(self, now: datetime) -> int:
        """Record first sightings and enqueue the latest due tick of each entry; return how
        many jobs were inserted. Safe to run concurrently on several instances."""
        entries = self.service.cron_entries()
        if not entries:
            return 0
        store = self.service.store
        states = store.cron_states([entry.name for entry in entries])
        enqueued = 0
        for entry in entries:
            state = states.get(entry.name)
            last = state.last_tick_at if state is not None else None
            if last is None:
                # History starts now: remember where we are, enqueue nothing from the past.
                # A schedule with no past tick records `now`, so its first real tick counts.
                latest = entry.latest_between(None, now)
                store.cron_advance(name=entry.name, tick=latest or now, job=None)
                continue
            tick = entry.latest_between(last, now)
            if tick is None:
                continue
            if self._enqueue_tick(entry, tick, now):
                enqueued += 1
        return enqueued

    def _enqueue_tick(self, entry: CronEntry, tick: datetime, now: datetime) -> bool:
        service = self.service
        try:
            job = service.build(
                entry.args_instance(),
                now=now,
                queue=entry.queue,
                priority=entry.priority,
                meta={"cron": {"name": entry.name, "tick": tick.isoformat()}, **entry.meta},
                # Belt and braces beside cron_advance's atomicity: one job per entry and tick,
                # kept after it finished (scope "any") so a late second leader finds it.
                unique=Unique(key=f"cron:{entry.name}:{tick.isoformat()}", scope="any"),
            )
        except InvalidJob:
            # Validated at start-up, so only a kind changed under a running process gets here.
            logger.exception("cron %r: cannot build its job for tick %s", entry.name, tick)
            return False
        result = service.store.cron_advance(name=entry.name, tick=tick, job=job)
        if result is None:
            return False  # another instance recorded this tick (or a later one) first
        service.bus.emit(events.ENQUEUED, queue=job.queue, kind=job.kind, inserted=result.inserted)
        if not result.inserted:
            logger.info(
                "cron %r: tick %s was already enqueued as job %s", entry.name, tick, result.id
            )
            return False
        service.bus.emit(events.CRON_ENQUEUED, name=entry.name, job_id=result.id)
        logger.info("cron %r: enqueued job %s for tick %s", entry.name, result.id, tick.isoformat())
        return True
