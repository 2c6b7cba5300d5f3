"""Settings for the `runjobs` processes of the chaos scenarios: the end-to-end settings (the
store comes from the same ``ANOLE_E2E_*`` variables) plus the chaos app, which logs runs and
arms kill points (`tests.chaos.apps`).

``ANOLE_CHAOS_CRON=1`` adds a cron entry that ticks every minute (a `chaos.tick` job, which
logs its tick), so a kill run also kills leaders right after they recorded a tick.
"""

import os

from tests.e2e.settings import *  # noqa: F403
from tests.e2e.settings import ANOLE_JOBS, INSTALLED_APPS

INSTALLED_APPS = [*INSTALLED_APPS, "tests.chaos"]
CRON_ENTRY = {
    "name": "chaos-minutely",
    "schedule": "* * * * *",
    "job": "tests.chaos.jobs.ChaosTick",
}
if os.environ.get("ANOLE_CHAOS_CRON") == "1":
    ANOLE_JOBS = {**ANOLE_JOBS, "CRON": [CRON_ENTRY]}
