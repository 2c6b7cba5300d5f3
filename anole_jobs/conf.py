"""A typed, lazily read view of ``settings.ANOLE_JOBS`` (the keys are in docs/configuration.md).

`read_settings()` parses the dict once per settings change and either returns a `Settings` or
raises `ConfigurationError` listing every problem. `problems()` returns the same findings as
data for the system checks, which must never raise nor connect to a server.

Leaf rule: imports only Django settings helpers, `bounds`, `durations`, `clock`, `errors`
and `limits`.
"""

from __future__ import annotations

import difflib
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any, Literal

from django.conf import settings as django_settings
from django.core.signals import setting_changed
from django.utils.module_loading import import_string

from anole_jobs.bounds import name_problem
from anole_jobs.clock import Clock, checked, system_clock
from anole_jobs.core import FINAL_STATES
from anole_jobs.durations import to_timedelta
from anole_jobs.errors import ConfigurationError
from anole_jobs.limits import (
    LIMIT_KEYS,
    Limits,
    parse_concurrency,
    parse_fairness,
    parse_partition,
    parse_rate,
)
from anole_jobs.offload import INLINE_PAYLOAD_MAX, OFFLOAD_PAYLOAD_MAX, Offload

KNOWN_KEYS = (
    "STORE",
    "QUEUES",
    "RUN",
    "DEPLOYMENT",
    "CLOCK",
    "LEASE",
    "MIGRATE",
    "TABLE_PREFIX",
    "KEY_PREFIX",
    "NOTIFY",
    "PRUNE",
    "CRON",
    "METRICS",
    "METRICS_REGISTRY",
    "TRACING",
    "ADMIN_PERMISSION",
    "STARTUP_TIMEOUT",
    "MAX_PAYLOAD_BYTES",
    "ERROR_REPORTER",
    "MAX_RESULT_BYTES",
    "POOL_SIZE",
    "DIRECT_DATABASE",
    "TRANSACTION_POOLER",
    "JOB_LOG_LINES",
    "ENCRYPTION_KEYS",
    "OFFLOAD",
    "STATS",
)
QUEUE_KEYS = ("concurrency", "drain_timeout", *LIMIT_KEYS)
METRICS_REGISTRIES = ("default", "private")
#: The states `PRUNE` may name: a job is pruned only once it has finished.
PRUNE_STATES = FINAL_STATES
DEFAULT_PRUNE = {
    "completed": timedelta(hours=24),
    "dead": timedelta(days=30),
    "cancelled": timedelta(days=7),
}
SUPPORTED_VENDOR_ENGINES = {
    "django.db.backends.sqlite3": "sqlite",
    "django.db.backends.postgresql": "postgresql",
    "django.contrib.gis.db.backends.postgis": "postgresql",
    "django.contrib.gis.db.backends.spatialite": "sqlite",
}
#: How long the run statistics keep their points (docs/configuration.md#stats): per minute for
#: recent charts, per hour (rolled up by the leader) for the longer ranges.
DEFAULT_STATS_MINUTES = timedelta(days=1)
DEFAULT_STATS_HOURS = timedelta(days=30)
STATS_KEYS = ("MINUTES", "HOURS")
#: The longest minute points may be kept: the counters a job writes are the minute points,
#: and on Redis they expire this long after their last write (the hot path sets that expiry,
#: and a setting must not make every finish cost more).
STATS_MINUTES_MAX = timedelta(hours=48)
#: The shortest: the last hour's chart reads sixty minutes, and a minute goes only once its
#: hour has ended and been rolled up; two hours keep both with room to spare.
STATS_MINUTES_MIN = timedelta(hours=2)
#: The most log records `JOB_LOG_LINES` may keep per job (each is stored with the job).
MAX_JOB_LOG_LINES = 10_000
DJANGO_REDIS_BACKENDS = ("django_redis.cache.RedisCache",)


@dataclass(frozen=True, kw_only=True)
class QueueConfig:
    name: str
    concurrency: int = 10
    drain_timeout: timedelta = timedelta(seconds=10)
    #: Flow control across every worker (docs/limits.md); none by default.
    limits: Limits = field(default_factory=Limits)


