"""The operator's second round of dashboard fixes, through Django's test client: actions that
ask first without a script (and a GET on an action URL that answers the question), pages that
refresh themselves while what they show can change, a missing trailing slash and the mount
root, the cron page's last run, bidi text isolated, the statistics page's round ticks and its
note on percentiles, and ``jobs queues`` that does not call an idle queue running."""

from __future__ import annotations

import re
from datetime import timedelta
from io import StringIO

import pytest
from django.core.management import call_command

from anole_jobs import Workflow
from anole_jobs.dashboard import charts, views
from anole_jobs.dashboard.render import live_script
from anole_jobs.maintenance.cron import CronScheduler
from anole_jobs.testing import drain
from tests.sampleapp import jobs as sample_jobs
from tests.sampleapp.jobs import Work
from tests.support.clients import staff_client

BASE = "/ops/jobs/dashboard/"
MOUNT = "/ops/jobs/"
pytestmark = pytest.mark.django_db


@pytest.fixture
def staff(db):
    return staff_client()


@pytest.fixture
def board(settings, anole_jobs):
    settings.LOGIN_URL = "/login/"
    return anole_jobs


# -- asking first, without a script ----------------------------------------------------------


def forms(html: str) -> list[tuple[str, str]]:
    return re.findall(r'<form[^>]*method="(get|post)" action="([^"]+)"', html)


def test_delete_and_retry_of_a_completed_job_ask_on_a_page_and_change_nothing(board, staff):
    job = board.enqueue(Work()).id
    drain()
    html = staff.get(f"{BASE}jobs/{job}/").text
    found = dict((action, method) for method, action in forms(html))
    assert found[f"{BASE}jobs/{job}/delete"] == "get"  # no longer one click to delete
    assert found[f"{BASE}jobs/{job}/retry"] == "get"  # completed: a re-run asks first
    asked = staff.get(f"{BASE}jobs/{job}/delete")
    assert asked.status_code == 200 and f"Delete job {job}?" in asked.text
    assert f'method="post" action="{BASE}jobs/{job}/delete"' in asked.text
    assert "csrfmiddlewaretoken" in asked.text
    retry = staff.get(f"{BASE}jobs/{job}/retry").text
    assert "It has completed: retrying runs it again" in retry
    assert board.get(job).state == "completed"
    assert staff.post(f"{BASE}jobs/{job}/delete").status_code == 302
    assert board.get(job) is None


def test_retry_of_a_dead_job_stays_one_click(board, staff):
    job = board.enqueue(Work(action="discard")).id
    drain()
    found = {action: method for method, action in forms(staff.get(f"{BASE}jobs/{job}/").text)}
    assert found[f"{BASE}jobs/{job}/retry"] == "post"


def test_cancel_workflow_asks_on_a_page(board, staff):
    flow = Workflow("nightly import")
    flow.add(Work(tag="a"), name="a")
    created = board.enqueue_workflow(flow)
    html = staff.get(f"{BASE}workflows/{created.id}/").text
    assert ("get", f"{BASE}workflows/{created.id}/cancel") in forms(html)
    asked = staff.get(f"{BASE}workflows/{created.id}/cancel")
    assert asked.status_code == 200 and "Cancel workflow nightly import?" in asked.text
    assert board.get(created.jobs["a"]).state == "available"


@pytest.mark.parametrize(
    ("path", "question"),
    [
        ("queues/default/pause", "Pause queue default?"),
        ("queues/default/resume", "Resume queue default?"),
        ("cron/nightly/trigger", "Run cron entry nightly now?"),
        ("jobs/{job}/cancel", "Cancel job {job}?"),
    ],
)
def test_a_get_on_an_action_url_is_its_question_not_a_blank_405(
    board, staff, settings, path, question
):
    settings.ANOLE_JOBS = {
        **settings.ANOLE_JOBS,
        "CRON": [{"name": "nightly", "schedule": "0 3 * * *", "job": "tests.sampleapp.jobs.Work"}],
    }
    job = board.enqueue(Work()).id
    answer = staff.get(BASE + path.format(job=job))
    assert answer.status_code == 200, answer.status_code
    assert answer["Content-Type"].startswith("text/html")
    assert question.format(job=job) in answer.text
    assert not any(queue.paused for queue in board.queues())
    assert board.get(job).state == "available"
    assert staff.get(f"{BASE}jobs/999999/delete").status_code == 404


