"""The time the surfaces show ("3m ago", "as of"): the configured ``CLOCK``, through the
facade, so a fake clock in tests moves the pages too."""

from __future__ import annotations

from datetime import datetime

from anole_jobs.api import jobs


def now() -> datetime:
    return jobs.now()
