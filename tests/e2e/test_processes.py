"""`runjobs --processes N`: a supervisor and N worker processes, each a full runtime.

Workers log with a ``[worker N]`` tag in the supervisor's output; the supervisor logs each
start, exit and restart. Which process ran a job is read from the ``<id>.<attempt>.pid<PID>``
marker the `whoami` kind touches.
"""

from __future__ import annotations

import os
import re
import signal
import urllib.request
from pathlib import Path

import pytest

from tests.e2e.conftest import Backend, Worker, wait_markers, wait_until

pytestmark = pytest.mark.e2e

STARTED = re.compile(r"worker (\d+) started \(pid (\d+)\)")
SERVING = re.compile(r"serving metrics at http://[^:]+:(\d+)/metrics")
SUPERVISOR_READY = "worker processes; send SIGTERM or SIGINT to drain"
LEASE = "1"
#: A bound, not a wait: a lease lapse + the rescue interval + a worker's restart.
RESCUE_WITHIN = 30.0


def wait_workers(supervisor: Worker, count: int, since: int = 0) -> None:
    """Wait until workers 1..count each said they run (after offset `since`)."""
    supervisor.wait_output(SUPERVISOR_READY)
    for number in range(1, count + 1):
        supervisor.wait_output(f"[worker {number}]: runjobs running", since=since)


def worker_pids(output: str) -> dict[int, int]:
    """The latest pid of each worker number, from the supervisor's start lines."""
    return {int(n): int(pid) for n, pid in STARTED.findall(output)}


def pids_that_ran(markers: Path) -> dict[int, set[int]]:
    """{job id: {pid of each process that started it}}."""
    ran: dict[int, set[int]] = {}
    for path in markers.glob("*.pid*"):
        job_id, _attempt, pid = path.name.split(".")
        ran.setdefault(int(job_id), set()).add(int(pid[3:]))
    return ran


def test_workers_all_run_jobs_and_sigterm_drains_every_one(backend: Backend) -> None:
    supervisor = backend.spawn("--processes", "2", CONCURRENCY="2")
    wait_workers(supervisor, 2)
    pids = worker_pids(supervisor.output())
    assert len(set(pids.values())) == 2 and supervisor.pid not in pids.values()
    # More jobs than one worker holds at once: a worker that claims nothing leaves them to
    # the other, which finishes them within about a poll interval.
    ids = backend.enqueue("whoami", count=30, seconds=0.2, marker=str(backend.markers))
    backend.wait_state(ids, "completed")
    ran = pids_that_ran(backend.markers)
    assert set(ran) == set(ids)
    assert {pid for found in ran.values() for pid in found} == set(pids.values())
    # SIGTERM while each worker runs a job that finishes within the drain: both drain.
    marker = str(backend.markers)
    slow = backend.enqueue("whoami", count=4, seconds=1.0, marker=marker)
    for job_id in slow:
        wait_markers(backend.markers, 1, job_id=job_id)
    supervisor.signal(signal.SIGTERM)
    assert supervisor.wait(timeout=30) == 0, supervisor.output()
    records = backend.jobs(slow)
    assert {(r["state"], r["attempt"]) for r in records.values()} == {("completed", 1)}
    output = supervisor.output()
    assert "SIGTERM received; asking 2 worker(s) to drain" in output
    for number, pid in pids.items():
        assert f"worker {number} (pid {pid}) drained and exited" in output
        assert f"[worker {number}]: runjobs: stopped" in output
    assert "every worker stopped; exiting 0" in output


def test_a_killed_worker_is_restarted_and_its_job_rescued(backend: Backend) -> None:
    supervisor = backend.spawn("--processes", "2", LEASE=LEASE)
    wait_workers(supervisor, 2)
    # Attempt 1 blocks in job.sleep(60); attempt 2 returns at once.
    (job_id,) = backend.enqueue("whoami", seconds=60, marker=str(backend.markers))
    wait_markers(backend.markers, 1)
    ((victim,),) = pids_that_ran(backend.markers).values()
    number = next(n for n, pid in worker_pids(supervisor.output()).items() if pid == victim)
    mark = len(supervisor.output())
    os.kill(victim, signal.SIGKILL)
    supervisor.wait_output(
        f"worker {number} (pid {victim}) was killed by SIGKILL unexpectedly", since=mark
    )
    supervisor.wait_output("restarting it in 1 s", since=mark)
    output = supervisor.wait_output(f"worker {number} started (pid", since=mark)
    assert worker_pids(output)[number] != victim
    # Per the lease rules: the killed run's lease lapses, the job is rescued (the attempt
    # counted, LeaseExpired recorded) and run again, by either worker.
    record = backend.wait_state([job_id], "completed", timeout=RESCUE_WITHIN)[job_id]
    assert record["attempt"] == 2
    assert [e["type"] for e in record["errors"]] == ["LeaseExpired"]
    supervisor.signal(signal.SIGTERM)
    assert supervisor.wait(timeout=30) == 0, supervisor.output()


