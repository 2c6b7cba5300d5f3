"""Django settings for the bench; the store comes from environment variables that
`python -m bench` sets for itself and for the `runjobs` subprocess it starts:

    ANOLE_BENCH_STORE    memory | sqlite | postgres | redis
    ANOLE_BENCH_RUN      manual (the bench process: enqueue, step) | auto (runjobs)
    ANOLE_BENCH_TMP      a directory for SQLite files
    ANOLE_BENCH_PG_DB    the PostgreSQL database (created and dropped by the bench)
    ANOLE_BENCH_PREFIX   the Redis KEY_PREFIX (its keys are deleted after)
    ANOLE_BENCH_NOTIFY   1 (default) | 0: ANOLE_JOBS["NOTIFY"]
    ANOLE_BENCH_POOL_SIZE  ANOLE_JOBS["POOL_SIZE"] (default: the app's, 2; 0: a connection
                         per runtime thread, as before the shared sessions)
    ANOLE_BENCH_SQLITE_SYNC  a PRAGMA synchronous value (e.g. NORMAL); default: SQLite's own
    ANOLE_BENCH_PG_SYNC_COMMIT  synchronous_commit for the bench's PostgreSQL sessions (e.g.
                         off: measures what the commit flush costs); default: the server's
    ANOLE_BENCH_PG_SERVER_BINDING  1: Django's server_side_binding (psycopg prepares repeated
                         statements); default: client-side binding, Django's default
    ANOLE_BENCH_CONN_MAX_AGE  CONN_MAX_AGE of the bench's database (seconds; e.g. 60 keeps each
                         worker slot's connection between runs); default 0, Django's default

SQLite follows the docs' advice for concurrent writers: WAL, a busy timeout and
`"transaction_mode": "IMMEDIATE"`.
"""

import os
import tempfile

STORE = os.environ.get("ANOLE_BENCH_STORE", "memory")
RUN = os.environ.get("ANOLE_BENCH_RUN", "manual")
TMP = os.environ.get("ANOLE_BENCH_TMP") or tempfile.gettempdir()
PG_HOST = os.environ.get("ANOLE_BENCH_PG_HOST", "127.0.0.1")
PG_PORT = os.environ.get("ANOLE_BENCH_PG_PORT", "5432")
PG_USER = os.environ.get("ANOLE_BENCH_PG_USER", "postgres")
PG_DB = os.environ.get("ANOLE_BENCH_PG_DB", "anole_bench")
REDIS_URL = os.environ.get("ANOLE_BENCH_REDIS", "redis://127.0.0.1:6379/0")
PREFIX = os.environ.get("ANOLE_BENCH_PREFIX", "anole_bench:")
NOTIFY = os.environ.get("ANOLE_BENCH_NOTIFY", "1") != "0"
SQLITE_SYNC = os.environ.get("ANOLE_BENCH_SQLITE_SYNC", "")  # e.g. NORMAL; default: SQLite's
PG_SYNC = os.environ.get("ANOLE_BENCH_PG_SYNC_COMMIT", "")  # e.g. off; default: the server's
PG_SERVER_BINDING = os.environ.get("ANOLE_BENCH_PG_SERVER_BINDING", "") == "1"
CONN_MAX_AGE = int(os.environ.get("ANOLE_BENCH_CONN_MAX_AGE", "0"))

SECRET_KEY = "bench-only"
USE_TZ = True
TIME_ZONE = "UTC"
DEBUG = False
# auth and contenttypes: the dashboard's views (the stats scenario times them) import auth.
INSTALLED_APPS = ["django.contrib.auth", "django.contrib.contenttypes", "anole_jobs", "bench"]
ROOT_URLCONF = "bench.urls"
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

SQLITE = {
    "ENGINE": "django.db.backends.sqlite3",
    "NAME": os.path.join(TMP, "bench.sqlite3"),
    "CONN_MAX_AGE": CONN_MAX_AGE,
    "OPTIONS": {
        "transaction_mode": "IMMEDIATE",
        "timeout": 20,
        "init_command": "PRAGMA journal_mode=WAL;"
        + (f"PRAGMA synchronous={SQLITE_SYNC};" if SQLITE_SYNC else ""),
    },
}
if STORE == "postgres":
    DATABASES = {
        "default": {
            "ENGINE": "django.db.backends.postgresql",
            "NAME": PG_DB,
            "USER": PG_USER,
            "HOST": PG_HOST,
            "PORT": PG_PORT,
            "CONN_MAX_AGE": CONN_MAX_AGE,
            "OPTIONS": {
                **({"options": f"-c synchronous_commit={PG_SYNC}"} if PG_SYNC else {}),
                **({"server_side_binding": True} if PG_SERVER_BINDING else {}),
            },
        }
    }
else:
    DATABASES = {"default": SQLITE}

CACHES = {
    "default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"},
    "jobs": {"BACKEND": "django_redis.cache.RedisCache", "LOCATION": REDIS_URL},
}

_STORES = {
    "memory": "memory",
    "sqlite": {"database": "default"},
    "postgres": {"database": "default"},
    "redis": {"redis": "jobs"},
}
ANOLE_JOBS = {
    "STORE": _STORES[STORE],
    "RUN": RUN,
    "QUEUES": {"default": {"concurrency": 10}},
    "KEY_PREFIX": PREFIX,
    "NOTIFY": NOTIFY,
    **(
        {"POOL_SIZE": int(os.environ["ANOLE_BENCH_POOL_SIZE"])}
        if os.environ.get("ANOLE_BENCH_POOL_SIZE")
        else {}
    ),
}
LOGGING_CONFIG = None
