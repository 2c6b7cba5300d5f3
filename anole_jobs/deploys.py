"""Safe deploys (docs/deploys.md): what a worker does with a job it claimed under one of its
kind's aliases or at an older version of its kind's args, and what `jobs check-deploy` reports.

A claim names the kinds, aliases and stored versions this process can run (`Registry.claim_keys`),
so every job claimed here has a handler; this module makes the job look as if it had been
enqueued by the code running now: the kind's own name (recorded in the store, fenced) and its
args brought up to the kind's version by the upcasters (in memory, each attempt).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from anole_jobs.kinds import HandlerSpec, Registry
from anole_jobs.stores.base import ClaimedJob, Store
from anole_jobs.stores.workers import WorkerRecord


def canonical_claims(
    store: Store, registry: Registry, claimed: Sequence[ClaimedJob]
) -> list[ClaimedJob]:
    """`claimed` with each job of an alias shown (and recorded in the store) under its kind's
    name. A job whose rename fails its fence is left as it is: its worker loses it anyway."""
    out = list(claimed)
    for i, job in enumerate(out):
        kind = job.record.kind
        if registry.handler(kind) is not None:
            continue
        spec = registry.canonical(kind)
        if spec is None or spec.name == kind:
            continue
        if store.rename_kind(job.run, spec.name):
            out[i] = replace(job, record=replace(job.record, kind=spec.name))
    return out


def upcast_args(handler: HandlerSpec, registry: Registry, record: Any) -> Mapping[str, Any]:
    """The job's args at its kind's version: the stored ones when it was stored at that version,
    else brought up through the upcasters (`InvalidJob` for a gap, whatever an upcaster raises
    as it is)."""
    version = getattr(record, "version", 1)
    target = handler.kind.version
    if version >= target:
        return record.args
    return registry.upcast(handler.kind.name, record.args, version, target)


@dataclass(frozen=True, kw_only=True)
class DeployProblem:
    """Jobs waiting in the store that this code cannot run."""

    kind: str
    version: int
    jobs: int
    reason: str

    def line(self) -> str:
        count = f"{self.jobs} job" + ("" if self.jobs == 1 else "s")
        return f"{self.kind} version {self.version}: {self.reason} ({count})"


def deploy_problems(registry: Registry, live: Mapping[tuple[str, int], int]) -> list[DeployProblem]:
    """What `jobs check-deploy` reports: for each (kind, version) of the jobs not finished
    (`Store.live_versions`), why this code cannot run them, if it cannot."""
    problems = []
    for (kind, version), count in sorted(live.items()):
        reason = cannot_run(registry, kind, version)
        if reason is not None:
            problems.append(DeployProblem(kind=kind, version=version, jobs=count, reason=reason))
    return problems


def cannot_run(registry: Registry, kind: str, version: int) -> str | None:
    """Why this code cannot run a stored job of `kind` at `version`, or None when it can."""
    spec = registry.canonical(kind)
    if spec is None:
        return "no kind and no alias of this name"
    if registry.handler(spec.name) is None:
        named = "" if spec.name == kind else f" (an alias of {spec.name!r})"
        return f"kind {spec.name!r}{named} has no handler"
    if version > spec.version:
        return f"stored at version {version}, newer than this code's version {spec.version}"
    gap = registry.missing_upcaster(spec.name, version, spec.version)
    if gap is not None:
        return f"no upcaster path to version {spec.version} (no upcaster from version {gap})"
    return None


def live_worker_runs(
    workers: Iterable[WorkerRecord], queue: str, kind: str, version: int = 1
) -> bool:
    """Whether any of `workers` (the live ones: `jobs.workers()`) runs `queue` and claims
    stored jobs of `kind` at `version` — for `jobs.why`'s ``no_worker``: a job of a version no
    live worker knows waits. A worker record of an older release, which does not say what it
    runs, counts as running its queues' version-1 jobs."""
    for worker in workers:
        if not any(q.name == queue for q in worker.queues):
            continue
        can = worker.can_run(kind, version)
        if can or (can is None and version <= 1):
            return True
    return False