# -- pages that refresh themselves -----------------------------------------------------------


def test_the_job_page_refreshes_while_the_job_can_change(board, staff):
    job = board.enqueue(Work()).id
    page = staff.get(f"{BASE}jobs/{job}/").text
    assert f'id="live" data-live="{views.REFRESH_SECONDS}"' in page
    part = staff.get(f"{BASE}jobs/{job}/?partial=1")
    assert part["X-Anole-Partial"] == "1"
    assert "<html" not in part.text and f"Job {job}" in part.text and "available" in part.text
    drain()
    assert "data-live" not in staff.get(f"{BASE}jobs/{job}/").text  # completed: it stays


def test_the_workflow_and_cron_pages_refresh_themselves(board, staff, settings):
    settings.ANOLE_JOBS = {
        **settings.ANOLE_JOBS,
        "CRON": [{"name": "nightly", "schedule": "0 3 * * *", "job": "tests.sampleapp.jobs.Work"}],
    }
    flow = Workflow("nightly import")
    flow.add(Work(tag="a"), name="a")
    created = board.enqueue_workflow(flow)
    assert "data-live=" in staff.get(f"{BASE}workflows/{created.id}/").text
    part = staff.get(f"{BASE}workflows/{created.id}/?partial=1")
    assert part["X-Anole-Partial"] == "1" and "nightly import" in part.text
    assert "data-live=" in staff.get(f"{BASE}cron/").text
    part = staff.get(f"{BASE}cron/?partial=1")
    assert part["X-Anole-Partial"] == "1" and "<html" not in part.text and "nightly" in part.text


def test_the_updated_at_time_is_in_utc():
    script = live_script().decode()
    assert "toLocaleTimeString" not in script
    assert 'toISOString().slice(11, 19) + " UTC"' in script


# -- paths without a page ---------------------------------------------------------------------


def test_a_missing_trailing_slash_redirects_and_an_unknown_page_is_an_html_404(board, staff):
    assert staff.get(BASE.rstrip("/"))["Location"] == BASE
    moved = staff.get(BASE + "jobs?state=dead")
    assert moved.status_code == 302 and moved["Location"] == BASE + "jobs/?state=dead"
    assert staff.get(BASE + "stats")["Location"] == BASE + "stats/"
    missing = staff.get(BASE + "no/such/page")
    assert missing.status_code == 404 and missing["Content-Type"].startswith("text/html")
    assert "The dashboard has no page at" in missing.text
    browser = "text/html,application/xhtml+xml,*/*;q=0.8"
    assert staff.get(MOUNT, HTTP_ACCEPT=browser)["Location"] == BASE  # the mount root
    assert staff.get(MOUNT).json()["error"] == "not_found"  # for a JSON client, as before
    assert staff.get(MOUNT + "no-such-route").json()["error"] == "not_found"  # JSON stays


def test_an_anonymous_visitor_to_a_missing_page_goes_to_sign_in(board, client):
    response = client.get(BASE + "no/such/page")
    assert response.status_code == 302 and response["Location"].startswith("/login/")


# -- the cron page's last run -----------------------------------------------------------------