@dataclass(frozen=True, kw_only=True)
class StoreConfig:
    """Which store: `kind` is "memory", "database" or "redis"; `alias` names the DB/cache."""

    kind: Literal["memory", "database", "redis"]
    alias: str | None = None
    vendor: str | None = None  # "sqlite" / "postgresql" for the database store


@dataclass(frozen=True, kw_only=True)
class StatsKeep:
    """How long the run statistics are kept: per-minute points for `minutes`, per-hour points
    for `hours` (never shorter)."""

    minutes: timedelta = DEFAULT_STATS_MINUTES
    hours: timedelta = DEFAULT_STATS_HOURS


@dataclass(frozen=True, kw_only=True)
class Settings:
    store: StoreConfig
    queues: Mapping[str, QueueConfig]
    run: Literal["auto", "manual"] = "auto"
    deployment: Literal["server", "lambda"] = "server"
    clock: Clock = system_clock
    lease: timedelta = timedelta(seconds=30)
    migrate: bool = True
    table_prefix: str = "anole_jobs_"
    key_prefix: str = "anole:"
    notify: bool = True
    prune: Mapping[str, timedelta] = field(default_factory=lambda: dict(DEFAULT_PRUNE))
    cron: tuple[Mapping[str, Any], ...] = ()
    metrics: bool = True
    #: "default": prometheus-client's global `REGISTRY` (where a project's /metrics looks);
    #: "private": a registry of anole_jobs' own (`anole_jobs.metrics.private_registry()`).
    metrics_registry: Literal["default", "private"] = "default"
    sample_all: bool = True
    tracing: bool = True
    admin_permission: str | None = None
    #: How long `runjobs` waits for the store to answer before it exits 1.
    startup_timeout: timedelta = timedelta(seconds=10)
    #: The largest JSON text of a job's args plus meta, in UTF-8 bytes, that enqueue accepts.
    max_payload_bytes: int = 1024 * 1024
    #: Called once per failed attempt (docs/observability.md#error-reporting): a dotted path
    #: or a callable(exception, context); resolved by the worker, checked by `manage.py check`.
    error_reporter: str | Callable[..., object] | None = None
    #: The largest JSON text of a handler's return value (its result), in UTF-8 bytes.
    max_result_bytes: int = 1024 * 1024
    #: How many sessions of the store's database a worker process's own threads share
    #: (PostgreSQL; docs/deployment.md#connections); 0: each thread has its own.
    pool_size: int = 2
    #: A database alias or a libpq DSN for the sessions a transaction pooler cannot carry:
    #: LISTEN and the leader's lock (PostgreSQL; None: the store's own alias).
    direct_database: str | None = None
    #: The store's alias reaches PostgreSQL through a pooler in transaction mode (PgBouncer):
    #: no LISTEN or session lock on it (polling and a leader row instead, unless
    #: `direct_database` gives a direct connection for them).
    transaction_pooler: bool = False
    #: How many of a job's log records (INFO and above, from its handler) are kept with it,
    #: the newest; 0 keeps none (and captures none).
    job_log_lines: int = 200
    #: Fernet keys, newest first, for the kinds declared with ``encrypt=True``
    #: (docs/encryption.md).
    encryption_keys: tuple[str, ...] = ()
    #: Large args and results kept in a Django storage (docs/offload.md); None: off.
    offload: Offload | None = None
    #: How long the run statistics keep per-minute and per-hour points.
    stats: StatsKeep = field(default_factory=StatsKeep)


@dataclass(frozen=True)
class SettingProblem:
    """One configuration finding; `id` is the system check id (anole_jobs.E0xx)."""

    id: str
    message: str
    hint: str | None = None


def raw_settings() -> Mapping[str, Any]:
    raw = getattr(django_settings, "ANOLE_JOBS", None)
    return {} if raw is None else raw


def _did_you_mean(word: str, choices: tuple[str, ...]) -> str | None:
    close = difflib.get_close_matches(word, choices, n=1)
    return f"did you mean {close[0]!r}?" if close else None


