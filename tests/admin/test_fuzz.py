"""Property-based fuzz of the admin routes, driven by their OpenAPI document (schemathesis
generates valid and invalid requests per operation), plus Hypothesis strategies of our own
for what a schema cannot express: any method on any path, raw bytes that are not UTF-8 in
query strings and paths, and SQL-looking text. The rule: no answer is ever a 5xx, and every
answer but a 204 is JSON.

Runs as a logged-in staff user so the requests reach the handlers and the store.
"""

from __future__ import annotations

import json
from typing import Any
from urllib.parse import quote, urlencode

import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from schemathesis import GenerationMode

from anole_jobs.admin_api.openapi import document
from tests.admin.support import METHODS, MOUNT, configure_admin
from tests.sampleapp.jobs import Work
from tests.support.clients import staff_client

pytestmark = [pytest.mark.fuzz, pytest.mark.django_db(databases=["default"])]

SCHEMA = schemathesis.openapi.from_dict(document(server_url=MOUNT.rstrip("/")))
OPERATIONS = [result.ok() for result in SCHEMA.get_all_operations()]
FUZZ = settings(
    max_examples=25,
    deadline=None,
    database=None,
    suppress_health_check=list(HealthCheck),
)

SQL_LOOKING = st.sampled_from(
    [
        "' OR '1'='1",
        "1; DROP TABLE anole_jobs_job; --",
        "default' --",
        '") OR 1=1 --',
        "%' AND 1=1 --",
        "\\'",
        "1 UNION SELECT * FROM auth_user",
        "*",
        "%",
        "_",
    ]
)
RAW_BYTES = st.binary(min_size=1, max_size=12).map(lambda b: "".join(f"%{x:02X}" for x in b))
TEXT = st.one_of(st.text(max_size=20), SQL_LOOKING, st.integers().map(str))


def check(response: Any, what: str) -> None:
    assert response.status_code < 500, f"{what}: {response.status_code} {response.content[:300]!r}"
    if response.status_code != 204 and response.request["REQUEST_METHOD"] != "HEAD":
        assert response["Content-Type"] == "application/json", what
        json.loads(response.content)


@pytest.fixture
def staff(env, users):
    configure_admin(env)
    env.jobs.enqueue_many([Work(tag=str(i)) for i in range(5)])
    return staff_client(users["staff"])


def breakable(operation: Any) -> bool:
    """Whether schemathesis can make an invalid request: a query parameter, or a path one
    that is not free text (the only invalid free-text path value, "", cannot be sent)."""
    return any(
        param.location == "query" or param.definition["schema"].get("type") != "string"
        for param in operation.iter_parameters()
    )


#: Valid requests for every operation; invalid ones where there is a parameter to break.
CASES = [
    pytest.param(operation, mode, id=f"{operation.label}-{mode.value}")
    for operation in OPERATIONS
    for mode in (GenerationMode.POSITIVE, GenerationMode.NEGATIVE)
    if mode is GenerationMode.POSITIVE or breakable(operation)
]


@pytest.mark.parametrize(("operation", "mode"), CASES)
def test_no_generated_request_gets_a_5xx(env, staff, operation, mode):
    @FUZZ
    @given(operation.as_strategy(generation_mode=mode))
    def fuzz(case: Any) -> None:
        query = urlencode(case.query or {}, doseq=True)
        url = MOUNT.rstrip("/") + case.formatted_path + (f"?{query}" if query else "")
        response = staff.generic(case.method, url)
        check(response, f"{case.method} {url}")

    fuzz()


@given(
    method=st.sampled_from(METHODS),
    segments=st.lists(
        st.one_of(TEXT, RAW_BYTES, st.sampled_from(["jobs", "retry", "queues"])), max_size=4
    ),
    query=st.lists(
        st.tuples(
            st.sampled_from(["state", "queue", "kind", "limit", "after", "x"]),
            st.one_of(TEXT, RAW_BYTES),
        ),
        max_size=4,
    ),
)
@FUZZ
def test_any_method_path_and_query_bytes_get_no_5xx(env, staff, method, segments, query):
    path = "/".join(
        segment if segment.startswith("%") else quote(segment, safe="") for segment in segments
    )
    qs = "&".join(
        f"{name}={value if value.startswith('%') else quote(value, safe='')}"
        for name, value in query
    )
    url = MOUNT + path + (f"?{qs}" if qs else "")
    check(staff.generic(method, url), f"{method} {url}")
