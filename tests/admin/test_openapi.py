"""The OpenAPI document is built from the same route list as the URLconf: every route is in
it with every status it answers, and every path in it resolves to its route.

(The table in test_routes.py checks the other direction on every store: each status a request
actually got is one the document lists for that path and method.)
"""

from __future__ import annotations

import re

from django.urls import resolve

from anole_jobs.admin_api import urls as admin_urls
from anole_jobs.admin_api.openapi import document
from anole_jobs.admin_api.routes import COMMON_STATUSES, ROUTES, WRONG_METHOD
from tests.admin.support import MOUNT

EXAMPLES = {
    "job_id": "42",
    "name": "reports/eu",
    "action": "retry",
    "workflow_id": "4f0c2a",
    "worker_id": "box-1:42:a1b2c3",
}


def test_every_route_and_method_is_in_the_document_with_its_statuses():
    doc = document()
    assert doc["openapi"] == "3.1.0"
    assert set(doc["paths"]) == {route.openapi_path for route in ROUTES}
    for route in ROUTES:
        item = doc["paths"][route.openapi_path]
        assert item["x-allow"] == list(route.methods)
        for operation in route.operations:
            responses = item[operation.method.lower()]["responses"]
            assert set(responses) == {str(s) for s in operation.statuses}, route.path
            assert {str(s) for s in COMMON_STATUSES} <= set(responses)
            assert str(operation.ok) in responses
        listed = {key for key in item if key in {"get", "post", "put", "patch", "delete"}}
        assert listed == {op.method.lower() for op in route.operations}
    assert doc["components"]["responses"]["MethodNotAllowed"]["headers"]["Allow"]
    assert str(WRONG_METHOD) not in {
        status
        for item in doc["paths"].values()
        for op in item.values()
        if isinstance(op, dict)
        for status in op.get("responses", {})
    }


def test_the_statuses_are_the_ones_the_spec_names():
    doc = document()
    statuses = {
        (path, method, status)
        for path, item in doc["paths"].items()
        for method, op in item.items()
        if isinstance(op, dict)
        for status in op["responses"]
    }
    assert ("/jobs/{job_id}", "delete", "204") in statuses
    assert ("/jobs", "get", "400") in statuses
    for path in ("/jobs/{job_id}", "/jobs/{job_id}/retry", "/jobs/{job_id}/cancel"):
        assert any(p == path and s == "404" for p, _, s in statuses)
    assert ("/cron/{name}/trigger", "post", "404") in statuses
    assert doc["paths"]["/queues/{name}/pause"]["post"]["responses"]["200"]["content"]


def test_every_document_path_resolves_to_its_route():
    for route in ROUTES:
        url = MOUNT + re.sub(r"\{(\w+)\}", lambda m: EXAMPLES[m.group(1)], route.openapi_path[1:])
        match = resolve(url)
        assert match.url_name == route.name, (url, match.url_name)
        for name, value in match.kwargs.items():
            assert value == EXAMPLES[name]


def test_the_urlconf_has_one_pattern_per_route_plus_the_fallback():
    names = [pattern.name for pattern in admin_urls.urlpatterns]
    assert names == [route.name for route in ROUTES]
    assert [p.name for p in admin_urls.fallback] == ["not-found"]
    assert resolve(MOUNT + "no/such\nroute").url_name == "not-found"
