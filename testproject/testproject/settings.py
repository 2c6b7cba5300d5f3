"""Settings of the anole_jobs test project.

SQLite (``testproject/db.sqlite3``) by default. Set ``DATABASE_URL`` to run on PostgreSQL
instead, e.g. ``DATABASE_URL=postgresql://postgres@127.0.0.1:5432/anole_demo``.
Jobs live in the same database as the app's own tables, so an enqueue inside
``transaction.atomic()`` commits or rolls back with them.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

from django.core.exceptions import ImproperlyConfigured

BASE_DIR = Path(__file__).resolve().parent.parent

SECRET_KEY = os.environ.get("DJANGO_SECRET_KEY", "testproject-insecure-key-do-not-deploy")
DEBUG = os.environ.get("DJANGO_DEBUG", "1") == "1"
ALLOWED_HOSTS = ["127.0.0.1", "localhost", "testserver"]

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.messages",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    # The admin's CSS and scripts (the admin login is the dashboard's sign-in page): served
    # by runserver, and by the project's URLs while DEBUG is on (see urls.py).
    "django.contrib.staticfiles",
    "anole_jobs",
    "signups",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
]

# The Django admin (/admin/) shows the jobs table; the jobs admin routes live at /ops/jobs/.
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
STATIC_URL = "static/"

ROOT_URLCONF = "testproject.urls"
WSGI_APPLICATION = "testproject.wsgi.application"


def database_from_url(url: str) -> dict[str, Any]:
    """A DATABASES entry for ``postgresql://user:password@host:port/name``.

    Parsed by hand (no dj-database-url dependency); only PostgreSQL URLs are accepted.
    """
    parts = urlsplit(url)
    if parts.scheme not in ("postgres", "postgresql"):
        raise ImproperlyConfigured(
            f"DATABASE_URL must be a postgresql://user@host:port/name URL, got scheme "
            f"{parts.scheme!r}; unset DATABASE_URL to use SQLite"
        )
    name = unquote(parts.path.lstrip("/"))
    if not name:
        raise ImproperlyConfigured("DATABASE_URL names no database: postgresql://user@host/NAME")
    return {
        "ENGINE": "django.db.backends.postgresql",
        "NAME": name,
        "USER": unquote(parts.username or ""),
        "PASSWORD": unquote(parts.password or ""),
        "HOST": parts.hostname or "",
        "PORT": str(parts.port or ""),
    }


if os.environ.get("DATABASE_URL"):
    DATABASES = {"default": database_from_url(os.environ["DATABASE_URL"])}
else:
    DATABASES = {
        "default": {
            "ENGINE": "django.db.backends.sqlite3",
            "NAME": BASE_DIR / "db.sqlite3",
            # Several worker threads write at once: take the write lock when a transaction
            # begins (no deadlock-prone lock upgrades), wait up to 20 s for it, and let
            # readers work beside the writer (WAL).
            "OPTIONS": {
                "transaction_mode": "IMMEDIATE",
                "timeout": 20,
                "init_command": "PRAGMA journal_mode=WAL;",
            },
        }
    }

DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

ANOLE_JOBS = {
    "STORE": {"database": "default"},
    "QUEUES": {"default": {}, "mail": {"concurrency": 4}},
}

# The welcome emails go to an in-memory outbox (django.core.mail.outbox);
# EMAIL_BACKEND=django.core.mail.backends.console.EmailBackend prints them instead.
EMAIL_BACKEND = os.environ.get("EMAIL_BACKEND", "django.core.mail.backends.locmem.EmailBackend")
DEFAULT_FROM_EMAIL = "welcome@example.com"
REPORTS_TO = ["ops@example.com"]

USE_TZ = True
TIME_ZONE = "UTC"
LANGUAGE_CODE = "en-us"
USE_I18N = False

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {"plain": {"format": "%(asctime)s %(levelname)s %(name)s: %(message)s"}},
    "handlers": {"console": {"class": "logging.StreamHandler", "formatter": "plain"}},
    "loggers": {
        "anole_jobs": {
            "handlers": ["console"],
            "level": os.environ.get("ANOLE_JOBS_LOG_LEVEL", "WARNING"),
            "propagate": False,
        },
    },
}