def test_max_jobs_per_process_recycles_without_loss_or_counted_attempts(backend: Backend) -> None:
    supervisor = backend.spawn("--processes", "2", "--max-jobs-per-process", "3", CONCURRENCY="2")
    wait_workers(supervisor, 2)
    ids = backend.enqueue("whoami", count=20, seconds=0.05, marker=str(backend.markers))
    records = backend.wait_state(ids, "completed")
    # Every job ran once, its first attempt: nothing given back was counted or lost.
    assert {r["attempt"] for r in records.values()} == {1}
    assert all(r["errors"] == [] for r in records.values())
    ran = pids_that_ran(backend.markers)
    assert all(len(found) == 1 for found in ran.values())
    by_pid: dict[int, int] = {}
    for (pid,) in ran.values():
        by_pid[pid] = by_pid.get(pid, 0) + 1
    # Past 3 jobs a worker claims nothing more: it runs at most the jobs it held then (its 2
    # slots and what it claimed ahead, at most as many again).
    assert all(n <= 3 + 2 * 2 for n in by_pid.values()), by_pid
    # So the first two workers were replaced: more processes ran jobs than ever ran at once.
    assert len(by_pid) > 2, by_pid
    output = supervisor.output()
    assert "runjobs: recycling after 3 job(s) (--max-jobs-per-process 3)" in output
    assert "recycled; starting its replacement" in output
    supervisor.signal(signal.SIGTERM)
    assert supervisor.wait(timeout=30) == 0, supervisor.output()


def test_a_single_runjobs_past_its_limit_drains_and_exits_3(sqlite_backend: Backend) -> None:
    backend = sqlite_backend
    worker = backend.spawn("--max-jobs-per-process", "2", CONCURRENCY="1")
    worker.wait_ready()
    ids = backend.enqueue("whoami", count=8, seconds=0.3, marker=str(backend.markers))
    assert worker.wait(timeout=30) == 3, worker.output()
    records = backend.jobs(ids).values()
    done = [r for r in records if r["state"] == "completed"]
    # Two jobs, and what it held when the second ended (its slot and what it claimed ahead).
    assert 2 <= len(done) <= 2 + 2 * 1
    assert {r["attempt"] for r in done} == {1}
    left = [r for r in records if r["state"] != "completed"]
    assert all((r["state"], r["attempt"], r["errors"]) == ("available", 0, []) for r in left)
    assert "exiting with status 3 so that it is replaced" in worker.output()


def test_max_memory_per_process_recycles(sqlite_backend: Backend) -> None:
    backend = sqlite_backend
    # A worker holds about 60 MiB before its first job. A long lease: touching fresh memory
    # is slow on a loaded machine, and a rescue would count an attempt.
    supervisor = backend.spawn("--processes", "2", "--max-memory-per-process", "130", LEASE="10")
    wait_workers(supervisor, 2)
    # Each job keeps 25 MiB for the life of its process: a worker passes 130 MiB within a
    # few jobs, and is replaced.
    ids = backend.enqueue("whoami", count=8, hold=25, marker=str(backend.markers))
    records = backend.wait_state(ids, "completed")
    assert {r["attempt"] for r in records.values()} == {1}
    supervisor.wait_output("MiB of memory (--max-memory-per-process 130)")
    supervisor.wait_output("recycled; starting its replacement")
    supervisor.signal(signal.SIGTERM)
    assert supervisor.wait(timeout=30) == 0, supervisor.output()


