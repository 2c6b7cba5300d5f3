"""Re-exports the database store's models so Django finds them under the ``anole_jobs`` app."""

from __future__ import annotations

from anole_jobs.stores.database.models import *  # noqa: F403
from anole_jobs.stores.database.models import Cron, Job, Leader

__all__ = ["Cron", "Job", "Leader"]
