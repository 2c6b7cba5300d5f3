"""The dashboard's Errors and Kinds pages (`anole_jobs.operations.insights`): failures grouped
by error, each group with links that list its jobs and act on all of them (the bulk actions'
confirmation pages); and how each kind of job fares. Both read the newest jobs only, and say
how many they looked at."""

from __future__ import annotations

from urllib.parse import urlencode

from django.http import HttpRequest, HttpResponse
from django.views.decorators.http import require_GET

from anole_jobs.dashboard.pages import REFRESH_SECONDS, dashboard_view, page_url
from anole_jobs.dashboard.render import render_live
from anole_jobs.operations import insights
from anole_jobs.operations.stats import milliseconds


def _group_links(group: insights.ErrorGroup) -> dict[str, str]:
    query = {"error": group.search}
    if group.only_state:
        query["state"] = group.only_state
    encoded = urlencode(query)
    return {
        "list": f"{page_url('jobs')}?{encoded}",
        "retry": f"{page_url('bulk', 'retry')}?{encoded}",
        "cancel": f"{page_url('bulk', 'cancel')}?{encoded}",
        "delete": f"{page_url('bulk', 'delete')}?{encoded}",
    }


@require_GET
@dashboard_view
def errors(request: HttpRequest) -> HttpResponse:
    report = insights.top_errors()
    groups = [
        {
            "group": group,
            "links": _group_links(group),
            "kinds": group.kinds.most_common(3),
            "more_kinds": max(0, len(group.kinds) - 3),
            "queues": group.queues.most_common(3),
            "states": sorted(group.states.items()),
        }
        for group in report.groups
    ]
    return render_live(
        request,
        "errors.html",
        {
            "title": "Errors",
            "section": "errors",
            "groups": groups,
            "looked": report.looked,
            "more": report.more,
            "window": insights.ERRORS_WINDOW,
        },
        live=True,
        refresh=REFRESH_SECONDS * 2,
    )


@require_GET
@dashboard_view
def kinds(request: HttpRequest) -> HttpResponse:
    report = insights.kinds()
    rows = [
        {
            "row": row,
            "link": f"{page_url('jobs')}?{urlencode({'kind': row.kind})}",
            "failed_link": f"{page_url('jobs')}?{urlencode({'kind': row.kind, 'state': 'dead'})}",
            "median": milliseconds(row.median_ms),
            "longest": milliseconds(row.longest_ms),
            "rate": "-" if row.failure_rate is None else f"{row.failure_rate:.0%}",
        }
        for row in report.rows
    ]
    return render_live(
        request,
        "kinds.html",
        {
            "title": "Kinds",
            "section": "kinds",
            "rows": rows,
            "looked": report.looked,
            "more": report.more,
        },
        live=True,
        refresh=REFRESH_SECONDS * 2,
    )
