"""Django system checks `anole_jobs.E0xx` / `W0xx` (listed in docs/configuration.md): every
misconfiguration a user can make, reported by `manage.py check` without connecting to any
server."""

from __future__ import annotations

from typing import Any

from django.core import checks

from anole_jobs import conf


@checks.register("anole_jobs")
def check_settings(app_configs: Any = None, **kwargs: Any) -> list[checks.CheckMessage]:
    messages: list[checks.CheckMessage] = [
        checks.Error(problem.message, hint=problem.hint, id=problem.id)
        for problem in conf.problems()
    ]
    if messages:
        return messages
    settings = conf.read_settings()
    messages.extend(_kind_queues(settings))
    messages.extend(_partitions(settings))
    messages.extend(_fairness(settings))
    messages.extend(_admin_permission(settings))
    messages.extend(_error_reporter(settings))
    messages.extend(_store_extras(settings))
    messages.extend(_cron(settings))
    messages.extend(_metrics_dependency())
    messages.extend(_encryption(settings))
    return messages


def _encryption(settings: conf.Settings) -> list[checks.CheckMessage]:
    """E052: a kind declared with encrypt=True needs ENCRYPTION_KEYS and cryptography."""
    from anole_jobs import encryption
    from anole_jobs.kinds import registry

    sealed = sorted(spec.name for spec in registry.kinds() if spec.encrypt)
    if not sealed:
        return []
    named = ", ".join(repr(name) for name in sealed[:5])
    messages: list[checks.CheckMessage] = []
    if not settings.encryption_keys:
        messages.append(
            checks.Error(
                f"kinds declared with encrypt=True ({named}) but ANOLE_JOBS['ENCRYPTION_KEYS'] "
                "is empty",
                hint="add a key made with cryptography's Fernet.generate_key() "
                "(docs/encryption.md)",
                id="anole_jobs.E052",
            )
        )
    if not encryption.available():
        messages.append(
            checks.Error(
                f"kinds declared with encrypt=True ({named}) but cryptography is not installed",
                hint=encryption.INSTALL_HINT,
                id="anole_jobs.E052",
            )
        )
    return messages


def _metrics_dependency() -> list[checks.CheckMessage]:
    """E013: METRICS=True set in so many words needs prometheus-client. Left at its default,
    metrics are simply off without it (runjobs says so at start-up)."""
    from anole_jobs import metrics

    if metrics.available() or not metrics.explicitly_enabled():
        return []
    return [
        checks.Error(
            "ANOLE_JOBS['METRICS'] is True but prometheus-client is not installed",
            hint=f"{metrics.INSTALL_HINT}, or set METRICS to False",
            id="anole_jobs.E013",
        )
    ]


def _cron(settings: conf.Settings) -> list[checks.CheckMessage]:
    """Each problem with a `CRON` entry (docs/cron.md); imports job types, connects to
    nothing."""
    from anole_jobs.schedules import validate_cron

    return [
        checks.Error(message, hint="see docs/cron.md", id="anole_jobs.E009")
        for message in validate_cron(settings.cron)
    ]


def _kind_queues(settings: conf.Settings) -> list[checks.CheckMessage]:
    from anole_jobs.kinds import registry

    if settings.deployment == "lambda":
        return []
    return [
        checks.Warning(
            f"kind {spec.name!r} uses queue {spec.queue!r}, which is not in ANOLE_JOBS['QUEUES']; "
            "its jobs will wait until a worker runs that queue",
            hint=f"add {spec.queue!r} to QUEUES, or pass queue= when enqueueing",
            id="anole_jobs.W001",
        )
        for spec in registry.kinds()
        if spec.queue not in settings.queues
    ]


def _partitions(settings: conf.Settings) -> list[checks.CheckMessage]:
    """E018: a queue's `partition` names an args field that no kind of the queue has. Every
    job would then fall in the one partition of the missing value, and a limit meant per
    customer would hold for all customers together, silently. The kinds of a queue are those
    that declare it (when none does, every kind: jobs may reach it with ``queue=``)."""
    import dataclasses

    from anole_jobs.kinds import registry

    kinds = registry.kinds()
    messages: list[checks.CheckMessage] = []
    for name, config in settings.queues.items():
        own = [spec for spec in kinds if spec.queue == name]
        candidates = own or kinds
        if not config.limits.partition or not candidates:
            continue
        fields = [{f.name for f in dataclasses.fields(spec.args_type)} for spec in candidates]
        for field in config.limits.partition:
            if any(field in names for names in fields):
                continue
            whose = (
                f"none of the kinds of queue {name!r} "
                f"({', '.join(sorted(repr(spec.name) for spec in own))})"
                if own
                else "no kind"
            )
            messages.append(
                checks.Error(
                    f"QUEUES[{name!r}]['partition'] names the args field {field!r}, which "
                    f"{whose} has: all its jobs would share one partition, and the queue's "
                    "limits would hold for all of them together, not per value",
                    hint=f"name a field of the queue's kinds, or add {field!r} to them "
                    "(see docs/limits.md)",
                    id="anole_jobs.E018",
                )
            )
    return messages


