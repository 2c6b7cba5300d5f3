"""What each job's end costs less of, and still says the same: metrics updated once per
written batch (`RUNS_FINISHED`) yet counted exactly per run, the per-job log record made from
a template yet equal to logging's own, and runjobs' formatter writing logging's own text.
"""

from __future__ import annotations

import logging
import threading
from typing import Any

import pytest

from anole_jobs import events, jobs
from anole_jobs.testing import FakeClock
from anole_jobs.worker import logline
from tests.sampleapp.jobs import Work
from tests.unit.obs_support import WAIT, Finished, auto  # noqa: F401 - auto: a fixture

KIND = "test.work"
prometheus_client = pytest.importorskip("prometheus_client")


def _samples(registry: Any) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    return {
        (sample.name, tuple(sorted(sample.labels.items()))): sample.value
        for family in registry.collect()
        for sample in family.samples
        if not sample.name.endswith("_created")
    }


# -- metrics: one update per batch, exact per run -------------------------------------------
def test_a_batch_of_runs_counts_as_each_run_would_one_by_one() -> None:
    from anole_jobs import metrics

    registry = prometheus_client.CollectorRegistry()
    listener = metrics.MetricsListener(registry)
    bus = events.EventBus()
    bus.subscribe(listener)
    for job_id in range(1, 6):
        bus.emit(events.RUN_STARTED, queue="q", kind="k", job_id=job_id, attempt=1)
    # Every bucket's edge, values between, past the last bound, and zero.
    seconds = [*metrics.RUN_SECONDS_BUCKETS, 0.0, 0.007, 0.3, 2000.0, 0.005, 0.0051]
    outcomes = ["completed"] * (len(seconds) - 3) + ["retried", "lost", "completed"]
    saved = [True] * (len(seconds) - 3) + [False, False, False]
    runs = tuple(
        events.FinishedRun("q", "k", index + 1, 1, 3, outcome, took, ok, None)
        for index, (took, outcome, ok) in enumerate(zip(seconds, outcomes, saved, strict=True))
    )
    bus.emit(events.RUNS_FINISHED, runs=runs)

    # The same runs, observed one at a time on a histogram of the same buckets.
    reference = prometheus_client.CollectorRegistry()
    histogram = prometheus_client.Histogram(
        "anole_jobs_run_seconds",
        "",
        ["queue", "kind"],
        buckets=metrics.RUN_SECONDS_BUCKETS,
        registry=reference,
    )
    for took in seconds:
        histogram.labels("q", "k").observe(took)
    mine = {k: v for k, v in _samples(registry).items() if k[0].startswith("anole_jobs_run_s")}
    assert mine == _samples(reference)

    def sample(name: str, **labels: str) -> float | None:
        return registry.get_sample_value(name, labels)

    assert (
        sample("anole_jobs_finished_total", queue="q", kind="k", outcome="completed")
        == len(seconds) - 2
    )
    assert sample("anole_jobs_finished_total", queue="q", kind="k", outcome="retried") == 1
    assert sample("anole_jobs_finished_total", queue="q", kind="k", outcome="lost") == 1
    # Unsaved: the retried run whose write failed and the completed one; `lost` is not.
    assert sample("anole_jobs_outcome_unsaved_total", queue="q", kind="k") == 2
    # Five runs were seen starting: only those come off the gauge.
    assert sample("anole_jobs_running", queue="q") == 0


def test_the_runtime_counts_every_run_of_a_large_batch(auto: Finished) -> None:  # noqa: F811
    from anole_jobs import metrics

    registry = metrics.current_registry()
    assert registry is not None
    labels = {"queue": "default", "kind": KIND}

    def read() -> tuple[float, float]:
        done = registry.get_sample_value(
            "anole_jobs_finished_total", {**labels, "outcome": "completed"}
        )
        timed = registry.get_sample_value("anole_jobs_run_seconds_count", labels)
        return done or 0.0, timed or 0.0

    before = read()
    count = 60
    jobs.enqueue_many([Work() for _ in range(count)])  # before the start: written in batches
    jobs.start()
    auto.wait(count)
    after = read()
    assert (after[0] - before[0], after[1] - before[1]) == (count, count)
    assert registry.get_sample_value("anole_jobs_running", {"queue": "default"}) == 0


@pytest.fixture
def manual(settings: Any, recorder: Any) -> Any:
    settings.ANOLE_JOBS = {"STORE": "memory", "RUN": "manual", "CLOCK": FakeClock()}
    yield
    jobs.reset()


