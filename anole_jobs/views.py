"""Django views of the app that are not the admin API: `metrics` serves the Prometheus text
exposition (docs/observability.md). Mount it behind your own protection:

    path("metrics", anole_jobs.views.metrics)
"""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse

from anole_jobs import metrics as app_metrics


def metrics(request: HttpRequest) -> HttpResponse:
    """The app's metrics (every process's, in prometheus-client's multiprocess mode)."""
    if not app_metrics.available():
        return HttpResponse(
            f"prometheus-client is not installed ({app_metrics.INSTALL_HINT})\n",
            status=503,
            content_type="text/plain; charset=utf-8",
        )
    body, content_type = app_metrics.render()
    return HttpResponse(body, content_type=content_type)
