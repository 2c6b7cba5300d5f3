"""Who may see the dashboard: the JSON admin routes' rule (R31, R41).

`ANOLE_JOBS["ADMIN_PERMISSION"]` (a dotted path or a callable taking the request) decides;
by default, an active staff user. A visitor who is refused goes to `settings.LOGIN_URL` when
anonymous (and comes back after logging in), and gets 403 when logged in.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.conf import settings
from django.contrib.auth.views import redirect_to_login
from django.http import HttpRequest, HttpResponseBase, HttpResponseForbidden
from django.utils.module_loading import import_string

from anole_jobs import conf


def staff_only(request: HttpRequest) -> bool:
    user: Any = getattr(request, "user", None)
    return bool(user is not None and user.is_active and user.is_staff)


def permission_check() -> Callable[[HttpRequest], bool]:
    permission: Any = conf.read_settings().admin_permission
    if permission is None:
        return staff_only
    if isinstance(permission, str):
        permission = import_string(permission)
    return permission


def permitted(request: HttpRequest) -> bool:
    return bool(permission_check()(request))


def refuse(request: HttpRequest) -> HttpResponseBase:
    user: Any = getattr(request, "user", None)
    if user is None or not user.is_authenticated:
        return redirect_to_login(request.get_full_path(), str(settings.LOGIN_URL))
    return HttpResponseForbidden(
        "<!doctype html><title>403 Forbidden</title>"
        "<p>You are logged in, but not allowed to see the jobs dashboard.</p>",
        content_type="text/html; charset=utf-8",
    )
