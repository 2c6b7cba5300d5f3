"""The supervisor's decisions (restart, backoff, recycle, drain) and the recycling watch, with
time passed in: a fake monotonic clock that moves only when the test says so."""

from __future__ import annotations

import signal

import pytest

from anole_jobs import events
from anole_jobs.worker.recycle import MIB, RecycleLimits, RecycleWatch
from anole_jobs.worker.supervisor import (
    RECYCLE_EXIT,
    Backoff,
    Supervision,
    describe_status,
    worker_argv,
)


class FakeMonotonic:
    def __init__(self) -> None:
        self.now = 1000.0

    def advance(self, seconds: float) -> float:
        self.now += seconds
        return self.now


def test_backoff_doubles_from_its_first_delay_up_to_its_cap() -> None:
    backoff = Backoff(first=1.0, cap=30.0)
    assert [backoff.delay(n) for n in range(0, 8)] == [0.0, 1, 2, 4, 8, 16, 30, 30]
    assert Backoff(first=0.5, cap=3).delay(3) == 2.0
    assert Backoff(first=1.0, cap=30.0).delay(10_000) == 30.0  # no overflow


def test_a_worker_that_keeps_failing_is_restarted_later_and_later() -> None:
    clock = FakeMonotonic()
    supervision = Supervision(2, Backoff(first=1.0, cap=8.0, stable_after=60.0))
    delays = []
    for _ in range(6):
        supervision.started(0, clock.now)
        decision = supervision.exited(0, 4242, 1, clock.advance(2.0))
        assert decision.action == "restart"
        delays.append(decision.delay)
        clock.advance(decision.delay)
    assert delays == [1, 2, 4, 8, 8, 8]
    assert "worker 1 (pid 4242) exited with code 1 unexpectedly after 2.0 s" in decision.message
    assert "6 times in a row; restarting it in 8 s" in decision.message
    # The other worker's failures are its own.
    supervision.started(1, clock.now)
    assert supervision.exited(1, 7, -signal.SIGKILL, clock.advance(0.5)).delay == 1


def test_a_worker_that_ran_long_enough_starts_its_backoff_over() -> None:
    clock = FakeMonotonic()
    supervision = Supervision(1, Backoff(first=1.0, cap=30.0, stable_after=60.0))
    for expected in (1, 2, 4):
        supervision.started(0, clock.now)
        assert supervision.exited(0, 1, 1, clock.advance(5)).delay == expected
    supervision.started(0, clock.now)
    # Ran 59.9 s: still failing in a row.
    assert supervision.exited(0, 1, 1, clock.advance(59.9)).delay == 8
    supervision.started(0, clock.now)
    decision = supervision.exited(0, 1, -signal.SIGKILL, clock.advance(60.0))
    assert decision.delay == 1
    assert "was killed by SIGKILL unexpectedly after 60.0 s; restarting it in 1 s" in (
        decision.message
    )


def test_a_recycled_worker_is_replaced_at_once_and_its_failures_forgotten() -> None:
    clock = FakeMonotonic()
    supervision = Supervision(1)
    supervision.started(0, clock.now)
    assert supervision.exited(0, 1, 1, clock.advance(1)).delay == 1
    supervision.started(0, clock.now)
    decision = supervision.exited(0, 2, RECYCLE_EXIT, clock.advance(1))
    assert (decision.action, decision.delay) == ("restart", 0.0)
    assert decision.message == "worker 1 (pid 2) recycled; starting its replacement"
    supervision.started(0, clock.now)
    assert supervision.exited(0, 3, 1, clock.advance(1)).delay == 1


def test_a_clean_exit_the_supervisor_did_not_ask_for_is_restarted() -> None:
    supervision = Supervision(1)
    supervision.started(0, 0.0)
    decision = supervision.exited(0, 9, 0, 3.0)
    assert decision.action == "restart"
    assert "exited with code 0 unexpectedly" in decision.message


def test_once_stopping_nothing_restarts_and_only_a_clean_drain_is_clean() -> None:
    supervision = Supervision(3)
    for slot in range(3):
        supervision.started(slot, 0.0)
    supervision.stop()
    drained = supervision.exited(0, 10, 0, 5.0)
    assert (drained.action, drained.clean) == ("done", True)
    assert drained.message == "worker 1 (pid 10) drained and exited"
    # Past its limit while draining: it drained too.
    assert supervision.exited(1, 11, RECYCLE_EXIT, 5.0).clean
    failed = supervision.exited(2, 12, 1, 5.0)
    assert (failed.action, failed.clean) == ("done", False)
    assert "worker 3 (pid 12) exited with code 1: its drain did not end cleanly" in (failed.message)


