"""A kind whose handler returns a value, for the results tests (imported at the end of
`tests.sampleapp.jobs`, so `runjobs` processes have it too).

`value` is the JSON text of what the handler returns; `hook` names a `HOOKS` entry whose return
value is returned instead (values JSON text cannot carry: a set, NaN, a dataclass). Two hooks
work in any process: ``not_json`` (a set) and ``gc`` (the worker process's garbage collector
settings: its thresholds and how many objects it froze).
"""

from __future__ import annotations

import gc
import json
from dataclasses import dataclass
from typing import Any

from anole_jobs import Job, jobs, kind
from tests.sampleapp.jobs import HOOKS


@kind("test.returns", attempts=2)
@dataclass
class Returns:
    value: str = "null"
    hook: str = ""


@jobs.handler(Returns)
def returns(job: Job, args: Returns) -> Any:
    if args.hook == "not_json":  # in any process (HOOKS are set by in-process tests only)
        return {"a set": {1, 2}}
    if args.hook == "gc":
        return {"thresholds": list(gc.get_threshold()), "frozen": gc.get_freeze_count()}
    if args.hook:
        return HOOKS[args.hook](job, args)
    return json.loads(args.value)


@kind("test.async_returns", attempts=2)
@dataclass
class AsyncReturns:
    value: str = "null"


@jobs.handler(AsyncReturns)
async def async_returns(job: Job, args: AsyncReturns) -> Any:
    return json.loads(args.value)