class _Parser:
    """Collects every problem instead of stopping at the first, so one check run shows all."""

    def __init__(self, raw: object) -> None:
        self.raw = raw
        self.problems: list[SettingProblem] = []

    def error(self, id: str, message: str, hint: str | None = None) -> None:
        self.problems.append(SettingProblem(f"anole_jobs.{id}", message, hint))

    def duration(self, value: object, name: str, default: timedelta) -> timedelta:
        if value is None:
            return default
        try:
            return to_timedelta(value, name=name)  # type: ignore[arg-type]
        except ValueError as exc:
            self.error("E007", f"ANOLE_JOBS[{name}]: {exc}")
            return default

    def parse(self) -> Settings | None:
        raw = self.raw
        if not isinstance(raw, Mapping):
            self.error("E001", f"ANOLE_JOBS must be a dict, got {type(raw).__name__}")
            return None
        for key in raw:
            if key not in KNOWN_KEYS:
                self.error(
                    "E001",
                    f"ANOLE_JOBS has an unknown key {key!r}",
                    _did_you_mean(str(key), KNOWN_KEYS) or f"known keys: {', '.join(KNOWN_KEYS)}",
                )
        store = self.store(raw.get("STORE", {"database": "default"}))
        queues = self.queues(raw.get("QUEUES", {"default": {}}))
        run = self.choice(raw, "RUN", ("auto", "manual"), "auto")
        deployment = self.choice(raw, "DEPLOYMENT", ("server", "lambda"), "server")
        clock = self.clock(raw.get("CLOCK"))
        lease = self.duration(raw.get("LEASE"), "LEASE", timedelta(seconds=30))
        if lease < timedelta(seconds=1):
            self.error("E007", f"ANOLE_JOBS['LEASE'] must be at least 1 second, got {lease}")
        prune = self.prune(raw.get("PRUNE"))
        startup_timeout = self.duration(
            raw.get("STARTUP_TIMEOUT"), "STARTUP_TIMEOUT", timedelta(seconds=10)
        )
        if startup_timeout <= timedelta(0):
            self.error(
                "E007", f"ANOLE_JOBS['STARTUP_TIMEOUT'] must be positive, got {startup_timeout}"
            )
        table_prefix = self.string(raw, "TABLE_PREFIX", "anole_jobs_")
        key_prefix = self.string(raw, "KEY_PREFIX", "anole:")
        migrate = self.boolean(raw, "MIGRATE", True)
        notify = self.boolean(raw, "NOTIFY", True)
        metrics = self.boolean(raw, "METRICS", True)
        metrics_registry = self.choice(raw, "METRICS_REGISTRY", METRICS_REGISTRIES, "default")
        tracing, sample_all = self.tracing(raw.get("TRACING", {"sample_all": True}))
        cron = raw.get("CRON", [])
        if not isinstance(cron, (list, tuple)):
            self.error("E009", "ANOLE_JOBS['CRON'] must be a list of dicts")
            cron = []
        permission = raw.get("ADMIN_PERMISSION")
        if permission is not None and not isinstance(permission, str) and not callable(permission):
            self.error("E010", "ANOLE_JOBS['ADMIN_PERMISSION'] must be a dotted path or a callable")
        max_payload_bytes = self.positive_int(raw, "MAX_PAYLOAD_BYTES", 1024 * 1024)
        reporter = raw.get("ERROR_REPORTER")
        if reporter is not None and not isinstance(reporter, str) and not callable(reporter):
            self.error(
                "E015",
                "ANOLE_JOBS['ERROR_REPORTER'] must be a dotted path or a callable, "
                f"got {reporter!r}",
            )
        max_result_bytes = self.positive_int(raw, "MAX_RESULT_BYTES", 1024 * 1024)
        pool_size = raw.get("POOL_SIZE", 2)
        if isinstance(pool_size, bool) or not isinstance(pool_size, int) or pool_size < 0:
            self.error(
                "E007",
                f"ANOLE_JOBS['POOL_SIZE'] must be an int of 0 or more, got {pool_size!r}",
                "0 gives each of the runtime's threads a connection of its own",
            )
            pool_size = 2
        transaction_pooler = self.boolean(raw, "TRANSACTION_POOLER", False)
        direct = self.direct_database(raw.get("DIRECT_DATABASE"), store)
        job_log_lines = self.bounded_int(raw, "JOB_LOG_LINES", 200, high=MAX_JOB_LOG_LINES)
        encryption_keys = self.encryption_keys(raw.get("ENCRYPTION_KEYS", ()))
        offload = self.offload(raw.get("OFFLOAD"))
        stats = self.stats(raw.get("STATS"))
        payload_max = INLINE_PAYLOAD_MAX if offload is None else OFFLOAD_PAYLOAD_MAX
        if max_payload_bytes > payload_max:
            self.error(
                "E007",
                f"ANOLE_JOBS['MAX_PAYLOAD_BYTES'] is {max_payload_bytes}, over "
                f"{payload_max // (1024 * 1024)} MiB, the most it may be "
                + (
                    "without OFFLOAD (every claim reads the whole job)"
                    if offload is None
                    else "even with OFFLOAD"
                ),
            )
        if self.problems or store is None:
            return None
        return Settings(
            store=store,
            queues=queues,
            run=run,  # type: ignore[arg-type]
            deployment=deployment,  # type: ignore[arg-type]
            clock=clock,
            lease=lease,
            migrate=migrate,
            table_prefix=table_prefix,
            key_prefix=key_prefix,
            notify=notify,
            prune=prune,
            cron=tuple(cron),
            metrics=metrics,
            metrics_registry=metrics_registry,  # type: ignore[arg-type]
            tracing=tracing,
            sample_all=sample_all,
            admin_permission=permission,
            startup_timeout=startup_timeout,
            max_payload_bytes=max_payload_bytes,
            error_reporter=reporter,
            max_result_bytes=max_result_bytes,
            pool_size=pool_size,
            direct_database=direct,
            transaction_pooler=transaction_pooler,
            job_log_lines=job_log_lines,
            encryption_keys=encryption_keys,
            offload=offload,
            stats=stats,
        )

    def direct_database(self, value: object, store: StoreConfig | None) -> str | None:
        """DIRECT_DATABASE: a PostgreSQL alias of DATABASES, or a libpq DSN
        ("postgresql://..." or "host=... dbname=..."), for a PostgreSQL database store."""
        if value is None:
            return None
        name = "ANOLE_JOBS['DIRECT_DATABASE']"
        if not isinstance(value, str) or not value.strip():
            self.error("E007", f"{name} must be a database alias or a DSN, got {value!r}")
            return None
        if store is not None and store.vendor != "postgresql":
            self.error(
                "E007",
                f"{name} is for a PostgreSQL database store; the store is {store.kind}"
                + (f" ({store.vendor})" if store.vendor else ""),
                "remove DIRECT_DATABASE",
            )
            return None
        databases = getattr(django_settings, "DATABASES", {})
        if value in databases:
            engine = databases[value].get("ENGINE", "")
            if SUPPORTED_VENDOR_ENGINES.get(engine) != "postgresql":
                self.error(
                    "E007", f"{name} names database {value!r}, which is not PostgreSQL ({engine!r})"
                )
                return None
            return value
        if "://" in value or "=" in value:
            try:
                from psycopg.conninfo import conninfo_to_dict

                conninfo_to_dict(value)
            except ImportError:
                pass
            except Exception as exc:  # noqa: BLE001 - psycopg's parse error says what is wrong
                self.error("E007", f"{name} is not a valid DSN: {str(exc).strip()}")
                return None
            return value
        self.error(
            "E007",
            f"{name} names {value!r}, which is neither an alias of DATABASES nor a DSN",
            f"configured aliases: {', '.join(databases) or 'none'}; a DSN reads "
            "'postgresql://user@host:5432/dbname' or 'host=... dbname=...'",
        )
        return None

    def offload(self, value: Any) -> Offload | None:
        if value is None:
            return None
        if not isinstance(value, Mapping):
            self.error("E053", f"ANOLE_JOBS['OFFLOAD'] must be a dict or None, got {value!r}")
            return None
        unknown = set(value) - {"storage", "over"}
        if unknown:
            self.error(
                "E053",
                f"ANOLE_JOBS['OFFLOAD'] has unknown keys {sorted(unknown)}; it takes 'storage' "
                "and 'over'",
            )
        storage = value.get("storage", "default")
        over = value.get("over", 65536)
        if not isinstance(storage, str) or not storage:
            self.error(
                "E053", f"ANOLE_JOBS['OFFLOAD']['storage'] must be a storage alias, got {storage!r}"
            )
            return None
        if isinstance(over, bool) or not isinstance(over, int) or over < 1:
            self.error(
                "E053",
                f"ANOLE_JOBS['OFFLOAD']['over'] must be a positive int (bytes), got {over!r}",
            )
            return None
        configured = getattr(django_settings, "STORAGES", {}) or {}
        if storage not in configured:
            self.error(
                "E053",
                f"ANOLE_JOBS['OFFLOAD']['storage'] is {storage!r}, which is not in "
                f"STORAGES ({', '.join(map(repr, configured)) or 'none'})",
            )
            return None
        return Offload(storage=storage, over=over)

    def encryption_keys(self, value: Any) -> tuple[str, ...]:
        from anole_jobs.encryption import key_problem

        if isinstance(value, (str, bytes)) or not isinstance(value, (list, tuple)):
            self.error(
                "E051",
                "ANOLE_JOBS['ENCRYPTION_KEYS'] must be a list of Fernet keys, newest first, "
                f"got {type(value).__name__}",
            )
            return ()
        keys = []
        for i, key in enumerate(value):
            problem = key_problem(key)
            if problem is not None:
                self.error("E051", f"ANOLE_JOBS['ENCRYPTION_KEYS'][{i}] {problem}")
                continue
            keys.append(key.decode() if isinstance(key, bytes) else str(key))
        return tuple(keys)

    def choice(
        self, raw: Mapping[str, Any], key: str, allowed: tuple[str, ...], default: str
    ) -> str:
        value = raw.get(key, default)
        if value not in allowed:
            self.error(
                "E007",
                f"ANOLE_JOBS[{key!r}] must be one of {', '.join(map(repr, allowed))}, "
                f"got {value!r}",
            )
            return default
        return str(value)

    def string(self, raw: Mapping[str, Any], key: str, default: str) -> str:
        value = raw.get(key, default)
        if not isinstance(value, str):
            self.error("E007", f"ANOLE_JOBS[{key!r}] must be a string, got {value!r}")
            return default
        return value

    def positive_int(self, raw: Mapping[str, Any], key: str, default: int) -> int:
        value = raw.get(key, default)
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            self.error("E007", f"ANOLE_JOBS[{key!r}] must be a positive int, got {value!r}")
            return default
        return value

    def bounded_int(self, raw: Mapping[str, Any], key: str, default: int, *, high: int) -> int:
        value = raw.get(key, default)
        if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= high:
            self.error(
                "E007", f"ANOLE_JOBS[{key!r}] must be an int from 0 to {high:,}, got {value!r}"
            )
            return default
        return value

    def boolean(self, raw: Mapping[str, Any], key: str, default: bool) -> bool:
        value = raw.get(key, default)
        if not isinstance(value, bool):
            self.error("E007", f"ANOLE_JOBS[{key!r}] must be True or False, got {value!r}")
            return default
        return value

    def store(self, value: object) -> StoreConfig | None:
        if value == "memory":
            return StoreConfig(kind="memory")
        if not isinstance(value, Mapping) or len(value) != 1:
            self.error(
                "E002",
                f"ANOLE_JOBS['STORE'] must be \"memory\", {{'database': ALIAS}} or "
                f"{{'redis': ALIAS}}, got {value!r}",
            )
            return None
        ((kind, alias),) = value.items()
        if kind == "database":
            databases = getattr(django_settings, "DATABASES", {})
            if alias not in databases:
                self.error(
                    "E003",
                    f"ANOLE_JOBS['STORE'] names database {alias!r}, which is not in DATABASES",
                    f"configured aliases: {', '.join(databases) or 'none'}",
                )
                return None
            engine = databases[alias].get("ENGINE", "")
            vendor = SUPPORTED_VENDOR_ENGINES.get(engine)
            if vendor is None:
                self.error(
                    "E004",
                    f"database {alias!r} uses {engine!r}; the database store supports only "
                    "SQLite and PostgreSQL",
                    'use {"database": ALIAS} with a SQLite or PostgreSQL alias, '
                    'or {"redis": ALIAS}',
                )
                return None
            return StoreConfig(kind="database", alias=alias, vendor=vendor)
        if kind == "redis":
            caches = getattr(django_settings, "CACHES", {})
            if alias not in caches:
                self.error(
                    "E005",
                    f"ANOLE_JOBS['STORE'] names cache {alias!r}, which is not in CACHES",
                    f"configured aliases: {', '.join(caches) or 'none'}",
                )
                return None
            backend = caches[alias].get("BACKEND", "")
            if backend not in DJANGO_REDIS_BACKENDS:
                self.error(
                    "E005",
                    f"cache {alias!r} uses {backend!r}; the Redis store needs django-redis "
                    "(BACKEND 'django_redis.cache.RedisCache')",
                )
                return None
            return StoreConfig(kind="redis", alias=alias)
        self.error(
            "E002",
            f"ANOLE_JOBS['STORE'] has an unknown store {kind!r}",
            _did_you_mean(str(kind), ("database", "redis")) or 'use "memory", database or redis',
        )
        return None

    def queues(self, value: object) -> dict[str, QueueConfig]:
        if not isinstance(value, Mapping) or not value:
            self.error("E006", "ANOLE_JOBS['QUEUES'] must be a non-empty dict of queue options")
            return {"default": QueueConfig(name="default")}
        queues: dict[str, QueueConfig] = {}
        for name, options in value.items():
            problem = name_problem(name, what="a queue name in QUEUES")
            if problem is not None:
                self.error("E006", problem)
                continue
            if not isinstance(options, Mapping):
                self.error("E006", f"QUEUES[{name!r}] must be a dict of options, got {options!r}")
                continue
            for key in options:
                if key not in QUEUE_KEYS:
                    self.error(
                        "E006",
                        f"QUEUES[{name!r}] has an unknown option {key!r}",
                        _did_you_mean(str(key), QUEUE_KEYS) or f"known: {', '.join(QUEUE_KEYS)}",
                    )
            concurrency = options.get("concurrency", 10)
            if isinstance(concurrency, bool) or not isinstance(concurrency, int) or concurrency < 1:
                self.error(
                    "E006",
                    f"QUEUES[{name!r}]['concurrency'] must be a positive int, got {concurrency!r}",
                )
                concurrency = 10
            drain = self.duration(
                options.get("drain_timeout"),
                f"QUEUES[{name!r}]['drain_timeout']",
                timedelta(seconds=10),
            )
            queues[name] = QueueConfig(
                name=name,
                concurrency=concurrency,
                drain_timeout=drain,
                limits=self.limits(name, options),
            )
        return queues

    def limits(self, queue: str, options: Mapping[str, Any]) -> Limits:
        """A queue's `global_concurrency`, `rate_limit` and `partition` (E016 when bad)."""
        found: dict[str, Any] = {}
        parsers = {
            "global_concurrency": parse_concurrency,
            "rate_limit": parse_rate,
            "partition": parse_partition,
            "fairness": parse_fairness,
        }
        for key, parse in parsers.items():
            if options.get(key) is None:
                continue
            try:
                found[key] = parse(options[key], name=f"QUEUES[{queue!r}][{key!r}]")
            except ValueError as exc:
                hint = "see docs/flow-control.md" if key == "fairness" else "see docs/limits.md"
                self.error("E016", str(exc), hint)
        return Limits(**found)

    def clock(self, value: object) -> Clock:
        if value is None:
            return system_clock
        target = value
        if isinstance(value, str):
            try:
                target = import_string(value)
            except ImportError as exc:
                self.error("E008", f"ANOLE_JOBS['CLOCK'] {value!r} cannot be imported: {exc}")
                return system_clock
        if not callable(target):
            self.error("E008", f"ANOLE_JOBS['CLOCK'] must be callable, got {target!r}")
            return system_clock
        return checked(target)

    def prune(self, value: object) -> dict[str, timedelta]:
        prune = dict(DEFAULT_PRUNE)
        if value is None:
            return prune
        if not isinstance(value, Mapping):
            self.error("E007", "ANOLE_JOBS['PRUNE'] must be a dict of state -> duration")
            return prune
        for state, horizon in value.items():
            if state not in PRUNE_STATES:
                self.error(
                    "E007",
                    f"ANOLE_JOBS['PRUNE'] has an unknown state {state!r}",
                    f"prunable states: {', '.join(PRUNE_STATES)}",
                )
                continue
            prune[state] = self.duration(horizon, f"PRUNE[{state!r}]", DEFAULT_PRUNE[state])
        return prune

    def stats(self, value: object) -> StatsKeep:
        if value is None:
            return StatsKeep()
        if not isinstance(value, Mapping):
            self.error(
                "E007",
                "ANOLE_JOBS['STATS'] must be a dict such as "
                "{'MINUTES': timedelta(days=1), 'HOURS': timedelta(days=30)}",
            )
            return StatsKeep()
        for key in value:
            if key not in STATS_KEYS:
                self.error(
                    "E007",
                    f"ANOLE_JOBS['STATS'] has an unknown key {key!r}",
                    _did_you_mean(str(key), STATS_KEYS) or f"known keys: {', '.join(STATS_KEYS)}",
                )
        minutes = self.duration(value.get("MINUTES"), "STATS['MINUTES']", DEFAULT_STATS_MINUTES)
        hours = self.duration(value.get("HOURS"), "STATS['HOURS']", DEFAULT_STATS_HOURS)
        if not STATS_MINUTES_MIN <= minutes <= STATS_MINUTES_MAX:
            self.error(
                "E007",
                f"ANOLE_JOBS['STATS']['MINUTES'] must be between {_hours(STATS_MINUTES_MIN)} and "
                f"{_hours(STATS_MINUTES_MAX)}, got {_hours(minutes)}",
                "per-minute points are for the recent past; HOURS keeps the longer history",
            )
            minutes = min(max(minutes, STATS_MINUTES_MIN), STATS_MINUTES_MAX)
        if hours < minutes:
            self.error(
                "E007",
                f"ANOLE_JOBS['STATS']['HOURS'] ({_hours(hours)}) must be at least "
                f"MINUTES ({_hours(minutes)})",
                "the hourly points are rolled up from the minutes before these are pruned",
            )
            hours = minutes
        return StatsKeep(minutes=minutes, hours=hours)

    def tracing(self, value: object) -> tuple[bool, bool]:
        if value is False or value is None:
            return False, True
        if value is True:
            return True, True
        if not isinstance(value, Mapping) or set(value) - {"sample_all"}:
            self.error("E007", "ANOLE_JOBS['TRACING'] must be False or {'sample_all': bool}")
            return True, True
        sample_all = value.get("sample_all", True)
        if not isinstance(sample_all, bool):
            self.error("E007", "ANOLE_JOBS['TRACING']['sample_all'] must be True or False")
            return True, True
        return True, sample_all


