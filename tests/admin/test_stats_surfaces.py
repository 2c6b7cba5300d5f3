"""The run statistics on every surface, on every store: ``GET /stats`` (and its OpenAPI
entry), ``manage.py jobs stats``, the dashboard's queues page (its last-hour figures and chart
come from the counters, never a scan of jobs) and statistics page, and the SVG charts
themselves (valid XML, titled, described, labelled)."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from datetime import UTC, datetime, timedelta
from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from anole_jobs.admin_api.openapi import document
from anole_jobs.dashboard.charts import STYLES, Line, line_chart, nice_ceiling
from anole_jobs.operations.problems import BadInput
from anole_jobs.operations.stats import parse_stats
from tests.admin.support import MOUNT
from tests.sampleapp.jobs import Prioritized, Work
from tests.support.stats import clear_stats

pytestmark = pytest.mark.django_db(databases=["default"])
T0 = datetime(2030, 1, 1, 12, 0, tzinfo=UTC)
SVG = "{http://www.w3.org/2000/svg}"


@pytest.fixture
def ran(env, staff):
    """In queue default at 12:00:30, two runs completed, one failed to be retried in an hour
    and one for good (dead); in mail at 12:01:10, one completed. The clock then stands at
    12:02. (After `staff`, which configures the store.)"""
    clear_stats(env)
    env.clock.set(T0 + timedelta(seconds=30))
    env.jobs.enqueue_many(
        [Work(), Work(), Work(action="retry_in", seconds=3600), Work(action="discard")]
    )
    env.jobs.step()
    env.clock.set(T0 + timedelta(seconds=70))
    env.jobs.enqueue(Prioritized(name="p"))
    env.jobs.step()
    env.clock.set(T0 + timedelta(minutes=2))
    return env


def test_the_route_answers_per_minute_points_and_totals(ran, staff):
    body = staff.get(f"{MOUNT}stats").json()
    assert (body["period"], body["resolution"], body["step_seconds"]) == ("hour", "minute", 60)
    assert body["until"] == (T0 + timedelta(minutes=2)).isoformat()
    points = body["overall"]["points"]
    assert len(points) == 60 and points[-1]["at"] == (T0 + timedelta(minutes=2)).isoformat()
    by_time = {p["at"]: p for p in points}
    first = by_time[T0.isoformat()]
    assert [first[k] for k in ("started", "completed", "failed", "retried", "dead")] == [
        4,
        2,
        2,
        1,
        1,
    ]
    assert first["runtime_ms"]["p50"] == 0  # the fake clock stands still during a run
    assert by_time[(T0 + timedelta(minutes=1)).isoformat()]["completed"] == 1
    assert body["overall"]["total"]["completed"] == 3
    assert [q["queue"] for q in body["queues"]] == ["default", "mail"]
    assert body["queues"][1]["total"]["completed"] == 1
    assert sum(p["completed"] for p in by_time.values()) == 3
    empty = by_time[(T0 - timedelta(minutes=30)).isoformat()]
    assert empty["completed"] == 0 and empty["runtime_ms"]["p95"] is None


def test_the_route_takes_a_queue_and_the_day(ran, staff):
    body = staff.get(f"{MOUNT}stats", {"queue": "mail", "period": "day"}).json()
    assert (body["period"], body["resolution"], len(body["overall"]["points"])) == (
        "day",
        "hour",
        24,
    )
    assert body["overall"]["queue"] == "mail"
    assert body["overall"]["points"][-1]["at"] == T0.isoformat()
    assert body["overall"]["total"]["completed"] == 1
    assert [q["queue"] for q in body["queues"]] == ["mail"]
    unknown = staff.get(f"{MOUNT}stats", {"queue": "nope"}).json()
    assert unknown["overall"]["total"]["started"] == 0


@pytest.mark.parametrize(
    ("query", "field"),
    [({"period": "year"}, "period"), ({"queue": ""}, "queue"), ({"since": "1"}, "since")],
)
def test_the_route_refuses_bad_parameters(env, staff, query, field):
    response = staff.get(f"{MOUNT}stats", query)
    assert response.status_code == 400
    assert response.json()["error"] == "bad_filter"
    assert field in response.json()["message"]


def test_a_parameter_given_twice_is_refused():
    with pytest.raises(BadInput, match="give period once"):
        parse_stats({"period": ["hour", "day"]})


def test_the_openapi_document_lists_the_route():
    doc = document()
    get = doc["paths"]["/stats"]["get"]
    assert {p["name"] for p in get["parameters"]} == {"queue", "period"}
    assert get["responses"]["200"]["content"]["application/json"]["schema"] == {
        "$ref": "#/components/schemas/Stats"
    }
    assert "StatsPoint" in doc["components"]["schemas"]


def test_the_cli_prints_a_table_and_the_routes_json(ran, staff):
    out = StringIO()
    call_command("jobs", "stats", stdout=out)
    text = out.getvalue()
    assert text.startswith("the last hour, per minute (UTC)")
    lines = text.splitlines()
    header = next(line for line in lines if line.startswith("QUEUE"))
    assert header.split() == [
        "QUEUE",
        "STARTED",
        "COMPLETED",
        "FAILED",
        "RETRIED",
        "DEAD",
        "P50",
        "P95",
        "P99",
    ]
    assert next(line for line in lines if line.startswith("default")).split()[:6] == [
        "default",
        "4",
        "2",
        "2",
        "1",
        "1",
    ]
    assert next(line for line in lines if line.startswith("(all)")).split()[2] == "3"
    assert next(line for line in lines if line.startswith("12:00")).split()[:4] == [
        "12:00",
        "4",
        "2",
        "2",
    ]
    out = StringIO()
    call_command("jobs", "stats", "--queue", "mail", "--period", "day", "--json", stdout=out)
    assert (
        json.loads(out.getvalue())
        == staff.get(f"{MOUNT}stats", {"queue": "mail", "period": "day"}).json()
    )


def test_the_cli_refuses_a_bad_period(env):
    with pytest.raises(CommandError, match="invalid choice: 'year'"):
        call_command("jobs", "stats", "--period", "year")
    with pytest.raises(CommandError, match="queue must not be empty"):
        call_command("jobs", "stats", "--queue", "")


def test_the_queues_page_counts_the_last_hour_from_the_counters(ran, staff, monkeypatch):
    store = ran.jobs.service.store
    monkeypatch.setattr(
        type(store), "list", lambda *a, **k: pytest.fail("the queues page listed jobs")
    )
    html = staff.get(f"{MOUNT}dashboard/").content.decode()
    default_row = html[html.index(">default</a>") : html.index(">mail</a>")]
    assert '<td data-label="Completed, last hour" class="num">2</td>' in default_row
    assert '<td data-label="Failed, last hour" class="num">2</td>' in default_row
    assert '<svg xmlns="http://www.w3.org/2000/svg" class="chart chart-wide"' in html
    assert "Jobs completed, failed and started, all queues, per minute over the last hour" in html
    partial = staff.get(f"{MOUNT}dashboard/", {"partial": "1"}).content.decode()
    assert "<svg" in partial  # the chart is in the live region: it refreshes with the table


def test_the_statistics_page_shows_both_charts_and_their_numbers(ran, staff):
    html = staff.get(f"{MOUNT}dashboard/stats/", {"queue": "default"}).content.decode()
    assert html.count('<svg xmlns="http://www.w3.org/2000/svg" class="chart chart-wide"') == 2
    assert html.count('class="chart chart-narrow"') == 2  # the same two, for a phone
    assert "Run time of completed jobs, queue default" in html
    assert "<strong>2</strong> completed" in html and "1 to be retried, 1 dead" in html
    assert '<time datetime="2030-01-01T12:00:00+00:00">12:00</time>' in html
    day = staff.get(f"{MOUNT}dashboard/stats/", {"period": "day"}).content.decode()
    assert "per hour over the last day" in day
    assert '<time datetime="2030-01-01T12:00:00+00:00">Jan 01, 12:00</time>' in day
    bad = staff.get(f"{MOUNT}dashboard/stats/", {"period": "year"})
    assert bad.status_code == 400
    assert "period must be one of hour, day, week, month" in bad.content.decode()


def _chart() -> str:
    return line_chart(
        title="Runs <per> minute",
        description="completed & failed",
        x_labels=["12:00", "12:01", "12:02"],
        lines=[
            Line("completed", [1, 4, 2], STYLES[0]),
            Line("failed", [0, None, 3], STYLES[1]),
        ],
    )


def test_a_chart_is_valid_svg_with_a_title_a_description_and_labels():
    root = ET.fromstring(_chart())
    assert root.tag == f"{SVG}svg" and root.get("role") == "img"
    title, desc = root.find(f"{SVG}title"), root.find(f"{SVG}desc")
    assert title is not None and title.text == "Runs <per> minute"  # escaped, then parsed back
    assert desc is not None and desc.text == "completed & failed"
    assert root.get("aria-labelledby") == f"{title.get('id')} {desc.get('id')}"
    texts = [t.text for t in root.iter(f"{SVG}text")]
    assert {"12:00", "12:01", "12:02"} <= set(texts)  # the x axis
    assert texts.count("completed") == 2 and texts.count("failed") == 2  # legend + line end
    assert {"0", "1", "2", "3", "4", "5"} & set(texts)  # the y axis
    # Readable without colour: each series has its own dash pattern and marker shape.
    legend = root.findall(f"{SVG}g[@class='legend']")
    assert [g.find(f"{SVG}line").get("stroke-dasharray") for g in legend] == [None, "7 4"]
    assert [g.find(f"{SVG}text").text for g in legend] == ["completed", "failed"]
    assert root.find(f".//{SVG}rect[@width='6']") is not None  # the square markers
    # A missing value breaks the line: "failed" is drawn as a lone marker, no path through it.
    failed = root.find(f".//{SVG}g[@data-series='failed']")
    assert failed is not None and failed.find(f"{SVG}path") is None


def test_round_axis_maxima():
    assert [nice_ceiling(v) for v in (0, 0.3, 1, 3, 7, 12, 250, 5001)] == [
        1,
        0.5,
        1,
        5,
        10,
        20,
        500,
        10000,
    ]


@pytest.fixture
def history(env, staff):
    """Runs over ten days at 09:30 (day n: n + 1 jobs, and what else the step runs), then the
    leader's round at day 10, 12:02: every hour rolled up and the minutes past a day pruned.
    Returns ``{hour: completed}`` as the runs went, from the steps' own reports."""
    clear_stats(env)
    completed: dict[datetime, int] = {}
    for day in range(10):
        env.clock.set(T0 - timedelta(days=10 - day, hours=2, minutes=30))
        env.jobs.enqueue_many([Work() for _ in range(day + 1)])
        completed[T0 - timedelta(days=10 - day, hours=3)] = len(env.jobs.step().runs)
    env.clock.set(T0 + timedelta(minutes=2))
    last = len(env.jobs.step().runs)  # the leader's round: rolls up, prunes the minutes
    if last:
        completed[T0] = last
    return completed