def test_a_worker_that_cannot_be_started_is_tried_again_with_the_same_backoff() -> None:
    supervision = Supervision(1, Backoff(first=1.0, cap=30.0))
    assert [supervision.could_not_start(0) for _ in range(3)] == [1, 2, 4]
    supervision.started(0, 0.0)
    assert supervision.exited(0, 5, 1, 1.0).delay == 8


def test_describe_status() -> None:
    assert describe_status(2) == "exited with code 2"
    assert describe_status(-signal.SIGTERM) == "was killed by SIGTERM"
    assert describe_status(-200) == "was killed by signal 200"


# -- recycling ---------------------------------------------------------------------------------
def finished() -> events.Event:
    return events.Event(events.RUN_FINISHED, {"queue": "q", "kind": "k", "outcome": "completed"})


def test_the_watch_fires_once_at_the_run_that_reaches_the_job_limit() -> None:
    reasons: list[str] = []
    watch = RecycleWatch(RecycleLimits(max_jobs=3), reasons.append, memory=lambda: 0)
    for _ in range(2):
        watch(finished())
    assert reasons == []
    watch(finished())
    assert reasons == ["3 job(s) (--max-jobs-per-process 3)"]
    for _ in range(5):
        watch(finished())
    assert len(reasons) == 1


def test_the_watch_fires_when_memory_passes_its_limit() -> None:
    used = [100 * MIB]
    reasons: list[str] = []
    watch = RecycleWatch(RecycleLimits(max_memory_mib=200), reasons.append, memory=lambda: used[0])
    watch(finished())
    used[0] = 200 * MIB  # at the limit, not past it
    watch(finished())
    assert reasons == []
    used[0] = 250 * MIB
    watch(finished())
    assert reasons == ["250 MiB of memory (--max-memory-per-process 200)"]


def test_the_watch_ignores_other_events_and_unknown_memory() -> None:
    reasons: list[str] = []
    watch = RecycleWatch(RecycleLimits(max_memory_mib=1), reasons.append, memory=lambda: None)
    watch(events.Event(events.RUN_STARTED, {}))
    watch(finished())
    assert reasons == [] and watch.finished == 1


def test_limits_describe_themselves() -> None:
    assert not RecycleLimits().any
    assert RecycleLimits(max_jobs=5, max_memory_mib=512).describe() == (
        "after 5 job(s) or past 512 MiB of memory"
    )


@pytest.mark.parametrize(
    ("options", "tail"),
    [
        ({}, []),
        (
            {"queues": ["a", "b"], "concurrency": 3, "max_jobs_per_process": 100},
            ["--queue", "a", "--queue", "b", "--concurrency", "3", "--max-jobs-per-process", "100"],
        ),
        ({"gc_threshold": 0}, ["--gc-threshold", "0"]),
        (
            {"log_level": "DEBUG", "verbosity": 2, "settings": "proj.settings", "traceback": True},
            [
                *("--log-level", "DEBUG", "--verbosity", "2"),
                *("--settings", "proj.settings", "--traceback"),
            ],
        ),
    ],
)
def test_a_worker_gets_the_supervisors_options_but_not_its_own(
    options: dict[str, object], tail: list[str]
) -> None:
    options = {**options, "processes": 4, "metrics_port": 9100, "metrics_addr": "0.0.0.0"}
    argv = worker_argv(options, 1)
    assert argv[1:7] == ["-m", "django", "runjobs", "--supervised", "2", "--skip-checks"]
    assert argv[7:] == tail


def test_a_supervisors_drain_request_and_a_direct_signal_drain_once() -> None:
    # A service manager that signals every process of the service reaches a worker directly
    # and through its supervisor: that is one drain, not a drain and a give-back.
    from anole_jobs.worker.process import Signals

    signals = Signals()
    signals.request_drain("SIGTERM (from the supervisor)")
    signals._on_signal(signal.SIGTERM, None)
    assert (signals.received, signals.count, signals.first) == (
        True,
        1,
        "SIGTERM (from the supervisor)",
    )
    assert signals._aborting is None
    signals.wait()  # returns at once: the drain was asked for
    other = Signals()
    other._on_signal(signal.SIGINT, None)
    other.request_drain("SIGTERM (from the supervisor)")
    assert (other.count, other.first) == (1, "SIGINT")


def test_a_recycle_wakes_the_main_thread_without_asking_for_a_drain() -> None:
    from anole_jobs.worker.process import Signals

    signals = Signals()
    signals.recycle("3 job(s) (--max-jobs-per-process 3)")
    signals.wait()
    assert not signals.received and signals.recycling == "3 job(s) (--max-jobs-per-process 3)"


