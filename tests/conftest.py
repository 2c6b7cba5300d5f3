"""Shared fixtures: the store matrix and the fake clock; the services tests need; the tiers.

Services. Every contract test runs once per store: memory, SQLite (a file), PostgreSQL and
Redis. A test marked ``needs("postgres")``, ``needs("redis")``, ``needs("chromium")`` (the
dashboard's browser test) or ``needs("pgbouncer")`` (PgBouncer in front of PostgreSQL) is
skipped with the reason when that service is absent, unless `ANOLE_TEST_REQUIRE` names it
(comma-separated: "postgres,redis,chromium,pgbouncer"), in which case the run fails instead.

Tiers. The default run (`make test`) is the core suite. The slow tiers — ``chaos`` (real
processes killed and stores cut off), ``e2e`` (real `runjobs` processes started, signalled and
read back), ``fuzz`` (generated hostile requests to the admin surfaces) and ``browser``
(Chromium driving the dashboard) — are left out unless one of these asks for them:

- ``ANOLE_TEST_TIERS=all`` (or a list: ``chaos,e2e,fuzz,browser``), as CI does;
- a marker expression of your own, e.g. ``pytest -m chaos`` or ``pytest -m "not chaos"``;
- naming their files or folders, e.g. ``pytest tests/chaos``.
"""

from __future__ import annotations

import os
import shutil
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from django.conf import settings as django_settings

from anole_jobs.api import jobs as jobs_facade
from anole_jobs.testing import FakeClock

REQUIRED = {
    name.strip() for name in os.environ.get("ANOLE_TEST_REQUIRE", "").split(",") if name.strip()
}
SERVICES = ("postgres", "redis", "chromium", "pgbouncer")
#: The browser the dashboard's browser test drives (Debian's package; no Playwright download).
CHROMIUM = os.environ.get("ANOLE_TEST_CHROMIUM", "/usr/bin/chromium")
#: The slow tiers, each a marker, and what each holds.
TIERS = {
    "chaos": "real runjobs processes killed, stores cut off",
    "e2e": "real runjobs processes started, signalled and read back, on every durable store",
    "fuzz": "generated hostile requests to the admin surfaces",
    "browser": "Chromium driving the dashboard",
}
TIERS_ENV = "ANOLE_TEST_TIERS"
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


def _probe_chromium() -> str | None:
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        return "playwright is not installed (pip install -e '.[dev]')"
    if not (os.path.isfile(CHROMIUM) and os.access(CHROMIUM, os.X_OK)):
        found = shutil.which("chromium")
        hint = f"; one is at {found}: set ANOLE_TEST_CHROMIUM" if found else ""
        return f"{CHROMIUM} is missing (apt-get install chromium{hint})"
    return None


def _probe_pgbouncer() -> str | None:
    from tests.support.pgbouncer import pgbouncer_unavailable

    return _probe_postgres() or pgbouncer_unavailable()


_PROBES = {
    "postgres": _probe_postgres,
    "redis": _probe_redis,
    "chromium": _probe_chromium,
    "pgbouncer": _probe_pgbouncer,
}


def unavailable(service: str) -> str | None:
    """Why `service` (postgres, redis, chromium) cannot be tested here, or None when it can."""
    if service not in _availability:
        _availability[service] = _PROBES[service]()
    return _availability[service]


def _skip_reason(service: str, reason: str) -> str:
    return f"{service} tests skipped: {reason} (set ANOLE_TEST_REQUIRE={service} to fail)"


def require(service: str) -> None:
    """Skip (or, when ANOLE_TEST_REQUIRE names it, fail) a test that needs `service`."""
    reason = unavailable(service)
    if reason is None:
        return
    if service in REQUIRED:
        pytest.fail(f"ANOLE_TEST_REQUIRE names {service}, but {reason}", pytrace=False)
    pytest.skip(_skip_reason(service, reason))


def _needs(item: Any) -> set[str]:
    return {service for marker in item.iter_markers("needs") for service in marker.args}


def pytest_configure(config: Any) -> None:
    config.addinivalue_line(
        "markers", "needs(*services): the test needs postgres, redis and/or chromium"
    )
    unknown = REQUIRED - set(SERVICES)
    if unknown:
        raise pytest.UsageError(
            f"ANOLE_TEST_REQUIRE names {', '.join(sorted(unknown))}; "
            f"it takes a comma-separated list of {', '.join(SERVICES)}"
        )
    tiers = _tiers_asked()
    if tiers - {"all", *TIERS}:
        raise pytest.UsageError(
            f"{TIERS_ENV}={os.environ[TIERS_ENV]!r}: it takes 'all' or a comma-separated "
            f"list of {', '.join(TIERS)}"
        )