def _fairness(settings: conf.Settings) -> list[checks.CheckMessage]:
    """E030: a queue's `fairness` names an args field that no kind of the queue has: every job
    would then have the one value of the missing field, and the queue would take no turns.
    The kinds of a queue are found as for `_partitions`."""
    import dataclasses

    from anole_jobs.kinds import registry

    kinds = registry.kinds()
    messages: list[checks.CheckMessage] = []
    for name, config in settings.queues.items():
        fairness = config.limits.fairness
        own = [spec for spec in kinds if spec.queue == name]
        candidates = own or kinds
        if fairness is None or not candidates:
            continue
        fields = [{f.name for f in dataclasses.fields(spec.args_type)} for spec in candidates]
        for field in fairness.fields:
            if any(field in names for names in fields):
                continue
            whose = (
                f"none of the kinds of queue {name!r} "
                f"({', '.join(sorted(repr(spec.name) for spec in own))})"
                if own
                else "no kind"
            )
            messages.append(
                checks.Error(
                    f"QUEUES[{name!r}]['fairness'] names the args field {field!r}, which "
                    f"{whose} has: all its jobs would have one value, and the queue would "
                    "take no turns",
                    hint=f"name a field of the queue's kinds, or add {field!r} to them "
                    "(see docs/flow-control.md)",
                    id="anole_jobs.E030",
                )
            )
    return messages


def _admin_permission(settings: conf.Settings) -> list[checks.CheckMessage]:
    from anole_jobs.operations.permissions import setting_problem

    problem = setting_problem(settings.admin_permission)
    return [] if problem is None else [checks.Error(problem, id="anole_jobs.E010")]


def _error_reporter(settings: conf.Settings) -> list[checks.CheckMessage]:
    """E015: ERROR_REPORTER must import, be a plain callable and have what it needs
    (sentry-sdk for `anole_jobs.reporting.sentry`). Imports it; calls nothing."""
    from anole_jobs.reporting import setting_problem

    problem = setting_problem(settings.error_reporter)
    if problem is None:
        return []
    return [
        checks.Error(
            problem, hint="see docs/observability.md#error-reporting", id="anole_jobs.E015"
        )
    ]


def _store_extras(settings: conf.Settings) -> list[checks.CheckMessage]:
    messages: list[checks.CheckMessage] = []
    if settings.store.kind == "database" and settings.store.vendor == "postgresql":
        try:
            import psycopg  # noqa: F401
        except ImportError:
            messages.append(
                checks.Error(
                    "the PostgreSQL jobs store needs psycopg 3",
                    hint='install the postgres extra: pip install "/path/to/anole_jobs[postgres]"',
                    id="anole_jobs.E011",
                )
            )
    if settings.store.kind == "redis":
        try:
            import django_redis  # noqa: F401
        except ImportError:
            messages.append(
                checks.Error(
                    "the Redis jobs store needs django-redis",
                    hint='install the redis extra: pip install "/path/to/anole_jobs[redis]"',
                    id="anole_jobs.E012",
                )
            )
        else:
            from anole_jobs.stores.redis import check_cluster

            if settings.store.alias is not None:
                messages.extend(check_cluster(settings.store.alias, settings.key_prefix))
    return messages


@checks.register("anole_jobs", checks.Tags.database)
def check_redis_eviction(
    app_configs: Any = None, databases: Any = None, **kwargs: Any
) -> list[checks.CheckMessage]:
    """W002: evicted job keys are lost jobs. It connects, so, like Django's database checks, it
    runs only when ``manage.py check --database ALIAS`` asks for checks that connect. Any
    alias will do: ``--database`` takes DATABASES aliases, and the Redis store names a cache."""
    if not databases or conf.problems():
        return []
    settings = conf.read_settings()
    if settings.store.kind != "redis" or settings.store.alias is None:
        return []
    from anole_jobs.stores.redis import check_redis_eviction as check

    return check(settings.store.alias)


@checks.register("anole_jobs", checks.Tags.database)
def check_schema_functions(
    app_configs: Any = None, databases: Any = None, **kwargs: Any
) -> list[checks.CheckMessage]:
    """W003: the database store's server functions and triggers are not the ones this
    release's migrations define (a migration not applied, a function edited by hand, an older
    dump restored). It connects, so it runs only when databases are requested, like Django's
    database checks: ``manage.py check --database ALIAS``, and ``migrate`` before it
    migrates."""
    if not databases or conf.problems():
        return []
    settings = conf.read_settings()
    alias = settings.store.alias
    if settings.store.kind != "database" or alias is None or alias not in databases:
        return []
    from django.db import DatabaseError, connections

    from anole_jobs.stores.database.schema_check import differences, unapplied

    connection = connections[alias]
    if connection.vendor not in ("postgresql", "sqlite"):
        return []  # the store refuses it anyway (its own check says so)
    try:
        if unapplied(connection):
            # `migrate` runs this check before it migrates, and Django itself says that
            # migrations are pending elsewhere: what they will create is not missing yet.
            return []
        found = differences(connection, settings.table_prefix)
    except DatabaseError as exc:
        found = [f"could not read them: {exc}".strip()]
    if not found:
        return []
    shown = "; ".join(found[:5]) + (f"; and {len(found) - 5} more" if len(found) > 5 else "")
    return [
        checks.Warning(
            f"the jobs store's server functions and triggers in database "
            f"{alias!r} are not the ones this release expects: {shown}",
            hint=(
                "Run `manage.py migrate` (with ANOLE_JOBS['MIGRATE']=False, apply the part of "
                "anole_jobs.sql() added since your last upgrade). If migrate has nothing to do, "
                "the database was changed by hand: see docs/upgrading.md."
            ),
            id="anole_jobs.W003",
        )
    ]