# -- the supervisor's loop, with stand-in workers ------------------------------------------------
#: A stand-in worker that drains when its supervisor asks (and says how it was asked).
DRAINS = (
    "import sys\n"
    "line = sys.stdin.readline()\n"
    "sys.exit(0 if line.startswith('drain SIGTERM') else 9)\n"
)


@pytest.mark.parametrize(
    ("first_exit", "logged"),
    [
        (RECYCLE_EXIT, "worker 1 (pid {pid}) recycled; starting its replacement"),
        (1, "worker 1 (pid {pid}) exited with code 1 unexpectedly after"),
    ],
)
def test_the_supervisor_replaces_a_worker_then_drains_on_sigterm(
    caplog: pytest.LogCaptureFixture, first_exit: int, logged: str
) -> None:
    import os
    import sys

    from anole_jobs.worker.supervisor import Supervisor

    calls: list[int] = []

    def command(slot: int) -> list[str]:
        calls.append(slot)
        if len(calls) == 1:
            return [sys.executable, "-c", f"raise SystemExit({first_exit})"]
        # The replacement: once it runs, the supervisor gets its SIGTERM.
        os.kill(os.getpid(), signal.SIGTERM)
        return [sys.executable, "-c", DRAINS]

    saved = {signum: signal.getsignal(signum) for signum in (signal.SIGTERM, signal.SIGINT)}
    exited: list[int] = []
    supervisor = Supervisor(command, 1, backoff=Backoff(first=0.01), on_exit=exited.append)
    caplog.set_level("INFO", logger="anole_jobs.supervisor")
    try:
        status = supervisor.run()
    finally:
        for signum, handler in saved.items():
            signal.signal(signum, handler)
    assert status == 0
    assert calls == [0, 0]
    assert len(exited) == 2  # each exit reported (metrics drop the process's gauges)
    text = caplog.text
    assert logged.format(pid=exited[0]) in text
    assert "SIGTERM received; asking 1 worker(s) to drain" in text
    assert f"worker 1 (pid {exited[1]}) drained and exited" in text
    assert "every worker stopped; exiting 0" in text


def test_the_supervisor_waits_on_a_descriptor_numbered_past_1024() -> None:
    """A process with many open files hands the supervisor's wake-up pipe a high descriptor
    number; `select()` refuses those (it did in the whole suite's process), `poll()` not."""
    import os
    import resource

    from anole_jobs.worker.supervisor import Supervisor

    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard != resource.RLIM_INFINITY and hard <= 1100:
        pytest.skip(f"this process may open only {hard} files")
    if soft <= 1100:
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, 4096), hard))
    supervisor = Supervisor(lambda slot: [], 1, backoff=Backoff(first=0.01))
    high = 1100
    try:
        os.dup2(supervisor._wake_read, high)
        os.close(supervisor._wake_read)
        supervisor._wake_read = high
        supervisor._wait(0.001)  # nothing written: returns after the timeout
        os.write(supervisor._wake_write, b"x")
        supervisor._wait(None)  # returns at once: the write woke it, and it drained the pipe
        with pytest.raises(BlockingIOError):
            os.read(high, 1)
    finally:
        os.close(high)
        os.close(supervisor._wake_write)
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))


def test_the_supervisor_gives_back_the_wakeup_descriptor_it_borrowed() -> None:
    """The supervisor has the interpreter's C-level signal handler write to its pipe (a
    signal landing just before poll() blocks still wakes it), and puts back what was there
    once it returns."""
    import os
    import sys

    from anole_jobs.worker.supervisor import Supervisor

    seen: list[int] = []

    def command(slot: int) -> list[str]:
        seen.append(signal.set_wakeup_fd(-1))
        signal.set_wakeup_fd(seen[-1])
        os.kill(os.getpid(), signal.SIGTERM)  # the supervisor then asks it to drain
        return [sys.executable, "-c", DRAINS]

    saved = {signum: signal.getsignal(signum) for signum in (signal.SIGTERM, signal.SIGINT)}
    read, write = os.pipe()
    os.set_blocking(write, False)
    previous = signal.set_wakeup_fd(write)
    supervisor = Supervisor(command, 1, backoff=Backoff(first=0.01))
    try:
        assert supervisor.run() == 0
        assert seen == [supervisor._wake_write]
        assert signal.set_wakeup_fd(previous) == write
    finally:
        signal.set_wakeup_fd(previous)
        for signum, handler in saved.items():
            signal.signal(signum, handler)
        os.close(read)
        os.close(write)
