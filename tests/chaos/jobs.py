"""The chaos scenarios' kind, autodiscovered in the `runjobs` processes they start.

`chaos.task` logs its start and its end in the run log (`runlog`), and in between does what
`mode` says: "ok" waits `seconds` through `job.sleep` (a wait drain can cancel), "busy" waits
without a cancellable wait, and "fail" raises on the attempts up to `fail_attempts`.
`chaos.suicide` kills its own process every time. `chaos.tick` is the cron entry's job: it logs
the tick it was enqueued for.
"""

from __future__ import annotations

import os
import signal
import time
from dataclasses import dataclass
from datetime import timedelta

from anole_jobs import Job, jobs, kind
from tests.chaos import apps, runlog


# A short backoff: a failed attempt runs again within the scenario, not 15 s later.
@kind("chaos.task", attempts=5, backoff=lambda attempt: timedelta(seconds=1))
@dataclass
class ChaosTask:
    mode: str = "ok"
    seconds: float = 0.0
    fail_attempts: int = 0
    #: When the producer enqueued it (CLOCK_MONOTONIC, ns): the load scenario's latency.
    sent: int = 0


@jobs.handler(ChaosTask)
def chaos_task(job: Job, args: ChaosTask) -> None:
    runlog.write("start", id=job.id, attempt=job.attempt, sent=args.sent)
    apps.passing("in_handler")
    if args.mode == "fail" and job.attempt <= args.fail_attempts:
        runlog.write("end", id=job.id, attempt=job.attempt, raised=True)
        raise RuntimeError(f"chaos: attempt {job.attempt} fails on purpose")
    # A replacement process of a drain scenario runs the same jobs without their long wait.
    if args.seconds and not os.environ.get("ANOLE_CHAOS_FAST"):
        if args.mode == "busy":
            time.sleep(args.seconds)
        else:
            job.sleep(args.seconds)
    runlog.write("end", id=job.id, attempt=job.attempt, raised=False)


@kind("chaos.tick", attempts=5, backoff=lambda attempt: timedelta(seconds=1))
@dataclass
class ChaosTick:
    """The job of the chaos cron entry (`tests.chaos.settings`)."""


@jobs.handler(ChaosTick)
def chaos_tick(job: Job, args: ChaosTick) -> None:
    cron = job.meta.get("cron") or {}
    runlog.write("tick", id=job.id, attempt=job.attempt, tick=cron.get("tick"))


@kind("chaos.suicide", attempts=2)
@dataclass
class ChaosSuicide:
    """Kills its own worker on every attempt: it must end dead after its two attempts."""


@jobs.handler(ChaosSuicide)
def chaos_suicide(job: Job, args: ChaosSuicide) -> None:
    runlog.write("start", id=job.id, attempt=job.attempt)
    os.kill(os.getpid(), signal.SIGKILL)


@kind("chaos.step", attempts=5, backoff=lambda attempt: timedelta(seconds=1))
@dataclass
class ChaosStep:
    """A workflow step: logs its start and end like `chaos.task`, waits `seconds` in between,
    and returns the names of the dependencies whose results it read."""

    seconds: float = 0.0


@jobs.handler(ChaosStep)
def chaos_step(job: Job, args: ChaosStep) -> dict[str, list[str]]:
    runlog.write("start", id=job.id, attempt=job.attempt, step=job.step_name)
    deps = sorted(job.dependency_results())
    if args.seconds:
        job.sleep(args.seconds)
    runlog.write("end", id=job.id, attempt=job.attempt, raised=False, step=job.step_name)
    return {"deps": deps}


#: The table the durable scenario's steps insert into (created by the test).
STEP_TABLE = "chaos_step_row"


@kind("chaos.durable", attempts=20, backoff=lambda attempt: timedelta(seconds=0.5))
@dataclass
class ChaosDurable:
    """A job of `steps` durable steps. On the database store each step is atomic and inserts
    one row (job, step) into `STEP_TABLE`; on Redis each logs ``fn`` when its fn returns and
    ``recorded`` once `job.step` came back, so a rerun of a fn can be told apart."""

    steps: int = 4
    seconds: float = 0.0


@jobs.handler(ChaosDurable)
def chaos_durable(job: Job, args: ChaosDurable) -> None:
    from django.db import connections

    runlog.write("start", id=job.id, attempt=job.attempt)
    alias = jobs.service.store.atomic_alias
    for index in range(args.steps):

        def insert_row(index: int = index) -> int:
            if alias is not None:
                with connections[alias].cursor() as cursor:
                    cursor.execute(
                        f"INSERT INTO {STEP_TABLE} (job_id, step) VALUES (%s, %s)",
                        [job.id, index],
                    )
            if args.seconds:
                time.sleep(args.seconds)  # widen the window between fn and its record
            runlog.write("fn", id=job.id, step=index, attempt=job.attempt)
            apps.passing("in_step")
            return index

        job.step(f"row-{index}", insert_row, atomic=alias is not None)
        runlog.write("recorded", id=job.id, step=index, attempt=job.attempt)
    runlog.write("end", id=job.id, attempt=job.attempt, raised=False)
