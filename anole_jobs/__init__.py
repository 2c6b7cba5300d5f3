"""anole_jobs: a durable, at-least-once job queue for Django.

Public names: ``jobs, kind, upcaster, Job, Unique, Debounce, Waiting, Enqueued, InvalidJob,
Canceled, JobFailed, JobNotFinished, JobNotFound, JobRecord, NewQueue, ResultTooLarge,
SignalTimeout, Workflow, WorkflowEnqueued, WorkflowRecord``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

__all__ = [
    "Canceled",
    "Debounce",
    "Enqueued",
    "InvalidJob",
    "Job",
    "JobFailed",
    "JobNotFinished",
    "JobNotFound",
    "JobRecord",
    "NewQueue",
    "ResultTooLarge",
    "SignalTimeout",
    "Unique",
    "Waiting",
    "Workflow",
    "WorkflowEnqueued",
    "WorkflowRecord",
    "jobs",
    "kind",
    "sql",
    "upcaster",
]
__version__ = "0.1.0"

if TYPE_CHECKING:
    from anole_jobs.api import jobs
    from anole_jobs.bounds import NewQueue
    from anole_jobs.core import JobRecord
    from anole_jobs.errors import (
        Canceled,
        InvalidJob,
        JobFailed,
        JobNotFinished,
        JobNotFound,
        ResultTooLarge,
        SignalTimeout,
    )
    from anole_jobs.job import Job
    from anole_jobs.kinds import kind, upcaster
    from anole_jobs.records import Enqueued, Waiting
    from anole_jobs.stores.database.frozen import sql
    from anole_jobs.unique import Debounce, Unique
    from anole_jobs.workflows import Workflow, WorkflowEnqueued, WorkflowRecord

_LAZY = {
    "jobs": "anole_jobs.api",
    "kind": "anole_jobs.kinds",
    "upcaster": "anole_jobs.kinds",
    "Job": "anole_jobs.job",
    "Unique": "anole_jobs.unique",
    "Debounce": "anole_jobs.unique",
    "Waiting": "anole_jobs.records",
    "Enqueued": "anole_jobs.records",
    "InvalidJob": "anole_jobs.errors",
    "Canceled": "anole_jobs.errors",
    "JobFailed": "anole_jobs.errors",
    "JobNotFinished": "anole_jobs.errors",
    "JobNotFound": "anole_jobs.errors",
    "JobRecord": "anole_jobs.core",
    "NewQueue": "anole_jobs.bounds",
    "ResultTooLarge": "anole_jobs.errors",
    "SignalTimeout": "anole_jobs.errors",
    "sql": "anole_jobs.stores.database.frozen",
    "Workflow": "anole_jobs.workflows",
    "WorkflowEnqueued": "anole_jobs.workflows",
    "WorkflowRecord": "anole_jobs.workflows",
}


def __getattr__(name: str) -> Any:
    # Lazy so that `INSTALLED_APPS = ["anole_jobs"]` imports nothing that needs settings.
    module_name = _LAZY.get(name)
    if module_name is None:
        raise AttributeError(f"module 'anole_jobs' has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(module_name), name)
    globals()[name] = value
    return value
