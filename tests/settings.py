"""Settings for the test suite: SQLite by default; PostgreSQL and Redis are added per test."""

import os

SECRET_KEY = "tests-only"
USE_TZ = True
TIME_ZONE = "UTC"
INSTALLED_APPS = [
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "anole_jobs",
    "tests.sampleapp",
]
MIDDLEWARE = [
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
]
ROOT_URLCONF = "tests.urls"
DATABASES = {
    "default": {"ENGINE": "django.db.backends.sqlite3", "NAME": ":memory:"},
}
PG_TEST_DSN = os.environ.get("ANOLE_TEST_POSTGRES", "postgresql://postgres@127.0.0.1:5432/test")
REDIS_TEST_URL = os.environ.get("ANOLE_TEST_REDIS", "redis://127.0.0.1:6379/0")
ANOLE_JOBS = {"STORE": "memory", "RUN": "manual"}
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"