def test_the_cron_page_shows_no_last_run_for_a_tick_that_never_ran(
    board, staff, settings, anole_clock
):
    settings.ANOLE_JOBS = {
        **settings.ANOLE_JOBS,
        "CRON": [{"name": "nightly", "schedule": "0 3 * * *", "job": "tests.sampleapp.jobs.Work"}],
    }
    anole_clock.set(anole_clock().replace(hour=12))
    CronScheduler(board.service).run_once(anole_clock())  # first sighting: nothing runs
    [entry] = board.cron_list()
    assert entry.last_tick_at is not None and entry.last_job_id is None
    html = staff.get(BASE + "cron/").text
    row = html.split('data-label="Last run"')[1].split("</td>")[0]
    assert "none yet" in row and "runs from the first tick after" in row
    # The next day's tick runs: that is the last run.
    anole_clock.advance(timedelta(days=1))
    CronScheduler(board.service).run_once(anole_clock())
    [entry] = board.cron_list()
    html = staff.get(BASE + "cron/").text
    row = html.split('data-label="Last run"')[1].split("</td>")[0]
    assert "none yet" not in row and entry.last_tick_at.strftime("%Y-%m-%d %H:%M:%S") in row


# -- text from jobs ---------------------------------------------------------------------------


def test_bidi_controls_in_an_error_message_are_isolated(board, staff, monkeypatch):
    def fail(job, args):
        raise ValueError("abc\u202edef")

    monkeypatch.setitem(sample_jobs.HOOKS, "bidi", fail)
    job = board.enqueue(Work(action="bidi")).id
    board.step()
    html = staff.get(f"{BASE}jobs/{job}/").text
    assert re.search(r"<bdi>[^<]*abc\u202edef[^<]*</bdi>", html)


def test_the_queues_page_reads_each_queues_limits_once(board, staff, monkeypatch):
    calls = []
    real = views._limits_row
    monkeypatch.setattr(views, "_limits_row", lambda queue: calls.append(queue.name) or real(queue))
    staff.get(BASE)
    assert calls and len(calls) == len(set(calls))


# -- charts -----------------------------------------------------------------------------------


def test_run_time_ticks_are_round_units():
    assert [charts.time_unit(charts.time_step(150_000 / 4))(4 * i * 60_000) for i in range(2)] == [
        "0",
        "4 min",
    ]
    tick = charts.time_unit(30_000)
    assert [tick(v) for v in (0, 30_000, 60_000, 90_000)] == ["0", "30 s", "60 s", "90 s"]
    assert charts.time_unit(500)(1500) == "1500 ms"
    assert charts.time_unit(3_600_000)(7_200_000) == "2 h"


def test_the_minute_under_way_is_drawn_apart_and_a_phone_chart_exists(board, staff):
    board.enqueue(Work())
    drain()
    html = staff.get(BASE + "stats/").text
    assert html.count('class="chart chart-wide"') == 2
    assert html.count('class="chart chart-narrow"') == 2
    assert html.count('<g class="partial">') >= 6  # each line's last point, in each chart
    assert "the upper bound of the range it fell in" in html
    assert "1.67m" not in html and "2.5m" not in html


def test_a_charts_settled_line_stops_before_the_partial_point():
    svg = str(
        charts.line_chart(
            title="t",
            description="d",
            x_labels=["a", "b", "c"],
            lines=[charts.Line("x", [4.0, 4.0, 1.0], charts.STYLES[0])],
            partial_last=True,
        )
    )
    settled = re.findall(r'<path d="(M[^"]+)" fill="none" stroke="#1f5fa8" stroke-width="2"', svg)
    assert len(settled) == 1 and settled[0].count("L") == 1  # a to b only
    assert svg.count('fill="#fff"') == 1  # the hollow last point


# -- the command line -------------------------------------------------------------------------


def test_jobs_queues_does_not_call_a_queue_no_worker_runs_running(board):
    board.enqueue(Work())
    out = StringIO()
    call_command("jobs", "queues", stdout=out)
    line = next(line for line in out.getvalue().splitlines() if line.startswith("default"))
    assert "running" not in line.split("  ")[1:3] and "active, no worker" in line


# -- errors and kinds -------------------------------------------------------------------------


