"""Prometheus metrics (docs/observability.md): read from the registry they live in after real
runs — prometheus-client's default `REGISTRY` unless ``METRICS_REGISTRY="private"``.

The registry is process-wide, so every assertion is on the change a test made (`Delta`).
"""

from __future__ import annotations

import threading
from datetime import timedelta
from typing import Any

from django.core import checks
from django.test import RequestFactory

from anole_jobs import NewQueue, events, jobs, metrics, views
from anole_jobs.maintenance.duties import Leadership
from anole_jobs.maintenance.loop import MaintenanceLoop
from anole_jobs.unique import Unique
from tests.sampleapp.jobs import CustomBackoff, Work
from tests.unit.obs_support import WAIT, Finished, auto, hook  # noqa: F401 - auto: a fixture

KIND = "test.work"


def registry() -> Any:
    """Where the metrics live for the current settings (the default one when they are off)."""
    from prometheus_client import REGISTRY

    return metrics.current_registry() or REGISTRY


def value(metric: str, /, **labels: str) -> float:
    return registry().get_sample_value(metric, labels) or 0.0


class Delta:
    """The change of each sample since the test started."""

    def __init__(self) -> None:
        self.before = self._samples()

    @staticmethod
    def _samples() -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
        return {
            (sample.name, tuple(sorted(sample.labels.items()))): sample.value
            for family in registry().collect()
            for sample in family.samples
        }

    def __call__(self, metric: str, /, **labels: str) -> float:
        key = (metric, tuple(sorted(labels.items())))
        return self._samples().get(key, 0.0) - self.before.get(key, 0.0)


def test_each_outcome_is_counted_by_queue_kind_and_outcome(env: Any) -> None:
    delta = Delta()

    def lose_it(job: Any, args: Any) -> None:
        jobs.cancel(job.id)  # the fenced write of this run then fails: lost

    outcomes = {
        "completed": Work(action="ok"),
        "retried": Work(action="fail"),
        "dead": Work(action="discard"),
        "snoozed": Work(action="snooze", seconds=60),
        "lost": Work(action=hook(lose_it)),
    }
    for args in outcomes.values():
        jobs.enqueue(args)
    report = jobs.step()
    assert sorted(run.outcome for run in report.runs) == sorted(outcomes)
    for outcome in outcomes:
        assert delta("anole_jobs_finished_total", queue="default", kind=KIND, outcome=outcome) == 1
    assert delta("anole_jobs_enqueued_total", queue="default", kind=KIND) == 5
    assert delta("anole_jobs_run_seconds_count", queue="default", kind=KIND) == 5
    assert delta("anole_jobs_run_seconds_bucket", queue="default", kind=KIND, le="+Inf") == 5
    assert delta("anole_jobs_outcome_unsaved_total", queue="default", kind=KIND) == 0


def test_duplicates_are_counted_apart_from_inserts(env: Any) -> None:
    delta = Delta()
    first = jobs.enqueue(Work(tag="once"), unique=Unique())
    second = jobs.enqueue(Work(tag="once"), unique=Unique())
    assert first.inserted and not second.inserted
    assert delta("anole_jobs_enqueued_total", queue="default", kind=KIND) == 1
    assert delta("anole_jobs_duplicates_total", queue="default", kind=KIND) == 1


def test_rescues_are_counted(env: Any) -> None:
    delta = Delta()
    jobs.enqueue(Work())
    now = env.clock()
    (claimed,) = env.store.claim(
        "default", kinds=None, limit=1, now=now, lease_until=now + timedelta(seconds=30), worker="w"
    )
    env.clock.advance(timedelta(seconds=31))
    report = jobs.step()
    assert report.rescued == 1
    assert delta("anole_jobs_rescued_total", queue="default", kind=KIND) == 1


def test_cron_enqueues_are_counted_by_entry_name(env: Any) -> None:
    env.configure(
        CRON=[{"name": "metrics-tick", "schedule": "* * * * *", "job": "tests.sampleapp.jobs.Work"}]
    )
    delta = Delta()
    jobs.step()  # first sight of the entry: history starts now
    env.clock.advance(timedelta(minutes=1))
    report = jobs.step()
    assert report.cron_enqueued == 1
    assert delta("anole_cron_enqueued_total", name="metrics-tick") == 1


