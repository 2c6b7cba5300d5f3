"""Settings for the `runjobs` subprocesses the end-to-end tests start (and for the helper
commands `e2e_enqueue` / `e2e_jobs`). The store comes from environment variables that
`tests/e2e/conftest.py` sets per test:

    ANOLE_E2E_STORE        sqlite | postgres | redis | redis_cluster
    ANOLE_E2E_SQLITE       the SQLite file (the jobs store for sqlite; the default DB otherwise)
    ANOLE_E2E_PG_DB        the PostgreSQL database (postgres), created and dropped per session
    ANOLE_E2E_REDIS        the Redis URL (redis_cluster: a node of the cluster);
                           ANOLE_E2E_KEY_PREFIX the KEY_PREFIX, unique per test
    ANOLE_E2E_QUEUES       more queues (comma-separated), each of concurrency 2
    ANOLE_E2E_LEASE        LEASE in seconds (default 2: rescues come quickly)
    ANOLE_E2E_DRAIN        drain_timeout of the "default" queue in seconds (default 2)
    ANOLE_E2E_CONCURRENCY  concurrency of the "default" queue (default 4)
    ANOLE_E2E_DEPLOYMENT   DEPLOYMENT (default "server")
    ANOLE_E2E_NOTIFY       1 (default) | 0
    ANOLE_E2E_PG_PORT      the PostgreSQL port (default: ANOLE_TEST_PG_PORT or 5432)
    ANOLE_E2E_STARTUP_TIMEOUT  STARTUP_TIMEOUT in seconds (default 10)
    ANOLE_E2E_ERROR_REPORTER   ERROR_REPORTER (default: none); tests.e2e.reporter.to_file
                               writes to the file ANOLE_E2E_REPORTS names
    ANOLE_E2E_LIMITS       JSON of limit options added to the "default" queue (default none)
    ANOLE_E2E_MAX_RESULT_BYTES  MAX_RESULT_BYTES (default: the app's, 1 MiB)
    ANOLE_E2E_THREAD_DEATH      a background thread to kill (tests/e2e/faults.py)

Short leases and drains keep the tests fast; the rules they check are stated relative to them.
"""

import json
import os

STORE = os.environ.get("ANOLE_E2E_STORE", "sqlite")
SQLITE_PATH = os.environ.get("ANOLE_E2E_SQLITE", "e2e.sqlite3")

SECRET_KEY = "e2e-tests-only"
USE_TZ = True
TIME_ZONE = "UTC"
DEBUG = False
INSTALLED_APPS = ["anole_jobs", "tests.sampleapp"]
if os.environ.get("ANOLE_E2E_THREAD_DEATH"):
    INSTALLED_APPS.append("tests.e2e.faults.FaultsConfig")
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"
LOGGING_CONFIG = None

# SQLite as the docs advise for a worker process with several threads: WAL (readers never
# block the writer) and a generous busy timeout.
_SQLITE = {
    "ENGINE": "django.db.backends.sqlite3",
    "NAME": SQLITE_PATH,
    "OPTIONS": {"timeout": 20, "init_command": "PRAGMA journal_mode=WAL;"},
}
if STORE == "postgres":
    DATABASES = {
        "default": {
            "ENGINE": "django.db.backends.postgresql",
            "NAME": os.environ["ANOLE_E2E_PG_DB"],
            "USER": os.environ.get("ANOLE_TEST_PG_USER", "postgres"),
            "HOST": os.environ.get("ANOLE_TEST_PG_HOST", "127.0.0.1"),
            "PORT": os.environ.get(
                "ANOLE_E2E_PG_PORT", os.environ.get("ANOLE_TEST_PG_PORT", "5432")
            ),
        }
    }
else:
    DATABASES = {"default": _SQLITE}

CACHES = {
    "default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"},
    "jobs": {
        "BACKEND": "django_redis.cache.RedisCache",
        "LOCATION": os.environ.get("ANOLE_E2E_REDIS", "redis://127.0.0.1:6379/0"),
    },
}
if STORE == "redis_cluster":
    CACHES["jobs"]["OPTIONS"] = {
        "CONNECTION_FACTORY": "anole_jobs.stores.redis.ClusterConnectionFactory"
    }

ANOLE_JOBS = {
    "STORE": {"redis": "jobs"} if STORE.startswith("redis") else {"database": "default"},
    "LEASE": float(os.environ.get("ANOLE_E2E_LEASE", "2")),
    "QUEUES": {
        "default": {
            "concurrency": int(os.environ.get("ANOLE_E2E_CONCURRENCY", "4")),
            "drain_timeout": float(os.environ.get("ANOLE_E2E_DRAIN", "2")),
        },
        "other": {"concurrency": 1, "drain_timeout": 1},
    },
    "DEPLOYMENT": os.environ.get("ANOLE_E2E_DEPLOYMENT", "server"),
    "NOTIFY": os.environ.get("ANOLE_E2E_NOTIFY", "1") != "0",
    "KEY_PREFIX": os.environ.get("ANOLE_E2E_KEY_PREFIX", "anole-e2e:"),
    "STARTUP_TIMEOUT": float(os.environ.get("ANOLE_E2E_STARTUP_TIMEOUT", "10")),
}
for _queue in filter(None, os.environ.get("ANOLE_E2E_QUEUES", "").split(",")):
    ANOLE_JOBS["QUEUES"][_queue] = {"concurrency": 2, "drain_timeout": 1}
if os.environ.get("ANOLE_E2E_LIMITS"):
    ANOLE_JOBS["QUEUES"]["default"].update(json.loads(os.environ["ANOLE_E2E_LIMITS"]))
if os.environ.get("ANOLE_E2E_ERROR_REPORTER"):
    ANOLE_JOBS["ERROR_REPORTER"] = os.environ["ANOLE_E2E_ERROR_REPORTER"]
if os.environ.get("ANOLE_E2E_MAX_RESULT_BYTES"):
    ANOLE_JOBS["MAX_RESULT_BYTES"] = int(os.environ["ANOLE_E2E_MAX_RESULT_BYTES"])
