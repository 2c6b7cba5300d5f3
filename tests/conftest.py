"""Shared fixtures: the store matrix and the fake clock.

Every contract test runs once per store: memory, SQLite (a file), PostgreSQL and Redis. A
store whose server does not answer is skipped with the reason, unless `ANOLE_TEST_REQUIRE`
names it (comma-separated: "postgres,redis"), in which case its tests fail instead.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from django.conf import settings as django_settings

from anole_jobs.api import jobs as jobs_facade
from anole_jobs.testing import FakeClock

REQUIRED = {
    name.strip() for name in os.environ.get("ANOLE_TEST_REQUIRE", "").split(",") if name.strip()
}
_availability: dict[str, str | None] = {}


def _probe_postgres() -> str | None:
    try:
        import psycopg
    except ImportError:
        return "psycopg is not installed (pip install -e '.[dev]')"
    db = django_settings.DATABASES["pg"]
    try:
        psycopg.connect(
            host=db["HOST"], port=db["PORT"], user=db["USER"], dbname="postgres", connect_timeout=3
        ).close()
    except Exception as exc:  # noqa: BLE001 - any failure means "not here"
        return f"PostgreSQL at {db['HOST']}:{db['PORT']} does not answer ({exc.__class__.__name__})"
    return None


def _probe_redis() -> str | None:
    try:
        import redis
    except ImportError:
        return "redis/django-redis is not installed (pip install -e '.[dev]')"
    try:
        redis.Redis.from_url(django_settings.REDIS_TEST_URL, socket_connect_timeout=3).ping()
    except Exception as exc:  # noqa: BLE001
        return (
            f"Redis at {django_settings.REDIS_TEST_URL} does not answer ({exc.__class__.__name__})"
        )
    return None


def unavailable(service: str) -> str | None:
    """Why `service` ("postgres"/"redis") cannot be tested here, or None when it can."""
    if service not in _availability:
        _availability[service] = _probe_postgres() if service == "postgres" else _probe_redis()
    return _availability[service]


def require(service: str) -> None:
    """Skip (or, when ANOLE_TEST_REQUIRE names it, fail) a test that needs `service`."""
    reason = unavailable(service)
    if reason is None:
        return
    if service in REQUIRED:
        pytest.fail(f"ANOLE_TEST_REQUIRE names {service}, but {reason}", pytrace=False)
    pytest.skip(f"{service} tests skipped: {reason} (set ANOLE_TEST_REQUIRE={service} to fail)")


def _needs(item: Any) -> set[str]:
    return {service for marker in item.iter_markers("needs") for service in marker.args}


def pytest_configure(config: Any) -> None:
    config.addinivalue_line("markers", "needs(*services): the test needs postgres and/or redis")


def pytest_collection_modifyitems(config: Any, items: list[Any]) -> None:
    """Skip (or refuse to run) tests whose server is absent, before any database is set up:
    pytest-django creates the test databases that the collected tests' markers name."""
    needed = set().union(*(_needs(item) for item in items)) if items else set()
    for service in sorted(needed):
        reason = unavailable(service)
        if reason is None:
            continue
        if service in REQUIRED:
            pytest.exit(f"ANOLE_TEST_REQUIRE names {service}, but {reason}", returncode=3)
        _skipped_services.add(service)
        skip = pytest.mark.skip(
            reason=f"{service} tests skipped: {reason} (set ANOLE_TEST_REQUIRE={service} to fail)"
        )
        for item in items:
            if service in _needs(item):
                # The closest django_db marker wins: one naming no database keeps pytest-django
                # from creating the absent server's test database (module marks included).
                item.add_marker(pytest.mark.django_db(databases=[]), append=False)
                item.add_marker(skip)


def pytest_report_header(config: Any) -> list[str]:
    lines = []
    for service in ("postgres", "redis"):
        reason = unavailable(service)
        lines.append(
            f"anole_jobs {service}: {'available' if reason is None else 'SKIPPED: ' + reason}"
        )
    if REQUIRED:
        lines.append(f"anole_jobs required services: {', '.join(sorted(REQUIRED))}")
    return lines


_skipped_services: set[str] = set()


def pytest_terminal_summary(terminalreporter: Any) -> None:
    missing = sorted(_skipped_services)
    if missing:
        terminalreporter.write_line(
            f"anole_jobs: tests for {', '.join(missing)} were skipped (server not answering); "
            "set ANOLE_TEST_REQUIRE to make that a failure",
            yellow=True,
        )


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def recorder() -> Iterator[list[dict[str, Any]]]:
    from tests.sampleapp import jobs as sample

    sample.CALLS.clear()
    sample.HOOKS.clear()
    yield sample.CALLS
    sample.CALLS.clear()
    sample.HOOKS.clear()


@dataclass
class StoreEnv:
    """One store under test: its name, the facade configured for it, and the fake clock."""

    name: str
    jobs: Any
    clock: FakeClock
    settings: Any

    @property
    def store(self) -> Any:
        """The store itself, without the service's instrumenting wrapper."""
        store = self.jobs.service.store
        return getattr(store, "inner", store)

    @property
    def sql(self) -> bool:
        return self.name in ("sqlite", "postgres")

    @property
    def alias(self) -> str | None:
        return {"sqlite": "default", "postgres": "pg"}.get(self.name)

    def configure(self, **extra: Any) -> None:
        """Re-apply ANOLE_JOBS with `extra` keys (the facade rebuilds its service)."""
        self.settings.ANOLE_JOBS = {**self.settings.ANOLE_JOBS, **extra}


STORE_PARAMS = [
    pytest.param("memory", id="memory"),
    pytest.param(
        "sqlite",
        id="sqlite",
        marks=pytest.mark.django_db(databases=["default"], transaction=True),
    ),
    pytest.param(
        "postgres",
        id="postgres",
        marks=[
            pytest.mark.needs("postgres"),
            pytest.mark.django_db(databases=["default", "pg"], transaction=True),
        ],
    ),
    pytest.param("redis", id="redis", marks=pytest.mark.needs("redis")),
]


def base_anole_settings(name: str, clock: FakeClock) -> dict[str, Any]:
    store: Any = {
        "memory": "memory",
        "sqlite": {"database": "default"},
        "postgres": {"database": "pg"},
        "redis": {"redis": "jobs"},
    }[name]
    config: dict[str, Any] = {
        "STORE": store,
        "RUN": "manual",
        "CLOCK": clock,
        "QUEUES": {"default": {}, "mail": {"concurrency": 4}},
    }
    if name == "redis":
        config["KEY_PREFIX"] = f"anole-test:{uuid.uuid4().hex[:12]}:"
    return config


def _flush_redis(prefix: str) -> None:
    import redis

    client = redis.Redis.from_url(django_settings.REDIS_TEST_URL)
    keys = list(client.scan_iter(match=prefix + "*", count=1000))
    for start in range(0, len(keys), 500):
        client.delete(*keys[start : start + 500])


@pytest.fixture(params=STORE_PARAMS)
def env(request: Any, settings: Any, clock: FakeClock, recorder: Any) -> Iterator[StoreEnv]:
    name = request.param
    settings.ANOLE_JOBS = base_anole_settings(name, clock)
    store_env = StoreEnv(name=name, jobs=jobs_facade, clock=clock, settings=settings)
    yield store_env
    jobs_facade.reset()
    if name == "redis":
        _flush_redis(settings.ANOLE_JOBS["KEY_PREFIX"])