def test_the_leader_gauge_follows_leadership_across_two_instances(env: Any) -> None:
    service = jobs.service
    first, second = Leadership(service, "first"), Leadership(service, "second")
    assert first.run_once(env.clock()) is True
    assert value("anole_jobs_leader") == 1
    assert second.run_once(env.clock()) is False
    assert value("anole_jobs_leader") == 1
    first.resign()
    assert value("anole_jobs_leader") == 0
    assert second.run_once(env.clock()) is True
    assert value("anole_jobs_leader") == 1
    second.resign()
    assert value("anole_jobs_leader") == 0


def test_the_leader_refreshes_the_queued_gauge_every_15_seconds_of_clock(env: Any) -> None:
    jobs.enqueue_many([Work() for _ in range(3)])
    jobs.enqueue(Work(), delay=3600)
    loop = MaintenanceLoop(jobs.service, instance="gauge-test", queues=["default"])
    try:
        loop.run_once()  # becomes leader and counts at once
        assert value("anole_jobs_queued", queue="default", state="available") == 3
        assert value("anole_jobs_queued", queue="default", state="scheduled") == 1
        jobs.enqueue(Work())
        env.clock.advance(timedelta(seconds=14))
        loop.run_once()
        assert value("anole_jobs_queued", queue="default", state="available") == 3  # not yet
        env.clock.advance(timedelta(seconds=1))
        loop.run_once()
        assert value("anole_jobs_queued", queue="default", state="available") == 4
        # A state that emptied reads 0, not its last count.
        for record in jobs.list(state="scheduled"):
            jobs.delete(record.id)
        env.clock.advance(timedelta(seconds=15))
        loop.run_once()
        assert value("anole_jobs_queued", queue="default", state="scheduled") == 0
    finally:
        loop.leadership.resign()


def test_step_reports_the_queued_gauge_every_15_seconds_of_clock(env: Any) -> None:
    # Manual mode: the leader phase of jobs.step() counts as the runtime's leader does.
    # A fixed backoff (10 s, then 20 s), not the default's jitter: which retries are due when
    # the gauge counts at 15 s must not depend on chance.
    jobs.enqueue_many([CustomBackoff() for _ in range(2)])
    jobs.enqueue(Work(), delay=3600)
    jobs.enqueue(Work(), queue="mail", delay=3600)
    jobs.step()  # counts first (2 available), then runs both into retrying (due at 10 s)
    assert value("anole_jobs_queued", queue="default", state="available") == 2
    assert value("anole_jobs_queued", queue="default", state="scheduled") == 1
    assert value("anole_jobs_queued", queue="mail", state="scheduled") == 1
    env.clock.advance(timedelta(seconds=14))
    jobs.step()  # runs both again (due at 34 s), but the gauge is not due yet
    assert value("anole_jobs_queued", queue="default", state="available") == 2  # not yet
    env.clock.advance(timedelta(seconds=1))
    jobs.step()
    assert value("anole_jobs_queued", queue="default", state="available") == 0
    assert value("anole_jobs_queued", queue="default", state="retrying") == 2
    assert value("anole_jobs_queued", queue="default", state="scheduled") == 1


def test_the_gauge_reads_waiting_and_running_jobs_of_the_configured_queues(env: Any) -> None:
    jobs.enqueue_many([Work() for _ in range(3)])
    jobs.enqueue(Work(), delay=60)
    jobs.enqueue(Work(), queue=NewQueue("nobody-runs-this"))
    jobs.enqueue(Work(), queue="mail")
    jobs.step()  # default and mail run: completed, not counted
    jobs.enqueue_many([Work(), Work()])
    jobs.enqueue(Work(action="fail"))
    jobs.step()  # the failing one is now retrying
    jobs.enqueue(Work())
    now = env.clock()
    env.store.claim(
        "default", kinds=None, limit=1, now=now, lease_until=now + timedelta(seconds=30), worker="w"
    )
    queued = env.store.queued_counts(["default", "mail"])
    assert queued == {"default": {"scheduled": 1, "retrying": 1, "running": 1}}
    # The same numbers as the full counts, restricted to live states and the asked queues.
    full = env.store.counts()
    assert full["default"]["completed"] == 5
    assert full["nobody-runs-this"] == {"available": 1}
    assert env.store.queued_counts([]) == {}


def test_a_follower_does_not_count(env: Any) -> None:
    leader = Leadership(jobs.service, "someone-else")
    assert leader.run_once(env.clock())
    seen: list[events.Event] = []
    unsubscribe = events.bus.subscribe(seen.append)
    loop = MaintenanceLoop(jobs.service, instance="follower", queues=["default"])
    try:
        loop.run_once()
    finally:
        unsubscribe()
        leader.resign()
    assert not [e for e in seen if e.name == events.QUEUED_GAUGE]