def _tiers_asked() -> set[str]:
    return {name.strip() for name in os.environ.get(TIERS_ENV, "").split(",") if name.strip()}


def _named_paths(config: Any) -> list[Path]:
    """The files and folders named on the command line, below the tests folder itself."""
    base = Path(str(config.invocation_params.dir))
    tests = Path(__file__).resolve().parent
    named = []
    for arg in config.args:
        path = (base / arg.split("::")[0]).resolve()
        if path != tests and path.is_relative_to(tests):
            named.append(path)
    return named


def _tier_of(item: Any) -> str | None:
    return next((tier for tier in TIERS if item.get_closest_marker(tier)), None)


_left_out: dict[str, int] = {}


def _leave_out_slow_tiers(config: Any, items: list[Any]) -> None:
    """Deselect the slow tiers' tests unless the run asks for them (see the module docstring)."""
    if config.option.markexpr:
        return  # the user's own marker expression decides
    asked = _tiers_asked()
    if "all" in asked:
        return
    named = _named_paths(config)
    kept, dropped = [], []
    for item in items:
        tier = _tier_of(item)
        path = Path(str(item.path)).resolve()
        if tier is None or tier in asked or any(path.is_relative_to(p) for p in named):
            kept.append(item)
        else:
            dropped.append(item)
            _left_out[tier] = _left_out.get(tier, 0) + 1
    if dropped:
        config.hook.pytest_deselected(items=dropped)
        items[:] = kept


def pytest_collection_modifyitems(config: Any, items: list[Any]) -> None:
    """Leave out the slow tiers, then skip (or refuse to run) tests whose service is absent,
    before any database is set up: pytest-django creates the test databases that the collected
    tests' markers name."""
    _leave_out_slow_tiers(config, items)
    needed = set().union(*(_needs(item) for item in items)) if items else set()
    for service in sorted(needed):
        reason = unavailable(service)
        if reason is None:
            continue
        if service in REQUIRED:
            pytest.exit(f"ANOLE_TEST_REQUIRE names {service}, but {reason}", returncode=3)
        _skipped_services.add(service)
        skip = pytest.mark.skip(reason=_skip_reason(service, reason))
        for item in items:
            if service in _needs(item):
                # The closest django_db marker wins: one naming no database keeps pytest-django
                # from creating the absent server's test database (module marks included).
                item.add_marker(pytest.mark.django_db(databases=[]), append=False)
                item.add_marker(skip)


def pytest_report_header(config: Any) -> list[str]:
    lines = []
    for service in SERVICES:
        reason = unavailable(service)
        lines.append(
            f"anole_jobs {service}: {'available' if reason is None else 'SKIPPED: ' + reason}"
        )
    if REQUIRED:
        lines.append(f"anole_jobs required services: {', '.join(sorted(REQUIRED))}")
    asked = _tiers_asked()
    if config.option.markexpr:
        lines.append(f"anole_jobs tiers: as -m {config.option.markexpr!r} selects")
    elif "all" in asked:
        lines.append("anole_jobs tiers: all (core, " + ", ".join(TIERS) + ")")
    else:
        slow = ", ".join(f"{tier} ({TIERS[tier]})" for tier in TIERS if tier not in asked)
        lines.append(
            f"anole_jobs tiers: core{''.join(', ' + t for t in TIERS if t in asked)}; "
            f"left out: {slow} (set {TIERS_ENV}=all to run them)"
        )
    return lines


_skipped_services: set[str] = set()


def pytest_terminal_summary(terminalreporter: Any) -> None:
    missing = sorted(_skipped_services)
    if missing:
        terminalreporter.write_line(
            f"anole_jobs: tests for {', '.join(missing)} were skipped (not available here); "
            "set ANOLE_TEST_REQUIRE to make that a failure",
            yellow=True,
        )
    if _left_out:
        counts = ", ".join(f"{n} {tier}" for tier, n in sorted(_left_out.items()))
        terminalreporter.write_line(
            f"anole_jobs: slow tiers left out ({counts}); run them with "
            f"{TIERS_ENV}=all make test, or e.g. pytest -m chaos",
        )