def test_the_errors_page_groups_failures_and_acts_on_a_group(board, staff, monkeypatch):
    def declined(job, args):
        raise ValueError(f"card declined\ndetails for {args.tag}")

    monkeypatch.setitem(sample_jobs.HOOKS, "declined", declined)
    same = [board.enqueue(Work(action="declined", tag=str(n))).id for n in range(3)]
    other = board.enqueue(Work(action="discard")).id
    board.enqueue(Work())
    drain()  # the declined ones wait to be retried, the discarded one is dead
    html = staff.get(BASE + "errors/").text
    first = html.index("card declined")
    assert first < html.index("not worth retrying")  # the biggest group first
    assert "<bdi>card declined</bdi>" in html and "details for" not in html  # first line only
    assert f"Job {max(same)}" in html and f"Job {other}" in html
    link = re.search(r'href="([^"]*bulk/retry\?[^"]*card\+declined[^"]*)"', html)
    assert link is not None
    asked = staff.get(link.group(1).replace("&amp;", "&"))
    assert asked.status_code == 200
    assert f"Retry all {len(same)} matching jobs?" in asked.text


def test_the_kinds_page_counts_each_kind(board, staff):
    board.enqueue(Work())
    board.enqueue(Work(action="discard"))
    drain()
    html = staff.get(BASE + "kinds/").text
    row = html.split("test.work</bdi></a></th>")[1].split("</tr>")[0]
    assert '<td data-label="Jobs" class="num">2</td>' in row
    assert '<td data-label="Completed" class="num">1</td>' in row
    assert '<td data-label="Failure rate" class="num">50%</td>' in row


# -- the jobs list: total, last error, chosen rows ---------------------------------------------


def test_the_jobs_list_shows_a_total_and_each_jobs_last_error(board, staff):
    failed = board.enqueue(Work(action="discard")).id
    for _ in range(3):
        board.enqueue(Work())
    html = staff.get(BASE + "jobs/?limit=2").text
    assert "<strong>4</strong> jobs match; 2 shown on this page." in html
    drain()
    html = staff.get(BASE + "jobs/?state=dead").text
    assert "<strong>1</strong> job matches." in html
    row = html.split(f"Job {failed}</a></th>")[1].split("</tr>")[0]
    assert 'data-label="Last error"' in row and "Discarded: not worth retrying" in row


def test_chosen_rows_are_acted_on_after_a_question(board, staff):
    ids = [board.enqueue(Work(action="discard")).id for _ in range(3)]
    drain()
    html = staff.get(BASE + "jobs/?state=dead").text
    assert f'<form method="get" action="{BASE}chosen"' in html
    assert f'name="id" value="{ids[0]}"' in html
    chosen = {"action": "retry", "id": [str(ids[0]), str(ids[2])], "back": "?state=dead"}
    asked = staff.get(BASE + "chosen", chosen)
    assert asked.status_code == 200 and "Retry 2 chosen jobs?" in asked.text
    assert {board.get(i).state for i in ids} == {"dead"}  # asking changed nothing
    done = staff.post(BASE + "chosen", chosen)
    assert done.status_code == 302 and done["Location"].startswith(BASE + "jobs/?state=dead")
    assert [board.get(i).state for i in ids] == ["available", "dead", "available"]
    assert staff.get(BASE + "chosen", {"action": "retry"}).status_code == 400
    assert staff.get(BASE + "chosen", {"action": "explode", "id": "1"}).status_code == 404
    assert staff.get(BASE + "chosen", {"action": "retry", "id": "x"}).status_code == 400
    away = staff.post(BASE + "chosen", {**chosen, "back": "//evil.example/"})
    assert away["Location"].startswith(BASE + "jobs/")


# -- a page per queue ---------------------------------------------------------------------------


