"""Kinds for the runtime and end-to-end tests (imported at the end of `tests.sampleapp.jobs`).

Handlers that run in a `runjobs` subprocess report what they do by touching marker files in a
directory the test names (`marker`): ``<marker>/<job id>.<attempt>.started`` when the handler
begins and ``.finished`` when it returns, so a test can wait for "the handler is running"
without reading the process's memory. An empty `marker` writes nothing.

The waits inside these handlers are the behaviour under test (a handler that sleeps through
`job.sleep`, one that never reaches a wait); they are not the tests waiting for something.
"""

from __future__ import annotations

import asyncio
import os
import signal
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from django.db import connection

from anole_jobs import Canceled, Debounce, Job, jobs, kind


def touch(marker: str, job: Job, what: str, text: str = "") -> None:
    """Make ``<marker>/<id>.<attempt>.<what>`` holding `text` (nothing if `marker` is empty).

    The file appears whole: it is written under another name and renamed, so a test that sees
    the name never reads it half-written (a plain `write_text` creates it empty first)."""
    if marker:
        name = f"{job.id}.{job.attempt}.{what}"
        partial = Path(marker, f".{name}.{os.getpid()}.partial")
        partial.write_text(text)
        os.replace(partial, Path(marker, name))
        # Also a line on stdout, so a test reading the process's output wakes at once.
        print(f"e2e-marker {name}", flush=True)


@kind("e2e.noop", attempts=3)
@dataclass
class Noop:
    marker: str = ""


@jobs.handler(Noop)
def noop(job: Job, args: Noop) -> None:
    touch(args.marker, job, "started")
    touch(args.marker, job, "finished")


@kind("e2e.block", attempts=5)
@dataclass
class Block:
    """Waits `seconds` in `job.sleep` on attempts up to `blocking_attempts`, then returns."""

    seconds: float = 60.0
    blocking_attempts: int = 1
    marker: str = ""


@jobs.handler(Block)
def block(job: Job, args: Block) -> None:
    touch(args.marker, job, "started")
    if job.attempt <= args.blocking_attempts:
        job.sleep(args.seconds)
    touch(args.marker, job, "finished")


@kind("e2e.busy", attempts=5)
@dataclass
class Busy:
    """A sync handler that never reaches a wait the runtime can cancel (`time.sleep`)."""

    seconds: float = 60.0
    marker: str = ""


@jobs.handler(Busy)
def busy(job: Job, args: Busy) -> None:
    touch(args.marker, job, "started")
    time.sleep(args.seconds)
    touch(args.marker, job, "finished")


@kind("e2e.suicide", attempts=3)
@dataclass
class Suicide:
    """Kills its own worker process on every attempt (kill -9: no drain, no write)."""

    marker: str = ""


@jobs.handler(Suicide)
def suicide(job: Job, args: Suicide) -> None:
    touch(args.marker, job, "started")
    os.kill(os.getpid(), signal.SIGKILL)


@kind("e2e.timeout", attempts=1, timeout=1)
@dataclass
class SleepPastTimeout:
    """Times out (1 s) inside `job.sleep`."""

    seconds: float = 30.0
    marker: str = ""


@jobs.handler(SleepPastTimeout)
def sleep_past_timeout(job: Job, args: SleepPastTimeout) -> None:
    touch(args.marker, job, "started")
    job.sleep(args.seconds)
    touch(args.marker, job, "finished")


@kind("e2e.async_timeout", attempts=1, timeout=1)
@dataclass
class AsyncSleepPastTimeout:
    """An async handler that times out (1 s) while it awaits `asyncio.sleep`."""

    seconds: float = 30.0
    marker: str = ""


@jobs.handler(AsyncSleepPastTimeout)
async def async_sleep_past_timeout(job: Job, args: AsyncSleepPastTimeout) -> None:
    touch(args.marker, job, "started")
    await asyncio.sleep(args.seconds)
    touch(args.marker, job, "finished")


