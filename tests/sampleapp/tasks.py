"""Django `@task` functions the tests run through `anole_jobs.tasks.AnoleBackend`.

They are declared on the "default" TASKS backend, which the test settings point at
AnoleBackend. `EVENTS` records the task signals (cleared by the tests that read it).
"""

from __future__ import annotations

import asyncio
from typing import Any

from anole_jobs.tasks.compat import FRAMEWORK

if FRAMEWORK == "django.tasks":
    from django.tasks import task
else:  # Django 5.2: the backport
    from django_tasks import task

CALLS: list[dict[str, Any]] = []


@task()
def add(a: int, b: int) -> int:
    CALLS.append({"task": "add", "a": a, "b": b})
    return a + b


@task(takes_context=True)
def flaky_sum(context: Any, numbers: list[int], fail_times: int = 1) -> dict[str, Any]:
    """Fails its first `fail_times` attempts; then returns the sum and the attempt."""
    CALLS.append({"task": "flaky_sum", "attempt": context.attempt})
    if context.attempt <= fail_times:
        raise ConnectionError(f"upstream down (attempt {context.attempt})")
    return {"sum": sum(numbers), "attempt": context.attempt, "id": context.task_result.id}


@task()
def always_fails() -> None:
    raise ValueError("this task always fails")


@task()
def returns_a_set() -> set[int]:
    return {1, 2}


@task(queue_name="mail", priority=7)
def on_mail_queue() -> str:
    return "mailed"


@task()
async def async_double(n: int) -> int:
    await asyncio.sleep(0)
    return n * 2


@task(attempts=1, timeout=5)
def once() -> None:
    """Per-task options (a `task_class` API): one attempt, a 5 s timeout."""
    raise RuntimeError("no second chance")


#: What `reads_its_own_result` saw of its own result while it ran, one entry per attempt.
SEEN_WHILE_RUNNING: list[dict[str, Any]] = []


@task(takes_context=True)
def reads_its_own_result(context: Any, fail_times: int = 0) -> int:
    """Reads its own result through the backend while it runs; fails its first attempts."""
    backend = context.task_result.task.get_backend()
    running = backend.get_result(context.task_result.id)
    SEEN_WHILE_RUNNING.append(
        {
            "status": str(running.status),
            "attempts": running.attempts,
            "context_attempt": context.attempt,
        }
    )
    if context.attempt <= fail_times:
        raise ConnectionError(f"upstream down (attempt {context.attempt})")
    return context.attempt


def not_a_task() -> str:
    return "never run"


@task(attempts=1)
def exits() -> None:
    """Ends its only attempt the way Django's own test task does: `SystemExit`."""
    raise SystemExit("This Task failed due to SystemExit")


@task(attempts=1)
def value_error() -> None:
    raise ValueError("This Task failed due to ValueError")


@task(attempts=1)
def interrupts() -> None:
    raise KeyboardInterrupt("This Task failed due to KeyboardInterrupt")


@task(attempts=1)
def complex_exception() -> None:
    raise ValueError(ValueError("This task failed"))
