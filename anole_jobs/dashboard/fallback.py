"""What the dashboard answers for a path it has no page at: the path with its trailing
slash, when that is a page (a redirect), else a 404 page in HTML, as every dashboard page is
(never the JSON routes' 404). The mount root (``ops/jobs/``) sends a browser to the
dashboard; a JSON client still gets the JSON 404 there.
"""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse, HttpResponseBase, HttpResponseRedirect
from django.urls import Resolver404, resolve, reverse

from anole_jobs.admin_api import views as admin_views
from anole_jobs.dashboard.pages import dashboard_view
from anole_jobs.operations.problems import NotFound

#: This view's URL name (in the ``anole_jobs`` namespace).
NAME = "dashboard_fallback"


def _with_slash(request: HttpRequest) -> str | None:
    """The path with a trailing slash, when that is a dashboard page."""
    path = request.path_info
    if path.endswith("/"):
        return None
    try:
        match = resolve(path + "/")
    except Resolver404:
        return None
    if match.url_name == NAME or match.namespaces[-1:] != ["dashboard"]:
        return None
    return request.path + "/"


@dashboard_view
def not_found(request: HttpRequest) -> HttpResponse:
    """Permission first (as every dashboard page), then the redirect or the 404 page."""
    target = _with_slash(request)
    if target is not None and request.method in ("GET", "HEAD"):
        query = request.META.get("QUERY_STRING", "")
        return HttpResponseRedirect(target + (f"?{query}" if query else ""))
    message = f"The dashboard has no page at {request.path}."
    if target is not None:
        message += f" Did you mean {target}?"
    raise NotFound(message)


@dashboard_view
def _to_dashboard(request: HttpRequest) -> HttpResponse:
    return HttpResponseRedirect(reverse("anole_jobs:dashboard:queues"))


def mount_root(request: HttpRequest) -> HttpResponseBase:
    """``GET ops/jobs/`` from a browser (it accepts HTML): to the dashboard; from anything
    else (a JSON client, any other method), the JSON routes' 404."""
    if request.method in ("GET", "HEAD") and "text/html" in request.META.get("HTTP_ACCEPT", ""):
        return _to_dashboard(request)
    return admin_views.not_found(request)
