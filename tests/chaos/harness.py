"""The chaos harness: a cluster of `runjobs` processes over one store, faults done to it, and the
exact reconciliation every scenario ends with.

Reconciliation (`reconcile`) compares three things that do not depend on each other: the ids
`enqueue` returned, the jobs as the store holds them at the end, and the run log the processes
wrote outside the store (`runlog`). It asserts:

- nothing lost: every job enqueued ends completed, dead or cancelled (or was deleted on
  purpose), so enqueued = completed + dead + cancelled + deleted;
- no finished job ran again: no handler started after a run of that job saved a final outcome;
- every duplicate is explained: a handler that returned more than once for one job did so
  because the earlier run's outcome never reached the store — its process was killed, or its
  lease lapsed (outcome `lost`), or it was drained — never for no reason;
- no write from a superseded claim was accepted: a run whose job was claimed again while it
  ran never saved its outcome, and a completed job's stored attempt is one whose handler
  returned.
"""

from __future__ import annotations

import os
import random
import signal
import time
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tests.chaos import runlog
from tests.e2e.conftest import Backend, Spec, Worker, wait_until

FINAL = ("completed", "dead", "cancelled")
#: Set by `python -m tests.chaos --long`: scenarios scale up to their long form.
LONG = os.environ.get("ANOLE_CHAOS_LONG") == "1"


def scale(short: int, long: int) -> int:
    return long if LONG else short


def sized(name: str, short: int, long: int) -> int:
    """`scale`, unless ``ANOLE_CHAOS_<NAME>`` sets the figure (``python -m tests.chaos --jobs``
    and ``--kills`` do, to fit a long run into a time box)."""
    value = os.environ.get(f"ANOLE_CHAOS_{name.upper()}")
    return int(value) if value else scale(short, long)


@dataclass
class Report:
    """What a reconciliation found; `problems` must be empty."""

    enqueued: int = 0
    completed: int = 0
    dead: int = 0
    cancelled: int = 0
    deleted: int = 0
    lost: list[int] = field(default_factory=list)
    starts: int = 0
    duplicates: dict[str, int] = field(default_factory=dict)  # why -> how many
    problems: list[str] = field(default_factory=list)

    def summary(self) -> str:
        why = ", ".join(f"{n} {reason}" for reason, n in sorted(self.duplicates.items()))
        return (
            f"{self.enqueued} enqueued = {self.completed} completed + {self.dead} dead + "
            f"{self.cancelled} cancelled + {self.deleted} deleted; lost {len(self.lost)}; "
            f"{self.starts} handler starts; duplicates {sum(self.duplicates.values())}"
            + (f" ({why})" if why else "")
        )

    def check(self) -> None:
        assert not self.lost, f"lost jobs (not final): {self.lost[:20]}\n{self.summary()}"
        assert not self.problems, "\n".join(self.problems[:30]) + "\n" + self.summary()
        total = self.completed + self.dead + self.cancelled + self.deleted
        assert total == self.enqueued, self.summary()


def reconcile(
    enqueued: Iterable[int],
    stored: dict[int, dict[str, Any]],
    log: list[dict[str, Any]],
    *,
    killed: set[int],
    drained: set[int] = frozenset(),  # type: ignore[assignment]
    deleted: set[int] = frozenset(),  # type: ignore[assignment]
) -> Report:
    """Check the store and the run log against the enqueued ids (see the module docstring).

    `killed` and `drained` are the pids of processes the scenario killed or sent SIGTERM;
    `deleted` the ids it deleted on purpose.
    """
    ids = sorted(set(enqueued))
    report = Report(enqueued=len(ids))
    by_job: dict[int, list[dict[str, Any]]] = defaultdict(list)
    for record in log:
        if "id" in record and record["e"] in ("start", "end", "run"):
            by_job[record["id"]].append(record)
    for job_id in ids:
        row = stored.get(job_id)
        if row is None:
            if job_id in deleted:
                report.deleted += 1
            else:
                report.lost.append(job_id)
            continue
        if row["state"] not in FINAL:
            report.lost.append(job_id)
            continue
        setattr(report, row["state"], getattr(report, row["state"]) + 1)
        _check_job(job_id, row, by_job[job_id], report, killed=killed, drained=drained)
    return report