def test_one_batch_event_per_write_comes_before_each_run_finished(manual: Any) -> None:
    seen: list[events.Event] = []
    unsubscribe = events.bus.subscribe(seen.append, events.RUNS_FINISHED, events.RUN_FINISHED)
    try:
        ids = [job.id for job in jobs.enqueue_many([Work(), Work(), Work(action="fail")])]
        jobs.step()
    finally:
        unsubscribe()
    assert [event.name for event in seen] == [events.RUNS_FINISHED] + [events.RUN_FINISHED] * 3
    batch = seen[0]["runs"]
    assert [run.job_id for run in batch] == ids
    assert [run.outcome for run in batch] == ["completed", "completed", "retried"]
    assert [run.error_type for run in batch] == [None, None, "ValueError"]
    # Each run's own event carries exactly the fields of its entry in the batch.
    assert [event.fields for event in seen[1:]] == [run._asdict() for run in batch]


def test_nobody_listening_to_run_finished_builds_none(manual: Any, monkeypatch: Any) -> None:
    built: list[str] = []
    real = events.Event

    def counting(name: str, fields: dict[str, Any]) -> events.Event:
        built.append(name)
        return real(name, fields)

    monkeypatch.setattr(events, "Event", counting)
    unsubscribe = events.bus.subscribe(lambda event: None, events.RUNS_FINISHED)
    try:
        jobs.enqueue_many([Work(), Work()])
        jobs.step()
    finally:
        unsubscribe()
    assert events.RUN_FINISHED not in built
    assert built.count(events.RUNS_FINISHED) == 1


# -- the log record and runjobs' formatter --------------------------------------------------
TIMES = ("created", "msecs", "relativeCreated")


def test_the_per_job_record_is_the_one_logging_would_make() -> None:
    logger = logging.getLogger("anole_jobs.worker")
    fields = {"job_id": 7, "kind": "k", "outcome": "completed", "error_type": None}
    for level in (logging.INFO, logging.WARNING, logging.INFO):  # a template reused too
        ours = logline.make_record(logger, level, "job 7 k: completed", __file__, fields)
        theirs = logger.makeRecord(
            logger.name, level, __file__, 0, "job 7 k: completed", (), None, "record", fields
        )
        assert type(ours) is type(theirs)
        strip = {k: v for k, v in theirs.__dict__.items() if k not in TIMES}
        assert {k: v for k, v in ours.__dict__.items() if k not in TIMES} == strip
        assert abs(ours.created - theirs.created) < 1.0
        assert ours.msecs == pytest.approx((ours.created % 1) * 1000, abs=1.0)
        assert ours.getMessage() == "job 7 k: completed"


def test_a_record_made_in_another_thread_names_that_thread() -> None:
    logger = logging.getLogger("anole_jobs.worker")
    made: list[logging.LogRecord] = []
    thread = threading.Thread(
        target=lambda: made.append(logline.make_record(logger, logging.INFO, "x", __file__, {})),
        name="another-thread",
    )
    thread.start()
    thread.join(WAIT)
    assert (made[0].threadName, made[0].thread) == ("another-thread", thread.ident)


def test_a_custom_record_factory_still_makes_the_record() -> None:
    logger = logging.getLogger("anole_jobs.worker")
    original = logging.getLogRecordFactory()

    def factory(*args: Any, **kwargs: Any) -> logging.LogRecord:
        record = original(*args, **kwargs)
        record.tenant = "acme"
        return record

    logging.setLogRecordFactory(factory)
    try:
        record = logline.make_record(logger, logging.INFO, "x", __file__, {"job_id": 1})
    finally:
        logging.setLogRecordFactory(original)
    assert (record.tenant, record.job_id) == ("acme", 1)  # type: ignore[attr-defined]


def test_runjobs_formatter_writes_what_logging_formatter_writes() -> None:
    pattern = "%(asctime)s %(levelname)s %(name)s [worker 2]: %(message)s"
    ours, theirs = logline.LineFormatter(pattern), logging.Formatter(pattern)
    record = logging.LogRecord("anole_jobs.worker", logging.INFO, __file__, 0, "m", (), None)
    # Across seconds, back and forth, and within one second at different milliseconds.
    for created in (1_800_000_000.001, 1_800_000_000.999, 1_800_000_001.5, 1_800_000_000.25):
        record.created, record.msecs = created, int((created % 1) * 1000) + 0.0
        assert ours.format(record) == theirs.format(record)
    dated = logline.LineFormatter(pattern, datefmt="%H:%M")
    assert dated.format(record) == logging.Formatter(pattern, datefmt="%H:%M").format(record)


def test_a_record_follows_loggings_switches_set_later(monkeypatch: Any) -> None:
    logger = logging.getLogger("anole_jobs.worker")
    logline.make_record(logger, logging.INFO, "x", __file__, {})  # a template with threads
    monkeypatch.setattr(logging, "logThreads", False)
    monkeypatch.setattr(logging, "logProcesses", False)
    record = logline.make_record(logger, logging.INFO, "x", __file__, {})
    assert (record.thread, record.threadName, record.process) == (None, None, None)
