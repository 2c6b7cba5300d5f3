"""Who may use the admin routes: ``ANOLE_JOBS["ADMIN_PERMISSION"]`` (R31).

The setting is a dotted path to (or a) ``callable(request) -> bool``; without it, an active
staff user may. A refused request is answered 401 when nobody is logged in (no
``request.user``, or an anonymous one) and 403 when someone is. So a permission that accepts
a request by another credential — an API token in a header — works for clients that have no
session: see docs/admin.md.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from django.http import HttpRequest
from django.utils.module_loading import import_string

from anole_jobs import conf
from anole_jobs.errors import ConfigurationError

logger = logging.getLogger("anole_jobs.admin")

Permission = Callable[[HttpRequest], Any]


def is_active_staff(request: HttpRequest) -> bool:
    """The default permission: an authenticated, active staff user."""
    user = getattr(request, "user", None)
    return bool(
        user is not None
        and getattr(user, "is_authenticated", False)
        and getattr(user, "is_active", False)
        and getattr(user, "is_staff", False)
    )


def configured_permission() -> Permission:
    """The permission the settings name (read at each request, so settings overrides apply)."""
    value = conf.raw_settings().get("ADMIN_PERMISSION")
    if value is None:
        return is_active_staff
    if callable(value):
        return value
    if not isinstance(value, str):
        raise ConfigurationError(
            f"ANOLE_JOBS['ADMIN_PERMISSION'] must be a dotted path or a callable, got {value!r}"
        )
    try:
        found = import_string(value)
    except ImportError as exc:
        raise ConfigurationError(
            f"ANOLE_JOBS['ADMIN_PERMISSION'] {value!r} cannot be imported: {exc}"
        ) from None
    if not callable(found):
        raise ConfigurationError(f"ANOLE_JOBS['ADMIN_PERMISSION'] {value!r} is not callable")
    return found


def refusal(request: HttpRequest) -> int | None:
    """None when `request` may use the routes, else the status to answer: 401 or 403."""
    try:
        allowed = bool(configured_permission()(request))
    except ConfigurationError:
        raise
    except Exception:  # a broken permission refuses; it never opens the door
        logger.exception("ADMIN_PERMISSION raised; the request is refused")
        allowed = False
    if allowed:
        return None
    user = getattr(request, "user", None)
    return 403 if getattr(user, "is_authenticated", False) else 401
