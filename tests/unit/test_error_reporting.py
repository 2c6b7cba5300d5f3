"""`ERROR_REPORTER` outside the stores (docs/observability.md#error-reporting): the system
check for a bad setting, the ready Sentry reporter recorded by a sentry-sdk transport of the
test's own, and the runtime's slots, where a slow reporter must not hold the fenced write.
"""

from __future__ import annotations

import json
import sys
import threading
from collections.abc import Iterator
from typing import Any

import pytest

from anole_jobs import conf, jobs
from anole_jobs.checks import check_settings
from anole_jobs.reporting import FailureContext
from tests.sampleapp.jobs import AsyncWork, Work
from tests.unit.obs_support import WAIT, Finished, auto  # noqa: F401 - auto: a fixture


# -- the check -------------------------------------------------------------------------------------
async def async_reporter(error: BaseException, context: FailureContext) -> None:
    """Not allowed: the reporter runs in a worker thread with no event loop."""


NOT_CALLABLE = 42


def e015(settings: Any, value: Any) -> list[str]:
    settings.ANOLE_JOBS = {"STORE": "memory", "ERROR_REPORTER": value}
    return [m.msg for m in check_settings() if m.id == "anole_jobs.E015"]


@pytest.mark.parametrize(
    ("value", "says"),
    [
        ("myproject.nowhere.report", "'myproject.nowhere.report' cannot be imported"),
        ("noddedpath", "'noddedpath' cannot be imported"),
        (f"{__name__}.NOT_CALLABLE", "must be a callable(exception, context), got 42"),
        (f"{__name__}.async_reporter", "is async; it must be a plain function"),
        (async_reporter, "is async; it must be a plain function"),
        (42, "must be a dotted path or a callable, got 42"),
    ],
)
def test_a_bad_reporter_is_reported_by_the_check(settings: Any, value: Any, says: str) -> None:
    (message,) = e015(settings, value)
    assert "ANOLE_JOBS['ERROR_REPORTER']" in message and says in message


def test_a_good_reporter_passes_the_check(settings: Any) -> None:
    assert e015(settings, f"{__name__}.plain_reporter") == []
    assert e015(settings, plain_reporter) == []
    assert e015(settings, "anole_jobs.reporting.sentry") == []
    assert e015(settings, None) == []


def plain_reporter(error: BaseException, context: FailureContext) -> None:
    pass


def test_the_sentry_reporter_without_sentry_sdk_is_reported(
    settings: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "sentry_sdk", None)  # `import sentry_sdk` fails
    (message,) = e015(settings, "anole_jobs.reporting.sentry")
    assert "sentry-sdk is not installed" in message and "anole_jobs[sentry]" in message


def test_a_wrong_type_is_a_configuration_error(settings: Any) -> None:
    (problem,) = conf.problems({"STORE": "memory", "ERROR_REPORTER": 42})
    assert problem.id == "anole_jobs.E015"


# -- Sentry ----------------------------------------------------------------------------------------
class Envelopes:
    """Builds a sentry-sdk `Transport` that keeps every envelope instead of sending it."""

    def __init__(self) -> None:
        from sentry_sdk.transport import Transport

        outer = self

        class Keep(Transport):
            def capture_envelope(self, envelope: Any) -> None:
                outer.items.append(envelope)

        self.items: list[Any] = []
        self.transport = Keep()

    def events(self) -> list[dict[str, Any]]:
        return [e.get_event() for e in self.items if e.get_event() is not None]


@pytest.fixture
def sentry(env: Any) -> Iterator[Envelopes]:
    import sentry_sdk
    from sentry_sdk.scrubber import DEFAULT_DENYLIST, EventScrubber

    envelopes = Envelopes()
    # As docs/observability.md sets it up, less the integrations that patch Django for good.
    sentry_sdk.init(
        transport=envelopes.transport,
        default_integrations=False,
        event_scrubber=EventScrubber(denylist=[*DEFAULT_DENYLIST, "args"]),
    )
    env.configure(ERROR_REPORTER="anole_jobs.reporting.sentry")
    try:
        yield envelopes
    finally:
        sentry_sdk.get_client().close()
        sentry_sdk.get_global_scope().set_client(None)