def test_metrics_off_subscribes_nothing(env: Any) -> None:
    env.configure(METRICS=False)
    delta = Delta()
    jobs.enqueue(Work())
    jobs.step()
    assert delta("anole_jobs_enqueued_total", queue="default", kind=KIND) == 0
    assert delta("anole_jobs_finished_total", queue="default", kind=KIND, outcome="completed") == 0
    # The metrics subscribe each of their handlers (bound methods of their listener).
    assert not any(
        isinstance(getattr(listener, "__self__", listener), metrics.MetricsListener)
        for listener in events.bus.listeners
    )


# -- the label cap ---------------------------------------------------------------------------
def test_kind_and_name_labels_take_256_values_then_read_other() -> None:
    from prometheus_client import CollectorRegistry

    registry = CollectorRegistry()
    listener = metrics.MetricsListener(registry)
    bus = events.EventBus()
    bus.subscribe(listener)
    for index in range(metrics.LABEL_CAP + 2):
        bus.emit(events.ENQUEUED, queue="q", kind=f"kind-{index}", inserted=True)
        bus.emit(events.CRON_ENQUEUED, name=f"entry-{index}", job_id=index)

    def sample(metric: str, /, **labels: str) -> float | None:
        return registry.get_sample_value(metric, labels)

    assert sample("anole_jobs_enqueued_total", queue="q", kind="kind-255") == 1
    assert sample("anole_jobs_enqueued_total", queue="q", kind="kind-256") is None
    assert sample("anole_jobs_enqueued_total", queue="q", kind="other") == 2
    assert sample("anole_cron_enqueued_total", name="entry-255") == 1
    assert sample("anole_cron_enqueued_total", name="other") == 2
    # The cap is per label name, shared by every metric: a new kind's runs read `other` too,
    # while a kind seen before the cap keeps its name.
    for kind in ("kind-0", "never-seen"):
        bus.emit(
            events.RUNS_FINISHED,
            runs=(events.FinishedRun("q", kind, 1, 1, 3, "completed", 0.1, False, None),),
        )
    assert sample("anole_jobs_finished_total", queue="q", kind="kind-0", outcome="completed") == 1
    assert sample("anole_jobs_finished_total", queue="q", kind="other", outcome="completed") == 1
    assert sample("anole_jobs_outcome_unsaved_total", queue="q", kind="other") == 1


def test_the_running_gauge_never_goes_below_zero() -> None:
    from prometheus_client import CollectorRegistry

    registry = CollectorRegistry()
    bus = events.EventBus()
    bus.subscribe(metrics.MetricsListener(registry))
    fields = {"queue": "q", "kind": "k", "job_id": 7, "attempt": 1}
    bus.emit(events.RUN_STARTED, **fields)
    assert registry.get_sample_value("anole_jobs_running", {"queue": "q"}) == 1
    finished = events.FinishedRun("q", "k", 7, 1, 3, "completed", 0.0, True, None)
    bus.emit(events.RUNS_FINISHED, runs=(finished,))
    bus.emit(events.RUNS_FINISHED, runs=(finished,))  # seen twice, or never seen starting
    assert registry.get_sample_value("anole_jobs_running", {"queue": "q"}) == 0


def test_observe_subscribes_each_handler_to_its_event_and_undoes_them_all(
    env: Any, monkeypatch: Any
) -> None:
    from prometheus_client import CollectorRegistry

    registry = CollectorRegistry()
    listener = metrics.MetricsListener(registry)
    monkeypatch.setattr(metrics, "listener_for", lambda settings: listener)
    bus = events.EventBus()
    unsubscribe = metrics.observe(bus, jobs.service.settings)
    assert set(bus.by_name) == set(listener._handlers)
    assert all(len(handlers) == 1 for handlers in bus.by_name.values())
    bus.emit(events.RUN_STARTED, queue="q", kind="k", job_id=1, attempt=1)
    bus.emit(events.RUN_STARTED, queue="q", kind="k", job_id=2, attempt=1)
    assert registry.get_sample_value("anole_jobs_running", {"queue": "q"}) == 2
    finished = events.FinishedRun("q", "k", 1, 1, 3, "completed", 0.002, True, None)
    bus.emit(events.RUNS_FINISHED, runs=(finished,))
    assert registry.get_sample_value("anole_jobs_running", {"queue": "q"}) == 1
    unsubscribe()
    assert bus.by_name == {}
    bus.emit(events.RUN_STARTED, queue="q", kind="k", job_id=3, attempt=1)
    assert registry.get_sample_value("anole_jobs_running", {"queue": "q"}) == 1