@kind("e2e.async_except_exception", attempts=1, timeout=1)
@dataclass
class AsyncExceptException:
    """An async handler whose `except Exception` must not swallow its cancellation."""

    seconds: float = 30.0
    marker: str = ""


@jobs.handler(AsyncExceptException)
async def async_except_exception(job: Job, args: AsyncExceptException) -> None:
    touch(args.marker, job, "started")
    try:
        await asyncio.sleep(args.seconds)
    except Exception:  # noqa: BLE001 - the point: cancellation is not an Exception
        touch(args.marker, job, "swallowed")
    touch(args.marker, job, "finished")


@kind("e2e.spin", attempts=1, timeout=1)
@dataclass
class SpinPastTimeout:
    """Busy-loops calling only `job.check_cancelled()`; times out after 1 s."""

    seconds: float = 30.0
    marker: str = ""


@jobs.handler(SpinPastTimeout)
def spin_past_timeout(job: Job, args: SpinPastTimeout) -> None:
    touch(args.marker, job, "started")
    give_up = time.monotonic() + args.seconds
    while time.monotonic() < give_up:
        job.check_cancelled()
    touch(args.marker, job, "finished")


@kind("e2e.query_loop", attempts=1, timeout=1)
@dataclass
class QueryPastTimeout:
    """Loops over Django database queries only; the timeout reaches it at the next query."""

    seconds: float = 30.0
    marker: str = ""


@jobs.handler(QueryPastTimeout)
def query_past_timeout(job: Job, args: QueryPastTimeout) -> None:
    touch(args.marker, job, "started")
    give_up = time.monotonic() + args.seconds
    while time.monotonic() < give_up:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
    touch(args.marker, job, "finished")


@kind("e2e.query", attempts=1)
@dataclass
class Query:
    """Makes one Django database query (on the handler's own connection) and returns."""

    marker: str = ""


@jobs.handler(Query)
def query(job: Job, args: Query) -> None:
    touch(args.marker, job, "started")
    with connection.cursor() as cursor:
        cursor.execute("SELECT 1")
    touch(args.marker, job, "finished")


@kind("e2e.swallow", attempts=2, timeout=1)
@dataclass
class SwallowCancel:
    """Catches its `Canceled` (at the 1 s timeout) and returns: recorded completed (it returned)."""

    seconds: float = 30.0
    marker: str = ""


@jobs.handler(SwallowCancel)
def swallow_cancel(job: Job, args: SwallowCancel) -> None:
    touch(args.marker, job, "started")
    try:
        job.sleep(args.seconds)
    except Canceled:
        touch(args.marker, job, "swallowed")
    touch(args.marker, job, "finished")


# -- one handler per way of waiting, for the drain and timeout matrix ----------------------------
#: How a sync handler waits between two steps of its loop (every 50 ms).
SYNC_WAITS = ("sleep", "check", "query", "none")


@dataclass
class WaitArgs:
    """Loop for `seconds`, waiting the way `how` says; on `Canceled`, touch ``canceled`` and
    let it go up (or, with `swallow`, return normally)."""

    how: str = "sleep"
    seconds: float = 60.0
    swallow: bool = False
    marker: str = ""


def _wait_once(job: Job, how: str) -> None:
    if how == "sleep":
        job.sleep(0.05)
    elif how == "check":
        job.check_cancelled()
        time.sleep(0.05)
    elif how == "query":
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
        time.sleep(0.05)
    else:  # "none": never reaches a wait the runtime can cancel
        time.sleep(0.05)


def _wait_loop(job: Job, args: WaitArgs) -> None:
    touch(args.marker, job, "started")
    try:
        give_up = time.monotonic() + args.seconds
        while time.monotonic() < give_up:
            _wait_once(job, args.how)
    except Canceled:
        touch(args.marker, job, "canceled")
        if not args.swallow:
            raise
    touch(args.marker, job, "finished")


