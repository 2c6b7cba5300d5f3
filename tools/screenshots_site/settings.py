"""Settings of the site `tools.screenshots` photographs: a SQLite file in a temporary folder
(``ANOLE_SCREENSHOTS_DB``), the dashboard mounted at ``/ops/jobs/``, and a few job kinds that
complete, fail, retry and run long (`tools.screenshots_site.jobs`)."""

import os

SECRET_KEY = "screenshots-only"
DEBUG = False
ALLOWED_HOSTS = ["127.0.0.1", "localhost"]
USE_TZ = True
TIME_ZONE = "UTC"
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"
INSTALLED_APPS = [
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "anole_jobs",
    "tools.screenshots_site",
]
MIDDLEWARE = [
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
]
ROOT_URLCONF = "tools.screenshots_site.urls"
DATABASES = {
    "default": {
        "ENGINE": "django.db.backends.sqlite3",
        "NAME": os.environ.get("ANOLE_SCREENSHOTS_DB", "screenshots.sqlite3"),
        "OPTIONS": {
            "transaction_mode": "IMMEDIATE",
            "timeout": 20,
            "init_command": "PRAGMA journal_mode=WAL;",
        },
    }
}
ANOLE_JOBS = {
    "STORE": {"database": "default"},
    "LEASE": 3,  # heartbeats every second: the workers page fills quickly
    "QUEUES": {
        "default": {"concurrency": 4, "drain_timeout": 1},
        "mail": {"concurrency": 2, "drain_timeout": 1, "rate_limit": "600/m"},
        "reports": {"concurrency": 1, "drain_timeout": 1},
    },
    "CRON": [
        {
            "name": "nightly-report",
            "schedule": "0 3 * * *",
            "job": "tools.screenshots_site.jobs.DailyReport",
            "args": {"day": "yesterday"},
        },
        {
            "name": "hourly-ledger-sync",
            "schedule": "0 * * * *",
            "job": "tools.screenshots_site.jobs.SyncLedger",
            "args": {"account": "acme", "fail_first": 0},
        },
    ],
}
LOGGING_CONFIG = None