def test_the_running_gauge_adds_through_a_client_without_the_value_it_reads() -> None:
    calls: list[float] = []

    class Child:  # another client version: no `_value` to add to
        def inc(self, amount: float = 1) -> None:
            calls.append(amount)

    metrics._incrementer(Child())(1)
    assert calls == [1]


# -- the runtime (RUN="auto"): running and interrupted ---------------------------------------
def test_running_counts_runs_in_progress_and_a_drain_counts_interrupted(
    auto: Finished,  # noqa: F811 - the fixture
) -> None:
    delta = Delta()
    started = threading.Event()
    seen_running: list[float] = []

    def blocks(job: Any, args: Any) -> None:
        seen_running.append(delta("anole_jobs_running", queue="default"))
        started.set()
        job.sleep(WAIT)  # the drain's cancel reaches it here

    jobs.enqueue(Work(action=hook(blocks)))
    jobs.start()
    assert started.wait(WAIT), "the handler never started"
    assert seen_running == [1]
    jobs.stop(drain=True)
    assert [e["outcome"] for e in auto.wait(1)] == ["interrupted"]
    assert delta("anole_jobs_running", queue="default") == 0
    assert (
        delta("anole_jobs_finished_total", queue="default", kind=KIND, outcome="interrupted") == 1
    )


# -- exposition ------------------------------------------------------------------------------
def test_the_view_serves_the_text_exposition(env: Any) -> None:
    jobs.enqueue(Work())
    response = views.metrics(RequestFactory().get("/metrics"))
    assert response.status_code == 200
    assert response["Content-Type"].startswith("text/plain")
    body = response.content.decode()
    assert 'anole_jobs_enqueued_total{kind="test.work",queue="default"}' in body
    assert "# TYPE anole_jobs_run_seconds histogram" in body


def test_without_prometheus_client_the_view_says_what_to_install(monkeypatch: Any) -> None:
    monkeypatch.setattr(metrics, "prometheus_client", None)
    response = views.metrics(RequestFactory().get("/metrics"))
    assert response.status_code == 503
    assert b"anole_jobs[metrics]" in response.content


# -- without prometheus-client ---------------------------------------------------------------
def _metrics_checks() -> list[checks.CheckMessage]:
    return [m for m in checks.run_checks(tags=["anole_jobs"]) if m.id == "anole_jobs.E013"]


def test_metrics_true_without_prometheus_client_is_a_check_error(
    settings: Any, monkeypatch: Any
) -> None:
    monkeypatch.setattr(metrics, "prometheus_client", None)
    settings.ANOLE_JOBS = {"STORE": "memory", "RUN": "manual", "METRICS": True}
    (error,) = _metrics_checks()
    assert "prometheus-client is not installed" in error.msg
    assert "anole_jobs[metrics]" in error.hint
    # Left at its default, metrics are simply off: no error.
    settings.ANOLE_JOBS = {"STORE": "memory", "RUN": "manual"}
    assert _metrics_checks() == []
    monkeypatch.undo()
    settings.ANOLE_JOBS = {"STORE": "memory", "RUN": "manual", "METRICS": True}
    assert _metrics_checks() == []


# -- which registry ---------------------------------------------------------------------------
def test_by_default_the_metrics_are_in_prometheus_clients_registry(env: Any) -> None:
    from prometheus_client import REGISTRY, generate_latest

    assert metrics.current_registry() is REGISTRY
    delta = Delta()
    jobs.enqueue(Work())
    assert delta("anole_jobs_enqueued_total", queue="default", kind=KIND) == 1
    # prometheus-client's own exposition of its default registry, as a project's /metrics
    # serves it (generate_latest() with no argument reads REGISTRY).
    body = generate_latest().decode()
    assert 'anole_jobs_enqueued_total{kind="test.work",queue="default"}' in body
    assert "# TYPE anole_jobs_run_seconds histogram" in body