async def _await_loop(job: Job, args: WaitArgs) -> None:
    touch(args.marker, job, "started")
    try:
        await asyncio.sleep(args.seconds)
    except asyncio.CancelledError:
        touch(args.marker, job, "canceled")
        if not args.swallow:
            raise
    touch(args.marker, job, "finished")


@kind("e2e.wait", attempts=3)
@dataclass
class Wait(WaitArgs):
    pass


@kind("e2e.wait_async", attempts=3)
@dataclass
class WaitAsync(WaitArgs):
    pass


@kind("e2e.wait_timeout", attempts=1, timeout=1)
@dataclass
class WaitTimeout(WaitArgs):
    pass


@kind("e2e.wait_async_timeout", attempts=1, timeout=1)
@dataclass
class WaitAsyncTimeout(WaitArgs):
    pass


@kind("e2e.wait_quick_timeout", attempts=1, timeout=0.2)
@dataclass
class WaitQuickTimeout(WaitArgs):
    """For `jobs.step()` tests, where each timeout is waited out in the test's own thread."""


@kind("e2e.wait_async_quick_timeout", attempts=1, timeout=0.2)
@dataclass
class WaitAsyncQuickTimeout(WaitArgs):
    pass


@jobs.handler(WaitQuickTimeout)
def wait_quick_timeout(job: Job, args: WaitQuickTimeout) -> None:
    _wait_loop(job, args)


@jobs.handler(WaitAsyncQuickTimeout)
async def wait_async_quick_timeout(job: Job, args: WaitAsyncQuickTimeout) -> None:
    await _await_loop(job, args)


@jobs.handler(Wait)
def wait(job: Job, args: Wait) -> None:
    _wait_loop(job, args)


@jobs.handler(WaitTimeout)
def wait_timeout(job: Job, args: WaitTimeout) -> None:
    _wait_loop(job, args)


@jobs.handler(WaitAsync)
async def wait_async(job: Job, args: WaitAsync) -> None:
    await _await_loop(job, args)


@jobs.handler(WaitAsyncTimeout)
async def wait_async_timeout(job: Job, args: WaitAsyncTimeout) -> None:
    await _await_loop(job, args)


# -- handlers that raise a BaseException (a worker must outlive them) ---------------------------
class HandlerStop(BaseException):  # noqa: N818 - a user's own BaseException, named as users do
    """A user's own `BaseException` subclass."""


def _raise_base(what: str) -> None:
    if what == "sys.exit":
        sys.exit(1)
    if what == "exit":
        exit(3)  # the site builtin a script might call  # noqa: PLR1722
    if what == "KeyboardInterrupt":
        raise KeyboardInterrupt("from the handler")
    if what == "GeneratorExit":
        raise GeneratorExit("from the handler")
    if what == "custom":
        raise HandlerStop("custom stop")
    raise AssertionError(f"unknown what {what!r}")


@dataclass
class RaiseBaseArgs:
    """Raise the `BaseException` `what` names (sys.exit, exit, KeyboardInterrupt,
    GeneratorExit, custom) on every attempt."""

    what: str = "sys.exit"
    marker: str = ""


@kind("e2e.raise_base", attempts=2)
@dataclass
class RaiseBase(RaiseBaseArgs):
    pass


@kind("e2e.raise_base_async", attempts=2)
@dataclass
class RaiseBaseAsync(RaiseBaseArgs):
    pass


@jobs.handler(RaiseBase)
def raise_base(job: Job, args: RaiseBase) -> None:
    touch(args.marker, job, "started")
    _raise_base(args.what)


@jobs.handler(RaiseBaseAsync)
async def raise_base_async(job: Job, args: RaiseBaseAsync) -> None:
    touch(args.marker, job, "started")
    await asyncio.sleep(0)
    _raise_base(args.what)


@kind("e2e.sigint_self", attempts=2)
@dataclass
class SigintSelf:
    """Sends SIGINT to its own process (a real Ctrl-C, as far as the process can tell), then
    waits `wait` seconds in `time.sleep`, which Python's own SIGINT handler interrupts;
    `finished` only if no exception came of the signal."""

    marker: str = ""
    wait: float = 10.0