def test_the_longer_periods_read_the_hourly_history(env, history, staff):
    store = env.jobs.service.store
    until = T0 + timedelta(minutes=5)
    minutes = store.stats(None, since=T0 - timedelta(days=11), until=until, resolution="minute")
    # The minutes past a day are gone (what ran in the last round is all that is left) ...
    left = [p for points in minutes.values() for p in points]
    assert all(p.at >= T0 for p in left)
    assert sum(p.completed for p in left) == history.get(T0, 0)
    # ... and every hour reads the same from the rolled-up history.
    body = staff.get(f"{MOUNT}stats", {"period": "month"}).json()
    assert (body["period"], body["resolution"], body["step_seconds"]) == ("month", "hour", 3600)
    points = body["overall"]["points"]
    assert len(points) == 720 and points[-1]["at"] == T0.isoformat()
    busy = {p["at"]: p["completed"] for p in points if p["completed"]}
    assert busy == {at.isoformat(): n for at, n in history.items()}
    assert len(busy) >= 10
    week = staff.get(f"{MOUNT}stats", {"period": "week"}).json()
    assert len(week["overall"]["points"]) == 168
    in_week = sum(n for at, n in history.items() if at > T0 - timedelta(days=7))
    assert week["overall"]["total"]["completed"] == in_week

    out = StringIO()
    call_command("jobs", "stats", "--period", "week", stdout=out)
    assert out.getvalue().startswith("the last 7 days, per hour (UTC)")
    default = next(ln for ln in out.getvalue().splitlines() if ln.startswith("default"))
    assert default.split()[2] == str(in_week)

    html = staff.get(f"{MOUNT}dashboard/stats/", {"period": "month"}).content.decode()
    assert "per hour over the last 30 days (UTC)" in html
    assert '<option value="month" selected>last 30 days, per hour</option>' in html
    assert f"<strong>{sum(history.values())}</strong> completed" in html
    assert "per-minute points are kept for a day, per-hour points for 30 days" in html