@pytest.fixture(autouse=True, scope="session")
def thread_deaths() -> Iterator[list[tuple[str, BaseException]]]:
    """A background thread that dies in the test process is recorded (and logged at
    CRITICAL) instead of sending SIGTERM to pytest, as it would to a worker process."""
    from anole_jobs.background import set_death_handler

    deaths: list[tuple[str, BaseException]] = []
    previous = set_death_handler(lambda name, exc: deaths.append((name, exc)))
    yield deaths
    set_death_handler(previous)


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
    def alias(self) -> str | None:
        """The Django database alias whose transactions the store's writes join (its jobs
        are rows of that database, which the Django admin shows), None when it has none."""
        store = self.store
        return store.atomic_alias if store.supports_transactions else None

    def has(self, capability: str) -> bool:
        """Whether the store has `capability`, one of the contract's capability flags."""
        value = getattr(self.store, capability)
        assert isinstance(value, bool), f"{capability} is no capability of the store contract"
        return value

    def require(self, capability: str, *, absent: bool = False) -> None:
        """Skip the test unless the store has `capability` (lacks it, with `absent`)."""
        if self.has(capability) == absent:
            lacking = "has" if absent else "lacks"
            pytest.skip(f"the {self.name} store {lacking} {capability}")

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
    # A local 3-master Redis Cluster the session starts (tests/support/redis_cluster.py).
    pytest.param("redis_cluster", id="redis_cluster"),
]
#: The cache alias of the Redis Cluster the tests start.
CLUSTER_ALIAS = "jobs_cluster"


def base_anole_settings(name: str, clock: FakeClock) -> dict[str, Any]:
    store: Any = {
        "memory": "memory",
        "sqlite": {"database": "default"},
        "postgres": {"database": "pg"},
        "redis": {"redis": "jobs"},
        "redis_cluster": {"redis": CLUSTER_ALIAS},
    }[name]
    config: dict[str, Any] = {
        "STORE": store,
        "RUN": "manual",
        "CLOCK": clock,
        "QUEUES": {"default": {}, "mail": {"concurrency": 4}},
    }
    if name in ("redis", "redis_cluster"):
        config["KEY_PREFIX"] = f"anole-test:{uuid.uuid4().hex[:12]}:"
    return config


@pytest.fixture(scope="session")
def local_redis_cluster(tmp_path_factory: Any) -> Iterator[Any]:
    """A local Redis Cluster of three masters for the session; skipped (or failed, when
    ANOLE_TEST_REQUIRE names redis) where redis-server or redis-cli is missing."""
    from tests.support.redis_cluster import RedisCluster, cluster_unavailable

    reason = cluster_unavailable()
    if reason is not None:
        if "redis" in REQUIRED:
            pytest.fail(f"ANOLE_TEST_REQUIRE names redis, but {reason}", pytrace=False)
        pytest.skip(_skip_reason("redis", reason))
    cluster = RedisCluster(tmp_path_factory.mktemp("redis-cluster"))
    try:
        cluster.start()
        yield cluster
    finally:
        cluster.stop()


def cluster_cache(cluster: Any) -> dict[str, Any]:
    """The CACHES entry of the test cluster (django-redis with the cluster connection factory)."""
    return {
        "BACKEND": "django_redis.cache.RedisCache",
        "LOCATION": cluster.urls[0],
        "OPTIONS": {"CONNECTION_FACTORY": "anole_jobs.stores.redis.ClusterConnectionFactory"},
    }


def _flush_redis(prefix: str) -> None:
    import redis

    client = redis.Redis.from_url(django_settings.REDIS_TEST_URL)
    keys = list(client.scan_iter(match=prefix + "*", count=1000))
    for start in range(0, len(keys), 500):
        client.delete(*keys[start : start + 500])


@pytest.fixture(params=STORE_PARAMS)
def env(request: Any, settings: Any, clock: FakeClock, recorder: Any) -> Iterator[StoreEnv]:
    name = request.param
    cluster = None
    if name == "redis_cluster":
        cluster = request.getfixturevalue("local_redis_cluster")
        settings.CACHES = {**settings.CACHES, CLUSTER_ALIAS: cluster_cache(cluster)}
    settings.ANOLE_JOBS = base_anole_settings(name, clock)
    store_env = StoreEnv(name=name, jobs=jobs_facade, clock=clock, settings=settings)
    yield store_env
    jobs_facade.reset()
    if name == "redis":
        _flush_redis(settings.ANOLE_JOBS["KEY_PREFIX"])
    if cluster is not None:
        from anole_jobs.stores.redis.keys import Keys

        cluster.delete(Keys(settings.ANOLE_JOBS["KEY_PREFIX"]).pattern())
