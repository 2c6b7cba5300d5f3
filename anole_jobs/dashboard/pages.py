"""What every dashboard page shares: the guard each view runs behind (`dashboard_view`:
permission first, then every expected failure shown as a problem page), post/redirect/get
with a notice (`redirect`, `notice_of`), and the live pages' refresh (`REFRESH_SECONDS`,
`is_partial`). The page modules (`views`, `workers`, `workflow_views`, `stats_page`,
`bulk_views`) import these; none imports another page module.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import wraps
from typing import Any
from urllib.parse import urlencode

from django.contrib import messages
from django.http import HttpRequest, HttpResponse, HttpResponseBase, HttpResponseRedirect
from django.urls import reverse

from anole_jobs.dashboard.access import refuse
from anole_jobs.dashboard.render import messages_on, render
from anole_jobs.operations import audit
from anole_jobs.operations.permissions import Access, access, may, refusal
from anole_jobs.operations.problems import EXPECTED, Problem, problem_of

#: How often a live page fetches its table again, in seconds (while its tab is visible).
REFRESH_SECONDS = 5
#: The query parameter of a live page's refresh: answer the table region only.
PARTIAL = "partial"
NOTICES = {
    "retried": "The job was made available again.",
    "cancelled": "The job was cancelled.",
    "deleted": "The job was deleted.",
    "paused": "The queue is paused: no worker claims its jobs until it is resumed.",
    "resumed": "The queue was resumed.",
    "limits": "The queue's limits were changed; workers use them at their next claim.",
    "triggered": "The cron entry's job was enqueued.",
    "unchanged": "Nothing changed: the job or queue already was as asked.",
    "workflow_cancelled": "Every step of the workflow that had not ended was cancelled.",
    "duplicate": "Nothing enqueued: the cron entry's unique job is already waiting.",
    "bulk_retried": "The matching jobs were made available again.",
    "bulk_cancelled": "The matching jobs were cancelled.",
    "bulk_deleted": "The matching jobs were deleted.",
    "worker_quiet": "The worker was asked to quiet: within a second it claims nothing more; "
    "its running jobs finish.",
    "worker_stop": "The worker was asked to stop: within a second it drains and exits.",
}
#: The pages whose POST deletes or acts in bulk (they need the delete permission).
DELETING_PAGES = frozenset({"delete", "bulk", "chosen"})
HEADINGS = {
    403: "Not allowed",
    400: "Cannot do that",
    404: "Not found",
    503: "The jobs store did not answer",
}

View = Callable[..., HttpResponseBase]


def problem_page(request: HttpRequest, problem: Problem) -> HttpResponse:
    response = render(
        request,
        "problem.html",
        {
            "title": HEADINGS.get(problem.status, "Cannot do that"),
            "heading": HEADINGS.get(problem.status, "Cannot do that"),
            "message": problem.message,
            "retry_after": problem.headers.get("Retry-After"),
        },
        status=problem.status,
    )
    for name, value in problem.headers.items():
        response[name] = value
    return response


def confirm_page(
    request: HttpRequest,
    *,
    question: str,
    explanation: list[str],
    button: str,
    back: str,
    back_label: str,
    section: str,
    danger: bool = False,
    fields: list[tuple[str, str]] | None = None,
) -> HttpResponse:
    """What a GET on an action's URL answers: the question, and a form that posts to the same
    URL (under CSRF protection). A button that should ask first is a GET form to its action's
    URL, so it asks with scripts off too; an anonymous POST that comes back after signing in
    lands here rather than on a blank 405."""
    return render(
        request,
        "confirm.html",
        {
            "title": question,
            "section": section,
            "question": question,
            "explanation": explanation,
            "button": button,
            "back": back,
            "back_label": back_label,
            "danger": danger,
            "fields": fields or [],
        },
    )


def page_url(name: str, *args: Any) -> str:
    return reverse(f"anole_jobs:dashboard:{name}", args=args)


def dashboard_view(view: View) -> View:
    """Permission first, then the view, with every expected failure (an outage while the
    permission reads the user included) shown as a page."""

    @wraps(view)
    def guarded(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponseBase:
        try:
            decided = access(request)
            if decided is not Access.ALLOWED:
                return refuse(request, decided)
            if request.method == "POST":
                match = request.resolver_match
                need = "delete" if match and match.url_name in DELETING_PAGES else "change"
                if not may(request, need):
                    return problem_page(
                        request,
                        Problem(status=403, code="permission_denied", message=refusal(need)),
                    )
            with audit.acting(audit.actor_of(request), "dashboard"):
                return view(request, *args, **kwargs)
        except EXPECTED as exc:
            problem = problem_of(exc)
            if problem is None:
                raise
            return problem_page(request, problem)

    return guarded


#: Notices that say an action changed nothing (a warning rather than a success).
NOTHING_DONE = ("unchanged", "duplicate")


def redirect(
    request: HttpRequest, name: str, *args: Any, notice: str | None = None, **query: str
) -> HttpResponse:
    """Post/redirect/get: to page `name`, with `notice` as a message (shown once) when the
    messages framework runs, else in the URL."""
    url = reverse(f"anole_jobs:dashboard:{name}", args=args)
    if notice and messages_on(request):
        level = messages.WARNING if notice in NOTHING_DONE else messages.SUCCESS
        messages.add_message(request, level, NOTICES[notice])
        notice = None
    params = {**query, **({"notice": notice} if notice else {})}
    return HttpResponseRedirect(f"{url}?{urlencode(params)}" if params else url)


def notice_of(request: HttpRequest) -> str | None:
    """The notice a redirect carries in its URL (``?notice=<code>``), in words; None without."""
    return NOTICES.get(request.GET.get("notice", ""))


def is_partial(request: HttpRequest) -> bool:
    """Whether a live page's refresh asks for its table region only."""
    return request.GET.get(PARTIAL) == "1"
