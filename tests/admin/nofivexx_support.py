"""Shared pieces of the "no server error, ever" tests: who asks, what a person can reach, how a
store is taken down for real, and the checks every answer must pass.

Everything here speaks to the surfaces from outside: URLs, statuses, headers, bodies, and the
`manage.py jobs` command's exit status and output. The JSON routes are read from the OpenAPI
document the routes serve, so a route added later is in the matrix without a change here.

Who asks (`ASKERS`): nobody logged in, a logged-in user who is not staff, a staff user, and a
staff user under an ``ADMIN_PERMISSION`` that refuses everyone or that raises.

A store that is down (`take_store_down`): a closed port for PostgreSQL and Redis, a database
file that cannot be opened for SQLite, and for the memory store (which has no server) every
store call failing with `StoreUnavailable`.
"""

from __future__ import annotations

import contextlib
import io
import json
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.core.management import ManagementUtility
from django.db import connections
from django.test import Client

from anole_jobs.errors import StoreUnavailable
from anole_jobs.stores.base import Store
from tests.admin.support import CRON_ENTRY, MOUNT
from tests.support.clients import logged_in
from tests.support.network import free_port

DASHBOARD = MOUNT + "dashboard/"
ADMIN = "/admin/"
ADMIN_JOBS = "/admin/anole_jobs/job/"
LOGIN_PATHS = ("/accounts/login/", "/login/", "/admin/login/")
#: What a Python traceback or Django's debug page looks like in a body.
TRACEBACK_MARKERS = ("Traceback (most recent call last)", "Exception Value:", 'File "/')
#: A queue name with a slash, configured in QUEUES: every surface must cope with it.
SLASHED_QUEUE = "reports/eu"


def refuse_everyone(request: Any) -> bool:
    """An ``ADMIN_PERMISSION`` that says no to everyone."""
    return False


class PermissionBackendDown(RuntimeError):
    pass


def raising_permission(request: Any) -> bool:
    """An ``ADMIN_PERMISSION`` that raises, as one calling a service that is down would."""
    raise PermissionBackendDown("the permission service did not answer")


@dataclass(frozen=True)
class Asker:
    name: str
    user: str | None  # "staff" or "plain": logged in with a session
    permission: str | None  # ADMIN_PERMISSION, a dotted path

    @property
    def allowed(self) -> bool:
        return self.user == "staff" and self.permission is None


ASKERS = (
    Asker("anonymous", None, None),
    Asker("logged-in-not-staff", "plain", None),
    Asker("staff", "staff", None),
    Asker("staff-refused-by-permission", "staff", "tests.admin.nofivexx_support.refuse_everyone"),
    Asker("staff-permission-raises", "staff", "tests.admin.nofivexx_support.raising_permission"),
)
STAFF = ASKERS[2]


def make_users() -> dict[str, Any]:
    users = get_user_model().objects
    return {
        "staff": users.create_user("ops-nofivexx", is_staff=True),
        "plain": users.create_user("someone-nofivexx"),
    }


def configure(env: Any, asker: Asker | None = None, *, slashed_queue: bool = False) -> None:
    """The cron entry, the asker's permission and, if asked, a queue named with a slash in
    QUEUES."""
    settings: dict[str, Any] = {"CRON": [CRON_ENTRY]}
    if slashed_queue:
        settings["QUEUES"] = {**env.settings.ANOLE_JOBS.get("QUEUES", {}), SLASHED_QUEUE: {}}
    if asker is not None and asker.permission is not None:
        settings["ADMIN_PERMISSION"] = asker.permission
    env.configure(**settings)


def client_for(asker: Asker, users: dict[str, Any]) -> Client:
    """A client that answers as a browser sees it: an exception in a view is a 500 response,
    not an exception in the test."""
    if asker.user is None:
        return Client(raise_request_exception=False)
    return logged_in(users[asker.user], raise_request_exception=False)


# -- the checks every answer passes -----------------------------------------------------------


def body_text(response: Any) -> str:
    if getattr(response, "streaming", False):
        return b"".join(response.streaming_content).decode(errors="replace")
    return bytes(response.content).decode(errors="replace")


