"""Rendering with the dashboard's own template engine.

The templates live beside this module and are rendered by a private `Engine`, so the
dashboard works whatever the project's `TEMPLATES` setting holds (or if it has none).
"""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

from django.http import HttpRequest, HttpResponse
from django.middleware.csrf import get_token
from django.template import Context, Engine

TEMPLATES = Path(__file__).resolve().parent / "templates" / "anole_jobs" / "dashboard"


@functools.cache
def engine() -> Engine:
    return Engine(dirs=[str(TEMPLATES)], libraries={}, autoescape=True)


def render(
    request: HttpRequest, template: str, context: dict[str, Any], *, status: int = 200
) -> HttpResponse:
    values = {
        **context,
        "request": request,
        "csrf_token": get_token(request),  # what {% csrf_token %} reads
        "user": getattr(request, "user", None),
    }
    html = engine().get_template(template).render(Context(values))
    response = HttpResponse(html, status=status, content_type="text/html; charset=utf-8")
    response["Cache-Control"] = "no-store"
    return response