def test_a_second_signal_makes_every_worker_give_its_jobs_back(sqlite_backend: Backend) -> None:
    backend = sqlite_backend
    supervisor = backend.spawn("--processes", "2", CONCURRENCY="1", DRAIN="30")
    wait_workers(supervisor, 2)
    ids = backend.enqueue("whoami", count=2, seconds=60, marker=str(backend.markers))
    wait_markers(backend.markers, 1)
    supervisor.signal(signal.SIGTERM)
    supervisor.wait_output("[worker 1]: runjobs: SIGTERM (from the supervisor) received; draining")
    supervisor.wait_output("[worker 2]: runjobs: SIGTERM (from the supervisor) received; draining")
    running = len(list(backend.markers.glob("*.started")))
    supervisor.signal(signal.SIGINT)
    assert supervisor.wait(timeout=30) == 1, supervisor.output()
    records = backend.jobs(ids)
    # Given back at once (not after the 30 s drain), fenced, the attempt not counted.
    assert all(
        (r["state"], r["attempt"], r["errors"]) == ("available", 0, []) for r in records.values()
    ), records
    output = supervisor.output()
    assert "second signal: asking" in output
    assert output.count(": interrupted, given back") == running
    assert "drain_timeout (30 s) passed" not in output
    assert "a drain did not end cleanly; exiting 1" in output


def test_the_metrics_port_serves_the_sum_of_the_workers(sqlite_backend: Backend) -> None:
    backend = sqlite_backend
    supervisor = backend.spawn(
        "--processes", "2", "--metrics-port", "0", "--metrics-addr", "127.0.0.1", CONCURRENCY="2"
    )
    wait_workers(supervisor, 2)
    match = SERVING.search(supervisor.wait_output("serving metrics at"))
    assert match
    directory = re.search(r"multiprocess directory (\S+)\)", supervisor.output())
    assert directory and Path(directory.group(1)).is_dir()
    ids = backend.enqueue("whoami", count=30, seconds=0.2, marker=str(backend.markers))
    backend.wait_state(ids, "completed")
    ran = pids_that_ran(backend.markers)
    per_pid: dict[int, int] = {}
    for found in ran.values():
        for pid in found:
            per_pid[pid] = per_pid.get(pid, 0) + 1
    assert len(per_pid) == 2, per_pid
    series = 'anole_jobs_finished_total{kind="e2e.whoami",outcome="completed",queue="default"}'

    def summed() -> str | None:
        with urllib.request.urlopen(f"http://127.0.0.1:{match.group(1)}/metrics", timeout=10) as r:
            text = r.read().decode()
        return text if f"{series} 30.0" in text else None

    text = wait_until(summed, "30 completed runs summed over both workers", 15)
    assert "anole_jobs_leader 1.0" in text
    supervisor.signal(signal.SIGTERM)
    assert supervisor.wait(timeout=30) == 0, supervisor.output()
    assert not Path(directory.group(1)).exists(), "the supervisor removes its directory"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("--processes", "0"), "--processes must be at least 1, not 0"),
        (("--processes", "two"), "--processes must be a whole number, not 'two'"),
        (("--max-jobs-per-process", "-1"), "--max-jobs-per-process must be at least 1, not -1"),
        (("--max-memory-per-process", "1.5"), "--max-memory-per-process must be a whole number"),
        (("--max-memory-per-process", "1"), "is below the memory a worker holds"),
        (("--queue", "q" * 201), "--queue must be at most 200 characters"),
        (("--queue", "a\tb"), "contains a control character"),
    ],
)
def test_bad_option_values_exit_2_with_a_clear_message(
    sqlite_backend: Backend, args: tuple[str, ...], message: str
) -> None:
    done = sqlite_backend.run_command("runjobs", *args)
    assert done.returncode == 2, done
    assert message in done.stderr, done.stderr
    assert "Traceback" not in done.stderr


def alive(pid: int) -> bool:
    """Whether `pid` runs (a zombie nobody reaped yet does not)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def test_workers_drain_and_exit_when_their_supervisor_is_killed(sqlite_backend: Backend) -> None:
    backend = sqlite_backend
    supervisor = backend.spawn("--processes", "2")
    wait_workers(supervisor, 2)
    pids = set(worker_pids(supervisor.output()).values())
    (job_id,) = backend.enqueue("whoami", seconds=1.0, marker=str(backend.markers))
    wait_markers(backend.markers, 1)
    supervisor.proc.send_signal(signal.SIGKILL)
    assert supervisor.wait(timeout=10) == -signal.SIGKILL
    # Orphans do not linger: each sees its supervisor's pipe close, drains and exits.
    wait_until(lambda: not any(alive(pid) for pid in pids), "both workers to exit", 30)
    output = supervisor.output()
    assert output.count("runjobs: end of input (the supervisor is gone) received; draining") == 2
    # The running job was let finish within the drain.
    assert backend.jobs([job_id])[job_id]["state"] == "completed"