def problems_with(response: Any, *, down: bool) -> list[str]:
    """What is wrong with `response` by the rule "never a server error, never a traceback":
    a 5xx is allowed only as a 503 with ``Retry-After`` while the store is down."""
    found = []
    status = response.status_code
    if status >= 500:
        if not (down and status == 503):
            found.append(f"status {status}")
        elif not response.get("Retry-After", "").strip().isdigit():
            found.append(f"503 without a Retry-After in seconds ({response.get('Retry-After')!r})")
    text = body_text(response)
    for marker in TRACEBACK_MARKERS:
        if marker in text:
            found.append(f"a traceback in the body ({marker!r})")
    return found


def describe(method: str, url: str, response: Any) -> str:
    return f"{method} {url} -> {response.status_code}: {body_text(response)[:200]!r}"


def is_html(response: Any) -> bool:
    return str(response.get("Content-Type", "")).startswith("text/html")


def is_json(response: Any) -> bool:
    if response.get("Content-Type") != "application/json":
        return False
    try:
        json.loads(body_text(response))
    except ValueError:
        return False
    return True


def login_redirect(response: Any) -> bool:
    location = str(response.get("Location", ""))
    return response.status_code == 302 and any(path in location for path in LOGIN_PATHS)


# -- the JSON routes, read from the document they serve ---------------------------------------


@dataclass(frozen=True)
class JsonOperation:
    path: str  # "/jobs/{job_id}", relative to the mount
    method: str
    ok: int
    responses: dict[str, Any]

    def url(self, *, job_id: int | str, name: str | None = None) -> str:
        cron = self.path.startswith("/cron")
        value = name if name is not None else ("nightly" if cron else "default")
        path = self.path.replace("{job_id}", str(job_id)).replace("{name}", value)
        if path.startswith("/bulk"):  # a bulk action needs a filter: one that matches nothing
            path = path.replace("{action}", "retry") + "?kind=no.such.kind"
        path = path.replace("{workflow_id}", "{workflow}")  # filled by the caller
        return MOUNT.rstrip("/") + path


def json_operations(document: dict[str, Any]) -> list[JsonOperation]:
    operations = []
    for path, item in document["paths"].items():
        for method, operation in item.items():
            if method.upper() not in ("GET", "POST", "PUT", "PATCH", "DELETE"):
                continue
            ok = min(int(status) for status in operation["responses"] if status.startswith("2"))
            operations.append(JsonOperation(path, method.upper(), ok, operation["responses"]))
    return operations


def schema_problems(document: dict[str, Any], operation: JsonOperation, response: Any) -> list[str]:
    """Whether the answer's status is documented for the operation, and its body matches the
    schema the document gives for that status."""
    import jsonschema_rs  # schemathesis's validator

    if response.status_code == 204:
        return []
    listed = operation.responses.get(str(response.status_code))
    if listed is None:
        return [f"status {response.status_code} is not in the OpenAPI document"]
    if "$ref" in listed:
        listed = document["components"]["responses"][listed["$ref"].rsplit("/", 1)[1]]
    schema = listed.get("content", {}).get("application/json", {}).get("schema")
    if schema is None:
        return []
    validator = jsonschema_rs.Draft202012Validator({**schema, "components": document["components"]})
    return [
        f"body does not match the OpenAPI schema: {error.message}"
        for error in validator.iter_errors(json.loads(response.content))
    ][:3]


# -- a store that is down ---------------------------------------------------------------------


def closed_port() -> int:
    """A port nothing listens on (bound and released: connections to it are refused)."""
    return free_port()


#: Every operation of the store contract: a switched-off memory store refuses them all, so a
#: method a later change adds is switched off too.
STORE_METHODS = tuple(
    name
    for name, member in vars(Store).items()
    if callable(member) and not name.startswith("_") and name != "close"
)


