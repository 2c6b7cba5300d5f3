"""The run statistics' history: the leader rolls each hour that has ended up into one row per
queue, then drops the minutes and hours past their horizons (``ANOLE_JOBS['STATS']``).

Off the jobs' path on purpose: a job's claim and finish write its minute's counters and
nothing more, whatever history is kept. The store does the work (`Store.roll_up_stats`,
`Store.prune_stats`, see `anole_jobs.stores.stats` for the rules that make a roll-up safe to
repeat); this decides when and in which order: rolled first, so no minute is pruned before its
hour's row holds it.
"""

from __future__ import annotations

import logging
from datetime import datetime

from anole_jobs.service import JobService

logger = logging.getLogger("anole_jobs.maintenance")


class StatsHistory:
    """The leader's roll-up of the statistics' ended hours, and their prune."""

    def __init__(self, service: JobService) -> None:
        self.service = service

    def run_once(self, now: datetime) -> int:
        """Roll up, then prune; how many hourly rows the roll-up wrote."""
        store, keep = self.service.store, self.service.settings.stats
        written = store.roll_up_stats(now=now, keep=keep.hours)
        if written:
            logger.debug("rolled up %d hours of run statistics", written)
        store.prune_stats(minutes_before=now - keep.minutes, hours_before=now - keep.hours)
        return written