@pytest.mark.parametrize("env", ["memory"], indirect=True)
@pytest.mark.parametrize("handler", ["sync", "async"])
def test_sentry_gets_the_exception_and_the_job_as_tags(
    env: Any, sentry: Envelopes, handler: str
) -> None:
    if handler == "sync":
        job_id = env.jobs.enqueue(Work(action="fail", tag="alice@example.com")).id
        kind, message = "test.work", "failed on attempt 1"
    else:
        job_id = env.jobs.enqueue(AsyncWork(fail=True)).id
        kind, message = "test.async", "async failure"

    assert env.jobs.step().outcomes() == {job_id: "retried"}

    (event,) = sentry.events()
    (exception,) = event["exception"]["values"]
    assert (exception["type"], exception["value"]) == ("ValueError", message)
    assert exception["mechanism"] == {"type": "anole_jobs", "handled": False}
    frames = exception["stacktrace"]["frames"]
    # From the handler down: none of the runtime's frames (their locals hold the arguments).
    assert frames[0]["function"] == ("work" if handler == "sync" else "async_work")
    assert not [f for f in frames if "anole_jobs/worker" in f.get("abs_path", "")]
    assert event["tags"] == {
        "job.kind": kind,
        "job.queue": "default",
        "job.attempt": "1",
        "job.id": str(job_id),
        "job.outcome": "retried",
    }
    job = event["contexts"]["job"]
    assert (job["job_id"], job["kind"], job["attempt"], job["will_retry"]) == (
        job_id,
        kind,
        1,
        True,
    )
    assert job["args_bytes"] > 0
    assert event["transaction"] == kind
    text = json.dumps(event)
    where = text.find("alice@example.com")
    assert where < 0, text[max(0, where - 600) : where + 50]  # the arguments are never sent


@pytest.mark.parametrize("env", ["memory"], indirect=True)
def test_sentry_gets_a_dead_job_once(env: Any, sentry: Envelopes) -> None:
    job_id = env.jobs.enqueue(Work(action="discard")).id

    assert env.jobs.step().outcomes() == {job_id: "dead"}

    (event,) = sentry.events()
    (exception,) = event["exception"]["values"]
    assert (exception["type"], exception["value"]) == ("Discard", "not worth retrying")
    assert event["tags"]["job.outcome"] == "dead"


# -- the runtime -----------------------------------------------------------------------------------
def test_the_runtime_reports_in_the_slot_after_the_write_is_handed_on(auto: Finished) -> None:  # noqa: F811
    entered = threading.Event()
    release = threading.Event()
    calls: list[tuple[str, FailureContext]] = []

    def slow(error: BaseException, context: FailureContext) -> None:
        calls.append((threading.current_thread().name, context))
        entered.set()
        assert release.wait(WAIT), "the test never released the reporter"

    from django.conf import settings

    settings.ANOLE_JOBS = {**settings.ANOLE_JOBS, "ERROR_REPORTER": slow}
    job_id = jobs.enqueue(Work(action="fail")).id
    jobs.start()
    try:
        assert entered.wait(WAIT), "the reporter was never called"
        # The reporter is still blocked, yet the run's end is written and recorded.
        (event,) = auto.wait(1)
        assert event.fields["outcome"] == "retried" and event.fields["saved"] is True
        assert jobs.get(job_id).state == "retrying"
    finally:
        release.set()
    ((thread, context),) = calls
    assert thread.startswith("anole-default-")  # the slot that ran the handler
    assert (context.job_id, context.outcome) == (job_id, "retried")


def test_a_raising_reporter_does_not_kill_its_slot(
    auto: Finished,  # noqa: F811
    caplog: pytest.LogCaptureFixture,
) -> None:
    from django.conf import settings

    def broken(error: BaseException, context: FailureContext) -> None:
        raise RuntimeError("the tracker is down")

    settings.ANOLE_JOBS = {
        **settings.ANOLE_JOBS,
        "ERROR_REPORTER": broken,
        "QUEUES": {"default": {"concurrency": 1, "drain_timeout": 0.2}},
    }
    failing = jobs.enqueue(Work(action="fail")).id
    jobs.start()
    auto.wait(1)
    fine = jobs.enqueue(Work(action="ok")).id  # the one slot must still be alive to run it
    finished = auto.wait(2)

    assert [(e.fields["job_id"], e.fields["outcome"]) for e in finished] == [
        (failing, "retried"),
        (fine, "completed"),
    ]
    lines = [r.getMessage() for r in caplog.records if r.name == "anole_jobs.reporting"]
    assert len(lines) == 1 and "RuntimeError: the tracker is down" in lines[0]
    assert not [r for r in caplog.records if "runtime failed around its handler" in r.getMessage()]
