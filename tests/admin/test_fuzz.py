"""Property-based fuzz of the admin routes, driven by their OpenAPI document (schemathesis
generates valid and invalid requests per operation), plus Hypothesis strategies of our own
for what a schema cannot express: any method on any path, raw bytes that are not UTF-8 in
query strings and paths, and SQL-looking text. The rule: no answer is ever a 5xx (but a 503
with ``Retry-After`` while the store is down), every answer but a 204 is JSON, and the body of
a generated request's answer matches the schema the document gives for its status.

Runs as a logged-in staff user so the requests reach the handlers and the store, with the store
up and with it down.
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
from tests.admin.nofivexx_support import (
    JsonOperation,
    json_operations,
    problems_with,
    schema_problems,
    take_store_down,
)
from tests.admin.support import METHODS, MOUNT, configure_admin
from tests.sampleapp.jobs import Work
from tests.support.clients import staff_client

pytestmark = [pytest.mark.fuzz, pytest.mark.django_db(databases=["default"])]

DOCUMENT = document(server_url=MOUNT.rstrip("/"))
SCHEMA = schemathesis.openapi.from_dict(DOCUMENT)
DOCUMENTED = {(op.path, op.method): op for op in json_operations(DOCUMENT)}
OUTAGES = pytest.mark.parametrize("down", [False, True], ids=["store-up", "store-down"])
OPERATIONS = [result.ok() for result in SCHEMA.get_all_operations()]
FUZZ = settings(
    max_examples=25,
    deadline=None,
    database=None,
    derandomize=True,  # the same examples on every run: a failure here is reproducible
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


def check(
    response: Any, what: str, *, down: bool = False, operation: JsonOperation | None = None
) -> None:
    problems = problems_with(response, down=down)
    assert problems == [], f"{what}: {problems}: {response.content[:300]!r}"
    if response.status_code != 204 and response.request["REQUEST_METHOD"] != "HEAD":
        assert response["Content-Type"] == "application/json", what
        json.loads(response.content)
        if operation is not None:
            mismatches = schema_problems(DOCUMENT, operation, response)
            assert mismatches == [], f"{what}: {mismatches}: {response.content[:300]!r}"


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


@OUTAGES
@pytest.mark.parametrize(("operation", "mode"), CASES)
def test_no_generated_request_gets_a_5xx(env, staff, operation, mode, down):
    documented = DOCUMENTED[(operation.path, operation.method.upper())]

    @FUZZ
    @given(operation.as_strategy(generation_mode=mode))
    def fuzz(case: Any) -> None:
        query = urlencode(case.query or {}, doseq=True)
        url = MOUNT.rstrip("/") + case.formatted_path + (f"?{query}" if query else "")
        response = staff.generic(case.method, url)
        check(response, f"{case.method} {url}", down=down, operation=documented)

    if down:
        with take_store_down(env):
            fuzz()
    else:
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
    """With the store up; the store-down twin of this test is in test_no_server_errors."""
    path = "/".join(
        segment if segment.startswith("%") else quote(segment, safe="") for segment in segments
    )
    qs = "&".join(
        f"{name}={value if value.startswith('%') else quote(value, safe='')}"
        for name, value in query
    )
    url = MOUNT + path + (f"?{qs}" if qs else "")
    check(staff.generic(method, url), f"{method} {url}")