@contextlib.contextmanager
def take_store_down(env: Any) -> Iterator[None]:
    """The store stops answering until the block ends.

    PostgreSQL: the store's database alias points at a closed port. Redis: the store's cache
    points at a closed port. SQLite: the database file is out of reach (in a directory that
    does not exist). Memory (no server to stop): every store call raises `StoreUnavailable`.
    """
    if env.name == "memory":
        with pytest.MonkeyPatch.context() as patch:

            def unavailable(*args: Any, **kwargs: Any) -> Any:
                raise StoreUnavailable("the memory store is switched off by the test")

            for method in STORE_METHODS:
                if hasattr(env.store, method):
                    patch.setattr(env.store, method, unavailable)
            yield
        return
    if env.name in ("redis", "redis_cluster"):
        saved_caches, saved_jobs = env.settings.CACHES, env.settings.ANOLE_JOBS
        cache = saved_caches[env.settings.ANOLE_JOBS["STORE"]["redis"]]
        env.settings.CACHES = {
            **saved_caches,
            "jobs_down": {
                **cache,
                "LOCATION": f"redis://127.0.0.1:{closed_port()}/0",
                "OPTIONS": {
                    **cache.get("OPTIONS", {}),
                    "SOCKET_CONNECT_TIMEOUT": 1,
                    "SOCKET_TIMEOUT": 1,
                },
            },
        }
        env.configure(STORE={"redis": "jobs_down"})
        try:
            yield
        finally:
            env.settings.ANOLE_JOBS = saved_jobs
            env.settings.CACHES = saved_caches
        return
    alias = env.alias
    assert alias is not None, env.name
    connection = connections[alias]
    saved = dict(connection.settings_dict)
    connection.close()
    if env.name == "postgres":
        connection.settings_dict["PORT"] = str(closed_port())
        connection.settings_dict["OPTIONS"] = {**saved.get("OPTIONS", {}), "connect_timeout": 2}
    else:
        connection.settings_dict["NAME"] = "/nonexistent-anole-test-dir/jobs.sqlite3"
    try:
        yield
    finally:
        connection.close()
        connection.settings_dict.clear()
        connection.settings_dict.update(saved)


# -- the command line, as a shell runs it -----------------------------------------------------


@dataclass(frozen=True)
class Ran:
    args: tuple[str, ...]
    code: int
    out: str
    err: str
    crashed: str | None  # an exception that escaped: a traceback in a real process

    def __str__(self) -> str:
        return (
            f"manage.py jobs {' '.join(self.args)} -> exit {self.code}"
            f"{f', crashed: {self.crashed}' if self.crashed else ''}; "
            f"stdout {self.out[-200:]!r}; stderr {self.err[-300:]!r}"
        )


def run_jobs_command(*args: str) -> Ran:
    """``manage.py jobs ARGS`` in this process, exactly as `manage.py` runs a command (Django's
    `run_from_argv`: a `CommandError` becomes one line on stderr and its exit status); an
    exception that escapes is what a real process would print as a traceback."""
    out, err = io.StringIO(), io.StringIO()
    code = 0
    crashed = None
    argv = ["manage.py", "jobs", *args]
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            ManagementUtility(argv).fetch_command("jobs").run_from_argv(argv)
        except SystemExit as exit_:
            code = exit_.code if isinstance(exit_.code, int) else 1
        except Exception as exc:  # noqa: BLE001 - the very thing the tests look for
            crashed = f"{type(exc).__name__}: {exc}"
            code = 1
    return Ran(tuple(args), code, out.getvalue(), err.getvalue(), crashed)


def cli_problems(ran: Ran, *, store_down: bool = False) -> list[str]:
    """Never a traceback; exit 0, 1 with a line per problem on stderr (one line in all when
    the store is down), or argparse's usage error (2) ending in an ``error:`` line."""
    found = []
    if ran.crashed is not None:
        found.append(f"an exception escaped ({ran.crashed})")
    text = ran.out + ran.err
    if any(marker in text for marker in TRACEBACK_MARKERS):
        found.append("a traceback in the output")
    allowed = (1,) if store_down else (0, 1, 2)
    if ran.code not in allowed:
        found.append(f"exit status {ran.code}, expected {' or '.join(map(str, allowed))}")
    # Lines as a terminal breaks them: at "\n" only. (str.splitlines() also breaks at "\x85"
    # and other Unicode separators, which argparse echoes back from a hostile argument.)
    lines = [line for line in ran.err.split("\n") if line.strip()]
    if ran.code == 1 and ran.crashed is None:
        if not lines:
            found.append("exit 1 with nothing on stderr")
        if store_down and len(lines) != 1:
            found.append(f"{len(lines)} lines on stderr, not one")
        if any(line[0].isspace() for line in lines):
            found.append("a message that runs over several lines")
    if ran.code == 2 and not (lines and ": error: " in lines[-1]):
        found.append("a usage error without an 'error:' line")
    return found
