"""A rolling deploy of a kind whose args changed: a worker of the previous release (the kind
at version 1) and one of this release (version 2, with the upcaster from 1) run on one store
while both releases enqueue. Each job runs on a worker that knows its version — the old worker
never claims a version-2 job, which waits for the new one — and none is lost, discarded or
retried.

On PostgreSQL, whose claims are server functions (the contract tests cover every store's
claim). The two releases are one module, `tests.sampleapp.rolling_jobs`, read with and without
``ANOLE_E2E_OLD_CODE``; each handler leaves a marker naming its release.
"""

from __future__ import annotations

import json

import pytest

from tests.e2e.conftest import Backend, Spec

pytestmark = pytest.mark.e2e

KIND = "e2e.rolling.invoice"


def ran_by(backend: Backend) -> dict[int, list[str]]:
    """``{job id: [release, ...]}`` of every run the markers record."""
    runs: dict[int, list[str]] = {}
    for path in backend.markers.iterdir():
        job_id, _attempt, release = path.name.split(".")
        runs.setdefault(int(job_id), []).append(release)
    return runs


def rolling_deploy(backend: Backend) -> None:
    marker = str(backend.markers)
    # The previous release runs alone; this release's code is deployed to the enqueuers
    # first: jobs of version 2 arrive before any worker knows that version.
    old_worker = backend.spawn("--queue", "default", OLD_CODE="1")
    old_worker.wait_ready()
    (new_jobs,) = backend.enqueue_specs(Spec(KIND, 8, args={"cents": 250, "marker": marker}))
    old_jobs = enqueue_old(backend, euros=3, marker=marker)
    backend.wait_state(old_jobs, "completed", timeout=15)
    # The old worker has claimed and run every job it could: the version-2 jobs wait.
    waiting = backend.jobs(new_jobs)
    assert {r["state"] for r in waiting.values()} == {"available"}, waiting
    assert {r["attempt"] for r in waiting.values()} == {0}
    # This release's worker starts beside the old one; both releases go on enqueueing.
    new_worker = backend.spawn("--queue", "default")
    more_old = enqueue_old(backend, euros=1, marker=marker)
    (more_new,) = backend.enqueue_specs(Spec(KIND, 8, args={"cents": 5, "marker": marker}))
    everything = [*new_jobs, *old_jobs, *more_old, *more_new]
    records = backend.wait_state(everything, "completed", timeout=15)
    assert all(r["attempt"] == 1 and not r["errors"] for r in records.values()), records
    runs = ran_by(backend)
    assert sorted(runs) == sorted(everything)  # each ran exactly once
    assert all(len(releases) == 1 for releases in runs.values())
    for job_id in [*new_jobs, *more_new]:
        assert runs[job_id] == ["new"], (job_id, runs[job_id])  # version 2: only the new release
    assert {runs[job_id][0] for job_id in old_jobs} == {"old"}
    old_worker.signal()
    new_worker.signal()
    assert old_worker.wait(15) == 0 and new_worker.wait(15) == 0


def enqueue_old(backend: Backend, **args: object) -> list[int]:
    """8 jobs enqueued by the previous release's code (stored at version 1); their ids."""
    payload = json.dumps([{"kind": KIND, "args": args, "count": 8}])
    (ids,) = json.loads(backend.manage("e2e_enqueue", payload, OLD_CODE="1"))
    return list(ids)


@pytest.mark.needs("postgres")
def test_a_rolling_deploy_of_a_new_version_on_postgresql(pg_backend: Backend) -> None:
    rolling_deploy(pg_backend)
