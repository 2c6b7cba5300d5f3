"""Who may use the surfaces: ``ANOLE_JOBS["ADMIN_PERMISSION"]``, the one rule for the JSON
routes, the dashboard and the Django admin (and checked by ``manage.py check``).

The setting is a dotted path to (or a) ``callable(request) -> bool``; without it, an active
staff user may. `access` says what to do with a request: let it through, ask an anonymous
visitor to log in, or refuse a logged-in one. A permission that raises, or a setting that
cannot be used, refuses (and logs why): a broken permission never opens the door, and never
turns into a server error either. A database that does not answer while the request's user is
read (the sessions may live in the store's own database) is not a refusal but an outage:
`access` lets the database error through and the surfaces answer it as one (503).

A permission may accept a request by another credential (an API token in a header), so it
works for clients with no session: see docs/admin.md.
"""

from __future__ import annotations

import enum
import logging
from collections.abc import Callable
from typing import Any

from django.db import InterfaceError, OperationalError
from django.http import HttpRequest
from django.utils.module_loading import import_string

from anole_jobs import conf
from anole_jobs.errors import ConfigurationError, StoreUnavailable

logger = logging.getLogger("anole_jobs.admin")

Permission = Callable[[HttpRequest], Any]
#: What an outage raises while the permission reads the request's user (Django reads the
#: session and the user lazily, on first use): passed on, not a refusal.
OUTAGE: tuple[type[BaseException], ...] = (OperationalError, InterfaceError, StoreUnavailable)
SETTING = "ANOLE_JOBS['ADMIN_PERMISSION']"


class Access(enum.Enum):
    ALLOWED = "allowed"
    ANONYMOUS = "anonymous"  # refused, and nobody is logged in: ask them to log in
    FORBIDDEN = "forbidden"  # refused, and someone is logged in


def is_active_staff(request: HttpRequest) -> bool:
    """The default permission: an authenticated, active staff user."""
    user = getattr(request, "user", None)
    return bool(
        user is not None
        and getattr(user, "is_authenticated", False)
        and getattr(user, "is_active", False)
        and getattr(user, "is_staff", False)
    )


def setting_problem(value: object) -> str | None:
    """Why `value` cannot be the permission setting, or None when it can (None is the
    default). For the system check and for `configured_permission`."""
    if value is None or (callable(value) and not isinstance(value, str)):
        return None
    if not isinstance(value, str):
        return f"{SETTING} must be a dotted path or a callable, got {value!r}"
    try:
        found = import_string(value)
    except ImportError as exc:
        return f"{SETTING} {value!r} cannot be imported: {exc}"
    if not callable(found):
        return f"{SETTING} {value!r} is not callable"
    return None


def configured_permission() -> Permission:
    """The permission the settings name (read at each request, so settings overrides apply);
    `ConfigurationError` when the setting cannot be used."""
    value = conf.raw_settings().get("ADMIN_PERMISSION")
    problem = setting_problem(value)
    if problem is not None:
        raise ConfigurationError(problem)
    if value is None:
        return is_active_staff
    found: Permission = import_string(value) if isinstance(value, str) else value
    return found


def access(request: HttpRequest) -> Access:
    """Whether `request` may use the surfaces, and if not, whether someone is logged in.

    Raises what `OUTAGE` names when the database holding the sessions or users does not
    answer; the surfaces answer that as a store outage."""
    try:
        allowed = bool(configured_permission()(request))
    except OUTAGE:
        raise
    except ConfigurationError as exc:
        logger.error("%s; the request is refused (manage.py check reports it)", exc)
        allowed = False
    except Exception:
        logger.exception("%s raised; the request is refused", SETTING)
        allowed = False
    if allowed:
        return Access.ALLOWED
    user = getattr(request, "user", None)
    return Access.FORBIDDEN if getattr(user, "is_authenticated", False) else Access.ANONYMOUS


def permitted(request: HttpRequest) -> bool:
    return access(request) is Access.ALLOWED


# -- per action: a read-only role, and a separate permission for deletes and bulk actions ----
#: What an action needs: "view" (any page, any GET), "change" (retry, cancel, pause, resume,
#: limits, signals, triggers, worker controls), "delete" (deleting a job and every bulk
#: action). Each is the Django permission of the `Job` model of that name.
NEEDS = ("view", "change", "delete")
JOB_PERMISSIONS = {need: f"anole_jobs.{need}_job" for need in NEEDS}


def may(request: HttpRequest, need: str) -> bool:
    """Whether a request the surfaces let in (`access`) may take an action that needs `need`.

    A superuser may do everything. A user holding none of the job permissions
    (``anole_jobs.view_job``, ``change_job``, ``delete_job``) keeps what the surfaces always
    allowed: everything (the default: active staff). A user given any of them gets only what
    they give: ``view_job`` alone is read-only; ``change_job`` acts on jobs and queues;
    ``delete_job`` deletes and runs bulk actions (it implies ``change_job``'s rights only
    when held with it). A request without a user (a token a custom ``ADMIN_PERMISSION``
    accepts) may do everything that permission lets in."""
    if need == "view":
        return True
    user = getattr(request, "user", None)
    if user is None or not getattr(user, "is_authenticated", False):
        return True
    if getattr(user, "is_superuser", False):
        return True
    held = {perm for perm in JOB_PERMISSIONS.values() if user.has_perm(perm)}
    if not held:
        return True
    return JOB_PERMISSIONS[need] in held


def refusal(need: str) -> str:
    """The message of a refused action."""
    if need == "delete":
        return (
            "deleting jobs and bulk actions need the permission anole_jobs.delete_job, "
            "which this user does not have"
        )
    return "this user may look but not act: actions need the permission anole_jobs.change_job"
