"""Settings for the test suite.

`default` is a SQLite file (threads share it); `pg` is PostgreSQL at 127.0.0.1:5432, used only
by tests that ask for it (pytest-django creates and drops a database unique to this run).
Redis tests build their own CACHES entry with a key prefix unique to the run.
"""

import os
import tempfile
import uuid

import django

RUN_ID = os.environ.get("ANOLE_TEST_RUN_ID") or uuid.uuid4().hex[:10]
os.environ["ANOLE_TEST_RUN_ID"] = RUN_ID  # subprocesses (end-to-end tests) share it

SECRET_KEY = "tests-only"
USE_TZ = True
TIME_ZONE = "UTC"
INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.messages",
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
    "django.contrib.messages.middleware.MessageMiddleware",
]
TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ]
        },
    }
]
ROOT_URLCONF = "tests.urls"
STATIC_URL = "/static/"  # pytest-django's live_server serves static files under it
_TMP = os.path.join(tempfile.gettempdir(), f"anole_tests_{RUN_ID}")
os.makedirs(_TMP, exist_ok=True)
PG_HOST = os.environ.get("ANOLE_TEST_PG_HOST", "127.0.0.1")
PG_PORT = os.environ.get("ANOLE_TEST_PG_PORT", "5432")
PG_USER = os.environ.get("ANOLE_TEST_PG_USER", "postgres")
DATABASES = {
    "default": {
        "ENGINE": "django.db.backends.sqlite3",
        "NAME": os.path.join(_TMP, "default.sqlite3"),
        "TEST": {"NAME": os.path.join(_TMP, "test_default.sqlite3")},
    },
    "pg": {
        "ENGINE": "django.db.backends.postgresql",
        "NAME": "postgres",
        "USER": PG_USER,
        "HOST": PG_HOST,
        "PORT": PG_PORT,
        "TEST": {"NAME": f"anole_test_{RUN_ID}"},
    },
}


def _free_port() -> str:
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return str(probe.getsockname()[1])


# `pgb`: the same test database as `pg`, through a PgBouncer in transaction pooling mode that
# tests/contract/test_pgbouncer.py starts on this port (nothing listens there otherwise).
PGBOUNCER_PORT = os.environ.get("ANOLE_TEST_PGBOUNCER_PORT") or _free_port()
os.environ["ANOLE_TEST_PGBOUNCER_PORT"] = PGBOUNCER_PORT
_PGB: dict[str, object] = {
    **DATABASES["pg"],
    "PORT": PGBOUNCER_PORT,
    "DISABLE_SERVER_SIDE_CURSORS": True,
    "TEST": {"MIRROR": "pg"},
}
DATABASES["pgb"] = _PGB  # type: ignore[assignment]
REDIS_TEST_URL = os.environ.get("ANOLE_TEST_REDIS", "redis://127.0.0.1:6379/0")
CACHES = {
    "default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"},
    "jobs": {"BACKEND": "django_redis.cache.RedisCache", "LOCATION": REDIS_TEST_URL},
}
ANOLE_JOBS = {"STORE": "memory", "RUN": "manual"}
# The django.tasks backend (docs/tasks.md); tests/sampleapp/tasks.py declares tasks on it.
# Django 5.2 runs it on the django-tasks backport, an app of its own.
TASKS = {
    "default": {"BACKEND": "anole_jobs.tasks.AnoleBackend", "QUEUES": ["default", "mail"]},
}
if django.VERSION < (6,):
    INSTALLED_APPS.append("django_tasks")
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"
LOGGING_CONFIG = None