def _hours(value: timedelta) -> str:
    """A statistics horizon for people: "36 hours", "30 days"."""
    hours = value.total_seconds() / 3600
    if hours >= 48 and hours % 24 == 0:
        return f"{hours / 24:g} days"
    return f"{hours:g} hours"


def problems(raw: object | None = None) -> list[SettingProblem]:
    """Every configuration problem in `raw` (default: the current settings); never raises."""
    parser = _Parser(raw_settings() if raw is None else raw)
    parser.parse()
    return parser.problems


def parse(raw: object) -> Settings:
    parser = _Parser(raw)
    result = parser.parse()
    if result is None:
        lines = [p.message + (f" ({p.hint})" if p.hint else "") for p in parser.problems]
        raise ConfigurationError("ANOLE_JOBS is misconfigured: " + "; ".join(lines))
    return result


_lock = threading.Lock()
_cached: Settings | None = None
_listeners: list[Callable[[], None]] = []


def read_settings() -> Settings:
    """The parsed settings, cached until Django's `setting_changed` says they changed."""
    global _cached
    with _lock:
        if _cached is None:
            _cached = parse(raw_settings())
        return _cached


def on_reset(listener: Callable[[], None]) -> None:
    """Call `listener` whenever the parsed settings are dropped (tests' override_settings)."""
    _listeners.append(listener)


def reset() -> None:
    global _cached
    with _lock:
        _cached = None
    for listener in list(_listeners):
        listener()


def _setting_changed(*, setting: str, **kwargs: object) -> None:
    if setting in ("ANOLE_JOBS", "DATABASES", "CACHES"):
        reset()


setting_changed.connect(_setting_changed, dispatch_uid="anole_jobs.conf")
