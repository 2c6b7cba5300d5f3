"""`AnoleBackend`: Django's tasks framework on anole_jobs (docs/tasks.md).

``TASKS = {"default": {"BACKEND": "anole_jobs.tasks.AnoleBackend", "QUEUES": [...],
"OPTIONS": {"attempts": 20, "timeout": 900}}}``. `enqueue` stores a ``django.tasks`` job
through the `jobs` facade — so inside ``transaction.atomic()`` on the store's database it is
a write of that transaction — and `get_result` reads the job back as a `TaskResult`
(`results` says how); `enqueue` returns the same result `get_result` would give at once.

The constructor only reads its options: it touches no database (Django builds backends
lazily, in any process, including ones that never enqueue).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from django.core import checks
from django.core.exceptions import ImproperlyConfigured

from anole_jobs.api import jobs
from anole_jobs.bounds import NewQueue, count_problem, name_problem
from anole_jobs.core import JobRecord
from anole_jobs.durations import to_timedelta
from anole_jobs.operations.ids import job_id_or_none
from anole_jobs.tasks import compat
from anole_jobs.tasks.calls import (
    TASK_KIND,
    TaskArgumentsNotJSON,
    TaskCall,
    TaskNotFound,
    resolve_task,
)
from anole_jobs.tasks.results import META_KEY, task_as_enqueued, task_meta, task_result

logger = logging.getLogger("anole_jobs.tasks")

OPTION_NAMES = ("attempts", "timeout")
E014 = "anole_jobs.E014"
NOT_INSTALLED_HINT = "add 'anole_jobs' to INSTALLED_APPS (see docs/tasks.md)"


def _attempts(value: object, where: str) -> int | None:
    if value is None:
        return None
    problem = count_problem(value, what="attempts")
    if problem is not None:
        raise ValueError(f"{where}: {problem}")
    return int(value)  # type: ignore[call-overload]  # checked: an int


def _timeout(value: object, where: str) -> float | None:
    if value is None:
        return None
    try:
        seconds = to_timedelta(value, name=f"{where}: timeout").total_seconds()  # type: ignore[arg-type]
    except (TypeError, ValueError) as exc:
        raise ValueError(str(exc)) from None
    if seconds <= 0:
        raise ValueError(f"{where}: timeout must be positive, got {value!r}")
    return seconds


@dataclass(frozen=True, slots=True, kw_only=True)
class AnoleTask(compat.Task):
    """A `Task` with anole_jobs' per-task options: ``@task(attempts=5, timeout=60)``.

    None means the backend's `OPTIONS` (then the defaults of any kind: 20 attempts, 15 min).
    """

    attempts: int | None = None
    timeout: float | timedelta | None = None


class AnoleBackend(compat.BaseTaskBackend):
    task_class = AnoleTask
    supports_defer = True
    supports_priority = True
    supports_get_result = True
    supports_async_task = True

    def __init__(self, alias: str, params: dict[str, Any]) -> None:
        super().__init__(alias, params)
        where = f"TASKS[{alias!r}]['OPTIONS']"
        unknown = sorted(set(self.options) - set(OPTION_NAMES))
        if unknown:
            raise ImproperlyConfigured(
                f"{where}: unknown option(s) {', '.join(map(repr, unknown))}; "
                f"the options are {', '.join(OPTION_NAMES)}"
            )
        try:
            self.attempts = _attempts(self.options.get("attempts"), where)
            self.timeout = _timeout(self.options.get("timeout"), where)
        except ValueError as exc:
            raise ImproperlyConfigured(str(exc)) from None

    # -- validation --------------------------------------------------------------------------
    def validate_task(self, task: Any) -> None:
        """Django's rules (module-level function, context argument, priority -100..100, aware
        `run_after`, a queue of `QUEUES`), then this backend's: a queue name anole_jobs
        accepts and valid per-task options."""
        super().validate_task(task)
        where = f"task {task.module_path}"
        problem = name_problem(task.queue_name, what="queue_name")
        if problem is not None:
            raise compat.InvalidTask(f"{where}: {problem}")
        if isinstance(task.priority, bool) or not (
            compat.TASK_MIN_PRIORITY <= task.priority <= compat.TASK_MAX_PRIORITY
        ):
            raise compat.InvalidTask(f"{where}: priority must be an int in -100..100")
        try:
            _attempts(getattr(task, "attempts", None), where)
            _timeout(getattr(task, "timeout", None), where)
        except ValueError as exc:
            raise compat.InvalidTask(str(exc)) from None

    def check(self, **kwargs: Any) -> list[checks.CheckMessage]:
        """E014 when ``anole_jobs`` is not an installed app (its jobs table, its `runjobs`
        and the ``django.tasks`` handler come with the app); W101 for TASKS queues that no
        `runjobs` would run (not in ANOLE_JOBS QUEUES)."""
        from django.apps import apps

        from anole_jobs import conf

        if not apps.is_installed("anole_jobs"):
            return [checks.Error(self._not_installed(), hint=NOT_INSTALLED_HINT, id=E014)]
        try:
            configured = set(conf.read_settings().queues)
        except ImproperlyConfigured:
            return []  # anole_jobs' own checks report that
        missing = sorted(set(self.queues) - configured)
        if not missing:
            return []
        return [
            checks.Warning(
                f"TASKS[{self.alias!r}] QUEUES {', '.join(map(repr, missing))} are not in "
                "ANOLE_JOBS['QUEUES']: runjobs runs only configured queues",
                hint="add them to ANOLE_JOBS['QUEUES']",
                id="anole_jobs.W101",
            )
        ]

    def _not_installed(self) -> str:
        return (
            f"TASKS[{self.alias!r}] uses anole_jobs.tasks.AnoleBackend but 'anole_jobs' is not "
            "in INSTALLED_APPS: its tasks could be enqueued but never run"
        )

    # -- enqueue -----------------------------------------------------------------------------
    def _options(self, task: Any) -> tuple[int | None, float | None]:
        where = f"task {task.module_path}"
        attempts = _attempts(getattr(task, "attempts", None), where)
        timeout = _timeout(getattr(task, "timeout", None), where)
        return (
            self.attempts if attempts is None else attempts,
            self.timeout if timeout is None else timeout,
        )

    def enqueue(self, task: Any, args: Any, kwargs: Any) -> Any:
        from django.apps import apps

        # What E014 reports, refused at the first enqueue too: `manage.py check` sees it only
        # once the tasks framework is loaded (on Django 6, when something imports it).
        if not apps.is_installed("anole_jobs"):
            raise ImproperlyConfigured(f"{self._not_installed()}; {NOT_INSTALLED_HINT}")
        self.validate_task(task)
        try:
            call_args, call_kwargs = compat.normalize_json(args), compat.normalize_json(kwargs)
        except (TypeError, ValueError) as exc:
            logger.warning(
                "task %s refused: arguments that are not JSON (%s)", task.module_path, exc
            )
            raise TaskArgumentsNotJSON(
                f"task {task.module_path}: arguments must be JSON values ({exc}); pass ids, "
                "not model instances"
            ) from None
        attempts, timeout = self._options(task)
        call = TaskCall(
            task=task.module_path,
            args=call_args,
            kwargs=call_kwargs,
            backend=self.alias,
            attempts=attempts,
            timeout=timeout,
        )
        enqueued = jobs.enqueue(
            call,
            # Django checked the name against this backend's QUEUES (any name when it lists
            # none, as Django's tasks framework has it): a queue used on purpose.
            queue=NewQueue(task.queue_name),
            priority=task.priority,
            run_at=task.run_after,
            meta={META_KEY: task_meta(task)},
        )
        assert enqueued.id is not None  # enqueue without on_commit writes at once
        # Read back, so the result is the one get_result gives (the stored enqueue time, in
        # the store's precision), as Django's contract has it.
        record = self._record(enqueued.id)
        result = task_result(task, record, backend=self.alias)
        compat.task_enqueued.send(type(self), task_result=result)
        return result

    # -- results -----------------------------------------------------------------------------
    def get_result(self, result_id: Any) -> Any:
        record = self._record(result_id)
        try:
            task = resolve_task(record.args.get("task", ""))
        except TaskNotFound as exc:
            raise compat.TaskResultDoesNotExist(
                f"job {record.id} is a task this process cannot load: {exc}"
            ) from None
        backend = record.args.get("backend", self.alias)
        return task_result(task_as_enqueued(task, record.meta), record, backend=backend)

    def _record(self, result_id: Any) -> JobRecord:
        # The one rule for ids in text (plain ASCII digits, 1 .. 2**63-1): "²" or "٣" name no
        # job here either, as on every other surface.
        job_id = job_id_or_none(str(result_id))
        record = None if job_id is None else jobs.get(job_id)
        if record is None or record.kind != TASK_KIND:
            raise compat.TaskResultDoesNotExist(f"no task result with id {result_id!r}")
        return record