def test_a_private_registry_keeps_them_apart(env: Any) -> None:
    from prometheus_client import REGISTRY

    env.configure(METRICS_REGISTRY="private")
    private = metrics.current_registry()
    assert private is metrics.private_registry() and private is not REGISTRY
    key = {"queue": "default", "kind": KIND}
    before_private = private.get_sample_value("anole_jobs_enqueued_total", key) or 0.0
    before_default = REGISTRY.get_sample_value("anole_jobs_enqueued_total", key) or 0.0
    jobs.enqueue(Work())
    assert private.get_sample_value("anole_jobs_enqueued_total", key) == before_private + 1
    assert (REGISTRY.get_sample_value("anole_jobs_enqueued_total", key) or 0.0) == before_default
    # The view (and runjobs --metrics-port) serve the registry the metrics live in.
    body = views.metrics(RequestFactory().get("/metrics")).content.decode()
    assert (
        f'anole_jobs_enqueued_total{{kind="test.work",queue="default"}} {before_private + 1}'
        in (body)
    )
    assert "python_info" not in body  # prometheus-client's default collectors stay out


def test_registering_again_is_idempotent(env: Any) -> None:
    # Tests and projects reconfigure settings: each registry gets its metrics once.
    default = metrics.listener_for(jobs.service.settings)
    env.configure(METRICS_REGISTRY="private")
    private = metrics.listener_for(jobs.service.settings)
    env.configure(METRICS_REGISTRY="default")
    assert metrics.listener_for(jobs.service.settings) is default
    env.configure(METRICS_REGISTRY="private")
    assert metrics.listener_for(jobs.service.settings) is private
    assert default is not None and private is not None and default is not private


def test_metrics_an_earlier_import_registered_are_replaced() -> None:
    from prometheus_client import CollectorRegistry

    registry = CollectorRegistry()
    metrics.MetricsListener(registry)
    metrics._drop_stale(registry)  # what listener_for does before registering
    fresh = metrics.MetricsListener(registry)  # no "Duplicated timeseries" error
    fresh.enqueued.labels("q", "k").inc()
    assert registry.get_sample_value("anole_jobs_enqueued_total", {"queue": "q", "kind": "k"}) == 1


def test_a_bad_metrics_registry_is_a_check_error(settings: Any) -> None:
    settings.ANOLE_JOBS = {"STORE": "memory", "RUN": "manual", "METRICS_REGISTRY": "mine"}
    errors = [m for m in checks.run_checks(tags=["anole_jobs"]) if m.id == "anole_jobs.E007"]
    assert [e.msg for e in errors] == [
        "ANOLE_JOBS['METRICS_REGISTRY'] must be one of 'default', 'private', got 'mine'"
    ]


FRESH_PROCESS = """
import json, django
django.setup()
import prometheus_client
print(json.dumps(sorted(
    family.name for family in prometheus_client.REGISTRY.collect()
    if family.name.startswith(("anole_jobs_", "anole_cron_"))
)))
print(prometheus_client.generate_latest().decode())
"""


def test_a_fresh_process_with_default_settings_has_them_in_the_default_registry(
    tmp_path: Any,
) -> None:
    import json
    import os
    import subprocess
    import sys

    from prometheus_client import CollectorRegistry

    (tmp_path / "fresh_settings.py").write_text(
        "SECRET_KEY = 'x'\n"
        "INSTALLED_APPS = ['anole_jobs']\n"
        "DATABASES = {'default': {'ENGINE': 'django.db.backends.sqlite3',"
        f" 'NAME': {str(tmp_path / 'db.sqlite3')!r}}}}}\n"
        "USE_TZ = True\n"
    )
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "fresh_settings",
        "PYTHONPATH": os.pathsep.join([str(tmp_path), os.getcwd()]),
    }
    env.pop("PROMETHEUS_MULTIPROC_DIR", None)
    done = subprocess.run(
        [sys.executable, "-c", FRESH_PROCESS],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    names_line, _, exposition = done.stdout.partition("\n")
    every = sorted(
        family.name for family in metrics.MetricsListener(CollectorRegistry()).registry.collect()
    )
    assert json.loads(names_line) == every and len(every) == 12
    for name in every:
        assert f"# HELP {name}" in exposition


def test_the_leader_reports_the_jobs_held_by_each_limited_queue(env: Any) -> None:
    env.configure(QUEUES={"default": {"global_concurrency": 1}, "mail": {}})
    jobs.enqueue_many([Work() for _ in range(3)])
    jobs.step()  # counts first: 2 of the 3 held; then runs one (within the limit)
    assert value("anole_jobs_held", queue="default") == 2
    jobs.set_limits("mail", rate_limit="1/h")
    jobs.enqueue_many([Work() for _ in range(2)], queue="mail")
    env.clock.advance(timedelta(seconds=15))
    jobs.step()  # counts (default: 1 held; mail: 1 of 2), then runs one of each
    assert value("anole_jobs_held", queue="default") == 1
    assert value("anole_jobs_held", queue="mail") == 1
