"""The bench's job kinds, autodiscovered like any installed app's `jobs` module."""

from __future__ import annotations

from dataclasses import dataclass

from anole_jobs import Job, jobs, kind


@kind("bench.noop", attempts=3)
@dataclass
class Noop:
    """A job that does nothing: what is measured is the queue, not the handler."""

    n: int = 0


@jobs.handler(Noop)
def noop(job: Job, args: Noop) -> None:
    return None


@kind("bench.cpu", attempts=3)
@dataclass
class Cpu:
    """A job that only computes, holding the GIL for all of it: what more processes buy."""

    rounds: int = 200_000


@jobs.handler(Cpu)
def cpu(job: Job, args: Cpu) -> int:
    total = 0
    for i in range(args.rounds):
        total = (total + i * i) % 1_000_003
    return total


@kind("bench.deps", attempts=3)
@dataclass
class Deps:
    """A workflow step that reads its dependencies' results (`job.dependency_results()`) and
    does nothing else: the workflows scenario's handler-side cost, apart from the store's."""

    n: int = 0


@jobs.handler(Deps)
def deps(job: Job, args: Deps) -> None:
    job.dependency_results()


@kind("bench.http", attempts=3)
@dataclass
class HttpCall:
    """An async job that awaits one HTTP call to `url` (``HOST:PORT``, the bench's slow local
    server) through a pool of connections the process's event loop keeps for every job."""

    url: str = ""


@jobs.handler(HttpCall)
async def http_call(job: Job, args: HttpCall) -> None:
    from bench.slow_http import pool

    await pool(args.url).get()
