"""Kinds of tests/e2e/test_flow.py (imported by `tests.sampleapp.e2e_jobs` when
``ANOLE_E2E_FLOW`` is set): fair flow and sequences, recorded with marker files (`touch`)."""

from __future__ import annotations

import time
from dataclasses import dataclass

from anole_jobs import Job, jobs, kind
from tests.sampleapp.e2e_jobs import touch


@kind("e2e.fair", attempts=3)
@dataclass
class Fair:
    """Records its start and end (marker files); a fair queue takes turns by `customer`."""

    customer: str = "a"
    marker: str = ""


@jobs.handler(Fair)
def fair(job: Job, args: Fair) -> None:
    touch(args.marker, job, "started")
    touch(args.marker, job, "finished")


@kind("e2e.sequence", attempts=3, sequence="account")
@dataclass
class Sequenced:
    """Runs `seconds` (time.sleep); one at a time per `account`, in enqueue order."""

    account: int = 0
    seconds: float = 0.02
    marker: str = ""


@jobs.handler(Sequenced)
def sequenced(job: Job, args: Sequenced) -> None:
    touch(args.marker, job, "started")
    time.sleep(args.seconds)
    touch(args.marker, job, "finished")