def test_the_queue_page_shows_depth_limits_and_changes_them(board, staff, settings):
    settings.ANOLE_JOBS = {
        **settings.ANOLE_JOBS,
        "QUEUES": {"default": {}, "reports/eu": {"global_concurrency": 2, "partition": "tag"}},
    }
    for tag in ("a", "a", "b"):
        board.enqueue(Work(tag=tag), queue="reports/eu")
    board.step()  # claims within the limit: two of them at most
    queues = staff.get(BASE).text
    assert f'href="{BASE}queues/reports/eu/"' in queues
    html = staff.get(BASE + "queues/reports/eu/").text
    assert "Queue <bdi>reports/eu</bdi>" in html and "2 per partition" in html
    assert "by <code>tag</code>" in html and "Held back now" in html
    assert 'data-live="' in html
    assert '<dt>Oldest available</dt><dd><span class="muted">none</span>' in html
    board.enqueue(Work(tag="c"), queue="reports/eu")
    html = staff.get(BASE + "queues/reports/eu/").text
    assert "<dt>Oldest available</dt><dd>since <time" in html  # the queue's latency
    changed = staff.post(
        BASE + "queues/reports/eu/limits", {"global_concurrency": "5", "rate_limit": "10/s"}
    )
    assert changed.status_code == 302 and changed["Location"].startswith(
        BASE + "queues/reports/eu/"
    )
    [record] = [q for q in board.queues() if q.name == "reports/eu"]
    assert record.limits.global_concurrency == 5 and record.limits.rate_limit == "10/s"
    assert record.limits.source == "runtime"
    bad = staff.post(BASE + "queues/reports/eu/limits", {"global_concurrency": "lots"})
    assert bad.status_code == 400 and "global_concurrency" in bad.text
    staff.post(BASE + "queues/reports/eu/limits", {"global_concurrency": "", "rate_limit": ""})
    [record] = [q for q in board.queues() if q.name == "reports/eu"]
    assert record.limits.global_concurrency == 2  # back to the settings'
    paused = staff.post(BASE + "queues/reports/eu/pause", {"back": "queue"})
    assert paused["Location"].startswith(BASE + "queues/reports/eu/")
    assert staff.get(BASE + "queues/nope/").status_code == 404


def test_the_workflows_page_lists_workflows_with_their_progress(board, staff):
    flow = Workflow("import feed 42")
    first = flow.add(Work(tag="a"), name="fetch")
    flow.add(Work(tag="b"), name="parse", after=[first])
    created = board.enqueue_workflow(flow)
    board.step()  # the first step completes
    html = staff.get(BASE + "workflows/").text
    assert f'href="{BASE}workflows/{created.id}/"' in html
    assert "<bdi>import feed 42</bdi>" in html and "1/2" in html
    assert "import feed 42" not in staff.get(BASE + "workflows/?state=completed").text
    assert staff.get(BASE + "workflows/?state=bogus").status_code == 200


def test_failures_that_differ_only_by_numbers_are_one_group(board, staff, monkeypatch):
    def declined(job, args):
        raise ValueError(f"card declined for invoice {args.tag}: code 0{args.tag[-1]}")

    monkeypatch.setitem(sample_jobs.HOOKS, "numbered", declined)
    for invoice in ("907", "914", "1042"):
        board.enqueue(Work(action="numbered", tag=invoice))
    drain()
    html = staff.get(BASE + "errors/").text
    assert "<bdi>card declined for invoice N: code N</bdi>" in html
    link = re.search(r'href="([^"]*bulk/retry\?[^"]*)"', html).group(1).replace("&amp;", "&")
    assert "error=ValueError%3A+card+declined+for+invoice" in link
    assert "Retry all 3 matching jobs?" in staff.get(link).text


def test_an_action_without_ids_or_filters_is_a_usage_error_with_an_error_line(board):
    from tests.admin.nofivexx_support import cli_problems, run_jobs_command

    ran = run_jobs_command("retry")
    assert ran.code == 2 and cli_problems(ran) == [], ran
