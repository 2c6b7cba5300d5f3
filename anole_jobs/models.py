"""Re-exports the database store's models so Django finds them under the ``anole_jobs`` app.

`Job` here is a row of the jobs table, not `anole_jobs.Job` (what a handler receives): import
it as ``from anole_jobs.models import Job as JobRow``.
"""

from __future__ import annotations

from anole_jobs.stores.database.models import *  # noqa: F403
from anole_jobs.stores.database.models import Cron, Job, Leader

__all__ = ["Cron", "Job", "Leader"]
