"""A handler that raises a `BaseException` anole_jobs does not own (`sys.exit`, `exit()`,
`KeyboardInterrupt`, `GeneratorExit`, a user's own subclass) fails its attempt like an error,
through `jobs.step()` on every store: the error's type, message and traceback are stored, the
kind's backoff schedules the next attempt (dead once attempts run out), the job after it runs,
and the step returns. A real SIGINT during a step still stops it, unless the process ignores
SIGINT or its own SIGINT handler only takes note of it.
"""

from __future__ import annotations

import signal
from collections.abc import Callable, Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from tests.sampleapp.e2e_jobs import (
    Noop,
    RaiseBase,
    RaiseBaseAsync,
    SigintSelf,
    SigintSelfAsync,
)

#: what the handler raises -> (the stored error type, its message)
RAISED = {
    "sys.exit": ("SystemExit", "1"),
    "exit": ("SystemExit", "3"),
    "KeyboardInterrupt": ("KeyboardInterrupt", "from the handler"),
    "GeneratorExit": ("GeneratorExit", "from the handler"),
    "custom": ("tests.sampleapp.e2e_jobs.HandlerStop", "custom stop"),
}
STYLES = {"sync": RaiseBase, "async": RaiseBaseAsync}


@pytest.mark.parametrize("style", list(STYLES))
@pytest.mark.parametrize("what", list(RAISED))
def test_a_handler_raising_a_base_exception_fails_its_attempt_and_the_next_job_runs(
    env, what: str, style: str
) -> None:
    error_type, message = RAISED[what]
    raising = env.jobs.enqueue(STYLES[style](what=what)).id
    after = env.jobs.enqueue(Noop()).id

    outcomes = env.jobs.step().outcomes()

    assert outcomes == {raising: "retried", after: "completed"}
    record = env.jobs.get(raising)
    assert (record.state, record.attempt) == ("retrying", 1)
    (error,) = record.errors
    assert (error["type"], error["message"], error["attempt"]) == (error_type, message, 1)
    # The traceback is the handler's own code, ending with the exception.
    assert "_raise_base" in error["traceback"]
    assert error["traceback"].rstrip().splitlines()[-1].startswith(error_type)
    assert env.jobs.get(after).state == "completed"

    # The kind's backoff brought it back; its last attempt (attempts=2) makes it dead.
    env.clock.advance(timedelta(hours=1))
    assert env.jobs.step().outcomes() == {raising: "dead"}
    record = env.jobs.get(raising)
    assert (record.state, record.attempt) == ("dead", 2)
    assert [(e["type"], e["attempt"]) for e in record.errors] == [(error_type, 1), (error_type, 2)]


@pytest.fixture
def sigint_handler() -> Iterator[Callable[[Any], None]]:
    """Sets this process's SIGINT handler for the test, and puts the one before back after.

    The tests below must not depend on how the test run was started: a program a shell starts
    in the background (`pytest ... &` in a script) starts with SIGINT ignored, and Python keeps
    it ignored instead of installing its own handler that raises `KeyboardInterrupt`."""
    before = signal.getsignal(signal.SIGINT)

    def install(handler: Any) -> None:
        signal.signal(signal.SIGINT, handler)

    yield install
    signal.signal(signal.SIGINT, before)


class StopRequested(Exception):
    """What a program's own SIGINT handler raises in the tests below."""


def raise_stop_requested(signum: int, frame: object) -> None:
    raise StopRequested("Ctrl-C")


@pytest.mark.parametrize("kind", [SigintSelf, SigintSelfAsync], ids=["sync", "async"])
@pytest.mark.parametrize(
    ("handler", "raised"),
    [(signal.default_int_handler, KeyboardInterrupt), (raise_stop_requested, StopRequested)],
    ids=["python-handler", "own-raising-handler"],
)
def test_a_real_sigint_during_a_step_stops_it_and_gives_its_jobs_back(
    env, sigint_handler, handler: Any, raised: type[BaseException], kind: type, tmp_path: Path
) -> None:
    # The handler signals its own process: the KeyboardInterrupt is Python's answer to a
    # SIGINT (Ctrl-C on a loop of steps), not the handler's, so the step stops; a program's
    # own SIGINT handler that raises stops it alike, with its own exception.
    sigint_handler(handler)
    interrupted = env.jobs.enqueue(kind(marker=str(tmp_path))).id
    not_run = env.jobs.enqueue(Noop(marker=str(tmp_path))).id

    with pytest.raises(raised):
        env.jobs.step()

    assert (tmp_path / f"{interrupted}.1.started").exists()
    assert not (tmp_path / f"{interrupted}.1.finished").exists()
    assert not (tmp_path / f"{not_run}.1.started").exists()
    # Neither is left running: both are back, their attempt not counted, no error recorded.
    for job_id in (interrupted, not_run):
        record = env.jobs.get(job_id)
        assert (record.state, record.attempt, list(record.errors)) == ("available", 0, []), job_id
    assert signal.getsignal(signal.SIGINT) is handler


@pytest.mark.parametrize("kind", [SigintSelf, SigintSelfAsync], ids=["sync", "async"])
@pytest.mark.parametrize("ignored", [True, False], ids=["ignored", "own-noting-handler"])
def test_a_sigint_that_raises_nothing_lets_the_step_run_on(
    env, sigint_handler, ignored: bool, kind: type, tmp_path: Path
) -> None:
    # A process that ignores SIGINT, or whose own handler only takes note (to stop its loop of
    # steps after this one, say), has said a SIGINT must not interrupt the running code.
    noted: list[int] = []

    def note(signum: int, frame: object) -> None:
        noted.append(signum)

    handler = signal.SIG_IGN if ignored else note
    sigint_handler(handler)
    signalling = env.jobs.enqueue(kind(marker=str(tmp_path), wait=0.0)).id
    after = env.jobs.enqueue(Noop(marker=str(tmp_path))).id

    assert env.jobs.step().outcomes() == {signalling: "completed", after: "completed"}

    assert (tmp_path / f"{signalling}.1.finished").exists()
    assert noted == ([] if ignored else [signal.SIGINT])
    assert signal.getsignal(signal.SIGINT) is handler
