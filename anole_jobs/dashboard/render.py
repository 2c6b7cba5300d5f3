"""Rendering with the dashboard's own template engine.

The templates live beside this module and are rendered by a private `Engine`, so the
dashboard works whatever the project's `TEMPLATES` setting holds (or if it has none). Its
filters (`anole_jobs.dashboard.tags`) are built in, so templates need no ``{% load %}``.

Every page's context holds `now` (the dashboard's clock, for relative times) and `notices`:
the messages Django's messages framework holds for the request (the actions' notices, and any
other part of the site's) followed by the notice named in the URL, when there is one.

`render_partial` answers a live page's refresh: the one region of the page the refresh swaps,
marked with the ``X-Anole-Partial: 1`` header so the script can tell it from a login page.
"""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

from django.contrib.messages import get_messages
from django.http import HttpRequest, HttpResponse
from django.middleware.csrf import get_token
from django.template import Context, Engine

from anole_jobs.operations.clock import now as clock_now

TEMPLATES = Path(__file__).resolve().parent / "templates" / "anole_jobs" / "dashboard"
#: The header a partial answer carries.
PARTIAL_HEADER = "X-Anole-Partial"


@functools.cache
def engine() -> Engine:
    return Engine(
        dirs=[str(TEMPLATES)],
        libraries={},
        builtins=["anole_jobs.dashboard.tags"],
        autoescape=True,
    )


def messages_on(request: HttpRequest) -> bool:
    """Whether Django's messages framework serves this request (its middleware ran)."""
    return hasattr(request, "_messages")


def _notices(request: HttpRequest, context: dict[str, Any]) -> list[str]:
    found = [str(message) for message in get_messages(request)] if messages_on(request) else []
    named = context.get("notice")
    if named:
        found.append(str(named))
    return found


def _values(request: HttpRequest, context: dict[str, Any]) -> dict[str, Any]:
    return {
        "now": context.get("now") or clock_now(),
        **context,
        "request": request,
        "csrf_token": get_token(request),  # what {% csrf_token %} reads
        "user": getattr(request, "user", None),
    }


def _respond(html: str, status: int) -> HttpResponse:
    response = HttpResponse(html, status=status, content_type="text/html; charset=utf-8")
    response["Cache-Control"] = "no-store"
    return response


def render(
    request: HttpRequest, template: str, context: dict[str, Any], *, status: int = 200
) -> HttpResponse:
    values = _values(request, context)
    values["notices"] = _notices(request, context)
    return _respond(engine().get_template(template).render(Context(values)), status)


def render_partial(request: HttpRequest, template: str, context: dict[str, Any]) -> HttpResponse:
    """Only `template` (a page's live region), for the live pages' refresh."""
    html = engine().get_template(template).render(Context(_values(request, context)))
    response = _respond(html, 200)
    response[PARTIAL_HEADER] = "1"
    return response


@functools.cache
def content_engine() -> Engine:
    """The engine of a whole page's refresh: ``base.html`` is the content block alone."""
    return Engine(
        dirs=[str(TEMPLATES / "partial"), str(TEMPLATES)],
        libraries={},
        builtins=["anole_jobs.dashboard.tags"],
        autoescape=True,
    )


def render_live(
    request: HttpRequest, template: str, context: dict[str, Any], *, live: bool, refresh: int
) -> HttpResponse:
    """A page that refreshes itself whole while `live` (what it shows can still change): the
    page, or, for its refresh (``?partial=1``), its content only."""
    context = {**context, "live_page": live, "refresh": refresh}
    if request.GET.get("partial") == "1":
        html = content_engine().get_template(template).render(Context(_values(request, context)))
        response = _respond(html, 200)
        response[PARTIAL_HEADER] = "1"
        return response
    return render(request, template, context)


@functools.cache
def live_script() -> bytes:
    return (TEMPLATES / "live.js").read_bytes()
