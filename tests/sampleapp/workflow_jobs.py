"""Kinds for the workflow tests (imported at the end of `tests.sampleapp.jobs`, so `runjobs`
processes have them too).

`Step.action` says how the step ends: "ok" returns ``{"step": name, "deps": ...}`` (the
results of its dependencies), "fail" raises (dead after its attempts), "discard" ends dead at
once. Each run is recorded in `RUNS` (cleared by the `recorder` fixture with `CALLS`).
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Any

from anole_jobs import Job, Unique, jobs, kind
from tests.sampleapp.jobs import CALLS, HOOKS

_lock = threading.Lock()


@kind("test.step", attempts=1)
@dataclass
class Step:
    name: str = ""
    action: str = "ok"


@jobs.handler(Step)
def step(job: Job, args: Step) -> Any:
    deps = job.dependency_results()
    with _lock:
        CALLS.append(
            {
                "id": job.id,
                "step": job.step_name,
                "workflow": job.workflow_id,
                "deps": deps,
                "action": args.action,
            }
        )
    if args.action in HOOKS:
        return HOOKS[args.action](job, args)
    if args.action == "fail":
        raise ValueError(f"step {args.name} failed")
    if args.action == "discard":
        job.discard("no")
    return {"step": args.name or job.step_name, "deps": sorted(deps)}


@kind("test.unique_step", unique=Unique())
@dataclass
class UniqueStep:
    n: int = 0


@jobs.handler(UniqueStep)
def unique_step(job: Job, args: UniqueStep) -> None:
    pass
