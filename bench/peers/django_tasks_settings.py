"""Django settings for the django-tasks-db peer (``ANOLE_PEER_STORE`` postgres | sqlite)."""

import os

STORE = os.environ.get("ANOLE_PEER_STORE", "postgres")
SECRET_KEY = "bench-only"
USE_TZ = True
INSTALLED_APPS = ["django_tasks", "django_tasks_db"]
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"
if STORE == "postgres":
    DATABASES = {
        "default": {
            "ENGINE": "django.db.backends.postgresql",
            "NAME": os.environ.get("ANOLE_PEER_PG_DB", "anole_peers_django_tasks"),
            "USER": "postgres",
            "HOST": "127.0.0.1",
            "PORT": "5432",
        }
    }
else:
    DATABASES = {
        "default": {
            "ENGINE": "django.db.backends.sqlite3",
            "NAME": os.environ.get("ANOLE_PEER_SQLITE", "/tmp/anole_peers_django_tasks.sqlite3"),
            "OPTIONS": {
                "transaction_mode": "IMMEDIATE",
                "timeout": 20,
                "init_command": "PRAGMA journal_mode=WAL;",
            },
        }
    }
TASKS = {"default": {"BACKEND": "django_tasks_db.DatabaseBackend"}}
LOGGING_CONFIG = None
