"""`jobs.step()` enforces a kind's timeout like the runtime: the handler is cancelled
at its next wait past the timeout, and the attempt fails with `Timeout` — on every store.

One step runs one handler per way of waiting (`job.sleep`, `job.check_cancelled()`, a Django
query, an `await`), one that never waits and one that swallows its `Canceled`; the kinds'
timeout is 0.2 s, so a step takes a second or two of real time (manual mode never waits for
the clock, but a timeout is measured on the wall clock, as in the runtime).
"""

from __future__ import annotations

from pathlib import Path

from tests.sampleapp.e2e_jobs import WaitAsyncQuickTimeout as WaitAsyncTimeout
from tests.sampleapp.e2e_jobs import WaitQuickTimeout as WaitTimeout


def test_step_cancels_each_kind_of_wait_at_its_timeout(env, tmp_path: Path) -> None:
    marker = str(tmp_path)
    waits = ["sleep", "check", "query"] if env.alias is not None else ["sleep", "check"]
    ids = {
        how: env.jobs.enqueue(WaitTimeout(how=how, seconds=30, marker=marker)).id for how in waits
    }
    ids["await"] = env.jobs.enqueue(WaitAsyncTimeout(seconds=30, marker=marker)).id
    ids["none"] = env.jobs.enqueue(WaitTimeout(how="none", seconds=0.5, marker=marker)).id
    ids["swallow"] = env.jobs.enqueue(
        WaitTimeout(how="check", seconds=30, swallow=True, marker=marker)
    ).id

    outcomes = env.jobs.step().outcomes()

    for how in [*waits, "await"]:
        job_id = ids[how]
        assert outcomes[job_id] == "dead", how  # attempts=1: the timeout was its last attempt
        assert (tmp_path / f"{job_id}.1.canceled").exists(), f"{how}: never saw Canceled"
        record = env.jobs.get(job_id)
        assert record.state == "dead"
        assert [(e["type"], e["attempt"]) for e in record.errors] == [("Timeout", 1)], how
    # Never reached a wait: nothing could cancel it, and returning completes it.
    assert outcomes[ids["none"]] == "completed"
    assert not (tmp_path / f"{ids['none']}.1.canceled").exists()
    # Caught its Canceled and returned: completed.
    assert outcomes[ids["swallow"]] == "completed"
    assert (tmp_path / f"{ids['swallow']}.1.canceled").exists()
    assert env.jobs.get(ids["swallow"]).state == "completed"