def _check_job(
    job_id: int,
    row: dict[str, Any],
    records: list[dict[str, Any]],
    report: Report,
    *,
    killed: set[int],
    drained: set[int],
) -> None:
    starts = [r for r in records if r["e"] == "start"]
    report.starts += len(starts)
    returned = [r for r in records if r["e"] == "end" and not r["raised"]]
    saved = [r for r in records if r["e"] == "run" and r["saved"]]
    # No finished job ran again.
    final_saves = [r for r in saved if r["outcome"] in ("completed", "dead")]
    if final_saves:
        first_final = final_saves[0]["t"]
        again = [r for r in starts if r["t"] > first_final]
        if again:
            report.problems.append(f"job {job_id} started again after it finished: {again}")
        if len(final_saves) > 1:
            report.problems.append(f"job {job_id} saved a final outcome twice: {final_saves}")
    # No write from a superseded claim accepted: a run another claim overtook saved nothing.
    for save in saved:
        if save["outcome"] == "lost":
            continue  # the fence refused its write: what this check wants
        began = [
            r
            for r in starts
            if r["pid"] == save["pid"] and r["attempt"] == save["attempt"] and r["t"] < save["t"]
        ]
        if not began:
            continue
        overtaken = [r for r in starts if began[-1]["t"] < r["t"] < save["t"]]
        if overtaken:
            report.problems.append(
                f"job {job_id}: a superseded run (pid {save['pid']}, attempt "
                f"{save['attempt']}) saved {save['outcome']!r} after {overtaken[0]} began"
            )
    if row["state"] == "completed" and not any(r["attempt"] == row["attempt"] for r in returned):
        report.problems.append(
            f"job {job_id} is completed at attempt {row['attempt']}, but no handler of that "
            f"attempt returned: {records}"
        )
    # Every duplicate (a handler that returned more than once) is explained.
    for earlier in returned[:-1]:
        why = _why_again(earlier, records, killed=killed, drained=drained)
        if why is None:
            report.problems.append(
                f"job {job_id}: the handler returned on attempt {earlier['attempt']} "
                f"(pid {earlier['pid']}) and ran again for no reason: {records}"
            )
        else:
            report.duplicates[why] = report.duplicates.get(why, 0) + 1


def _why_again(
    end: dict[str, Any], records: list[dict[str, Any]], *, killed: set[int], drained: set[int]
) -> str | None:
    runs = [
        r
        for r in records
        if r["e"] == "run" and r["pid"] == end["pid"] and r["attempt"] == end["attempt"]
    ]
    if any(r["saved"] and r["outcome"] in ("completed", "dead") for r in runs):
        return None  # it was saved: running again is the bug this check exists for
    if any(r["outcome"] == "lost" or not r["saved"] for r in runs):
        return "lease lapsed, outcome lost"
    if any(r["outcome"] == "interrupted" for r in runs) or end["pid"] in drained:
        return "drained"
    if end["pid"] in killed:
        return "killed before its outcome was saved"
    return None