@kind("e2e.sigint_self_async", attempts=2)
@dataclass
class SigintSelfAsync(SigintSelf):
    pass


@jobs.handler(SigintSelf)
def sigint_self(job: Job, args: SigintSelf) -> None:
    touch(args.marker, job, "started")
    os.kill(os.getpid(), signal.SIGINT)
    time.sleep(args.wait)
    touch(args.marker, job, "finished")


@jobs.handler(SigintSelfAsync)
async def sigint_self_async(job: Job, args: SigintSelfAsync) -> None:
    touch(args.marker, job, "started")
    await asyncio.sleep(0)
    os.kill(os.getpid(), signal.SIGINT)
    # An async handler waits with an await: the process's event loop runs it in a thread of
    # its own, which a signal does not interrupt, so the step cancels this task instead.
    await asyncio.sleep(args.wait)
    touch(args.marker, job, "finished")


@kind("e2e.whoami", attempts=5)
@dataclass
class WhoAmI:
    """Touches ``<id>.<attempt>.pid<PID>`` (which worker process runs it), then waits
    `seconds` in `job.sleep` on attempts up to `blocking_attempts` and returns; with `hold`,
    also holds `hold` MiB of memory for the rest of the process's life."""

    seconds: float = 0.0
    blocking_attempts: int = 1
    hold: int = 0
    marker: str = ""


_held: list[bytearray] = []


@jobs.handler(WhoAmI)
def whoami(job: Job, args: WhoAmI) -> None:
    touch(args.marker, job, f"pid{os.getpid()}")
    touch(args.marker, job, "started")
    if args.hold:
        _held.append(bytearray(b"x" * (args.hold * 1024 * 1024)))
    if job.attempt <= args.blocking_attempts and args.seconds:
        job.sleep(args.seconds)
    touch(args.marker, job, "finished")


@kind("e2e.claim_time", attempts=3)
@dataclass
class ClaimTime:
    """Records its job's claim time: while it runs, the job's `attempted_at` is its claim's
    (the run's write replaces it with the handler's start). For queue-limit tests."""

    marker: str = ""


@jobs.handler(ClaimTime)
def claim_time(job: Job, args: ClaimTime) -> None:
    record = jobs.get(job.id)
    assert record is not None and record.attempted_at is not None
    touch(args.marker, job, "claimed", record.attempted_at.isoformat())


@kind("e2e.debounced", debounce=Debounce(by="key", wait=3))
@dataclass
class Debounced:
    """A burst of these with one `key` runs once, with the last `n`: it writes `n` to its
    marker ``<id>.<attempt>.finished``."""

    key: str = "k"
    n: int = 0
    marker: str = ""


@jobs.handler(Debounced)
def debounced(job: Job, args: Debounced) -> None:
    touch(args.marker, job, "started")
    touch(args.marker, job, "finished", str(args.n))


KINDS = {
    "debounced": Debounced,
    "noop": Noop,
    "claim_time": ClaimTime,
    "block": Block,
    "busy": Busy,
    "suicide": Suicide,
    "timeout": SleepPastTimeout,
    "async_timeout": AsyncSleepPastTimeout,
    "async_except_exception": AsyncExceptException,
    "spin": SpinPastTimeout,
    "query_loop": QueryPastTimeout,
    "query": Query,
    "swallow": SwallowCancel,
    "wait": Wait,
    "wait_async": WaitAsync,
    "wait_timeout": WaitTimeout,
    "wait_async_timeout": WaitAsyncTimeout,
    "raise_base": RaiseBase,
    "raise_base_async": RaiseBaseAsync,
    "whoami": WhoAmI,
}


if os.environ.get("ANOLE_E2E_FLOW"):
    # Kinds of tests/e2e/test_flow.py, only in its processes: a handler for a kind with a
    # sequence makes every claim of the process keep sequences.
    from tests.sampleapp import e2e_flow_jobs  # noqa: F401
