"""Settings for the `runjobs` processes of the chaos scenarios: the end-to-end settings (the
store comes from the same ``ANOLE_E2E_*`` variables) plus the chaos app, which logs runs and
arms kill points (`tests.chaos.apps`)."""

from tests.e2e.settings import *  # noqa: F403
from tests.e2e.settings import INSTALLED_APPS

INSTALLED_APPS = [*INSTALLED_APPS, "tests.chaos"]