# -- the cluster -----------------------------------------------------------------------------
class Cluster:
    """`runjobs` processes over one `Backend`, each logging to the shared run log."""

    def __init__(self, backend: Backend, *, lease: float = 2.0, concurrency: int = 4) -> None:
        self.backend = backend
        self.log_dir = backend.tmp / "runlog"
        self.log_dir.mkdir(exist_ok=True)
        self.env = {
            **backend.env,
            "DJANGO_SETTINGS_MODULE": "tests.chaos.settings",
            runlog.ENV: str(self.log_dir),
            "ANOLE_E2E_LEASE": str(lease),
            "ANOLE_E2E_CONCURRENCY": str(concurrency),
        }
        self.lease = lease
        self.workers: list[Worker] = []
        self.killed: set[int] = set()
        self.drained: set[int] = set()
        self.deleted: set[int] = set()
        self.enqueued: list[int] = []
        self.restarts = 0
        #: Kill points every process is armed with (`tests.chaos.apps`), besides its own.
        self.armed_all = ""

    def with_cron(self, *, kill_after_tick: bool) -> None:
        """Run the chaos cron entry (a tick a minute); with `kill_after_tick`, every process
        kills itself the first time it records a tick as the leader."""
        self.env["ANOLE_CHAOS_CRON"] = "1"
        self.armed_all = "cron_tick:1" if kill_after_tick else ""

    # -- processes ---------------------------------------------------------------------------
    def start(
        self, count: int = 1, *, kill_at: str = "", fast: bool = False, **env: str
    ) -> list[Worker]:
        """Start `count` processes; `kill_at` arms a kill point, `fast` skips the handlers'
        waits, and `env` sets ``ANOLE_E2E_*`` settings (e.g. ``DRAIN="1"``)."""
        started = []
        for _ in range(count):
            extra = {f"ANOLE_E2E_{key}": value for key, value in env.items()}
            # A process armed at a named point carries only that one: dying at a cron tick
            # first would leave its point unvisited.
            armed = kill_at or self.armed_all
            if armed:
                extra["ANOLE_CHAOS_KILL_AT"] = armed
            if fast:
                extra["ANOLE_CHAOS_FAST"] = "1"
            worker = Worker(
                {**self.env, **extra},
                (),
                self.backend.tmp / f"runjobs-{len(self.backend.workers) + 1}.log",
            )
            self.backend.workers.append(worker)  # the backend fixture kills and prints it
            self.workers.append(worker)
            started.append(worker)
        return started

    def alive(self) -> list[Worker]:
        return [w for w in self.workers if w.proc.poll() is None]

    def kill(self, worker: Worker) -> None:
        """kill -9: no drain, no write; its jobs wait for their lease to lapse."""
        self.killed.add(worker.pid)
        if worker.proc.poll() is None:
            os.kill(worker.pid, signal.SIGKILL)
        worker.proc.wait(timeout=30)

    def replace_dead(self) -> int:
        """Start a fresh process for each one that died by itself (a kill point, a suicide)."""
        exited = [w for w in self.workers if w.proc.poll() is not None]
        for worker in exited:
            if worker.pid in self.drained or worker.pid in self.killed:
                self.workers.remove(worker)  # stopped on purpose: not replaced
        dead = [w for w in exited if w.pid not in self.killed and w.pid not in self.drained]
        for worker in dead:
            self.killed.add(worker.pid)
            self.workers.remove(worker)
            self.start()
            self.restarts += 1
        return len(dead)

    def stop_all(self, timeout: float = 20.0) -> None:
        for worker in self.alive():
            self.drained.add(worker.pid)
            worker.signal(signal.SIGTERM)
        for worker in self.workers:
            if worker.proc.poll() is None:
                worker.wait(timeout)

    # -- jobs ----------------------------------------------------------------------------------
    def enqueue(self, *specs: Spec) -> list[int]:
        env_backup = self.backend.env
        self.backend.env = self.env  # enqueue with the chaos settings (its kinds are installed)
        try:
            batches = self.backend.enqueue_specs(*specs)
        finally:
            self.backend.env = env_backup
        ids = [job_id for batch in batches for job_id in batch]
        self.enqueued.extend(ids)
        return ids

    def unfinished(self) -> list[int]:
        stored = self.backend.jobs(self.enqueued)
        return [
            job_id
            for job_id in self.enqueued
            if job_id not in self.deleted
            and (job_id not in stored or stored[job_id]["state"] not in FINAL)
        ]

    def wait_all_final(self, timeout: float) -> None:
        """Wait until every job enqueued is final, replacing processes that died meanwhile."""

        def settled() -> bool:
            self.replace_dead()
            return not self.unfinished()

        try:
            wait_until(settled, "every job to reach a final state", timeout, recheck=0.25)
        except AssertionError as exc:
            left = self.unfinished()
            raise AssertionError(
                f"{exc}\n{len(left)} not final: {self.backend.jobs(left[:10])}"
            ) from None

    def log(self) -> list[dict[str, Any]]:
        return runlog.read(self.log_dir)

    def reconcile(self) -> Report:
        report = reconcile(
            self.enqueued,
            self.backend.jobs(self.enqueued),
            self.log(),
            killed=self.killed,
            drained=self.drained,
            deleted=self.deleted,
        )
        print("reconciliation:", report.summary())
        report.check()
        return report

    def wait_started(self, since: int, count: int = 1, timeout: float = 30.0) -> int:
        """Wait until `count` handlers started after run-log position `since`; the new end."""

        def started() -> int:
            self.replace_dead()
            records = self.log()
            fresh = [r for r in records[since:] if r["e"] == "start"]
            return len(records) if len(fresh) >= count else 0

        return int(wait_until(started, f"{count} handler starts", timeout, recheck=0.05))


#: Kill points (`tests.chaos.apps`) a replacement process may be armed with, N-th pass each.
NAMED_POINTS = ("after_claim:2", "before_finish:3", "after_finish:3", "in_handler:2")


def random_kills(
    cluster: Cluster, *, kills: int, rng: random.Random, pause: tuple[float, float]
) -> int:
    """Kill a random running process `kills` times, a random pause (seconds, in `pause`) apart;
    a fresh process replaces each victim. The first replacements are armed to kill themselves
    at each named point in turn (and are spared until they did).
    """
    done = 0
    armed: set[int] = set()
    points = list(NAMED_POINTS)
    while done < kills:
        # The fault schedule, not a wait for a condition: kills land at random moments.
        time.sleep(rng.uniform(*pause))
        cluster.replace_dead()
        ready = [w for w in cluster.alive() if "send SIGTERM" in w.output()]
        running = [w for w in ready if w.pid not in armed]
        if not running and ready and not cluster.unfinished():
            # Every job is final, so an armed process never reaches its kill point: it is a
            # victim like the others (else this loop would wait for it forever).
            running = ready
        if not running:
            continue
        victim = rng.choice(running)
        cluster.kill(victim)
        cluster.workers.remove(victim)
        point = points.pop(0) if points else ""
        (replacement,) = cluster.start(kill_at=point)
        if point:
            armed.add(replacement.pid)
        cluster.restarts += 1
        done += 1
    return done


def log_path(cluster: Cluster) -> Path:
    return cluster.log_dir
