"""What the dashboard shows a visitor `anole_jobs.operations.permissions` refuses.

An anonymous visitor goes to the login page and comes back after logging in (``?next=``);
a logged-in one gets a 403 page. The login page is ``settings.LOGIN_URL``; when a project
left it at Django's default (``/accounts/login/``, which a fresh ``startproject`` site does
not serve) and has the Django admin installed and mounted, it is the admin's login page.
"""

from __future__ import annotations

from django.apps import apps
from django.conf import settings
from django.contrib.auth.views import redirect_to_login
from django.http import HttpRequest, HttpResponseBase, HttpResponseForbidden
from django.urls import NoReverseMatch, reverse

from anole_jobs.operations.permissions import Access


def _login_url_set() -> bool:
    """Whether the project set LOGIN_URL (in its settings module or an override)."""
    return bool(settings.is_overridden("LOGIN_URL"))  # type: ignore[misc]


def login_url() -> str:
    """Where an anonymous visitor logs in."""
    if not _login_url_set() and apps.is_installed("django.contrib.admin"):
        try:
            return reverse("admin:login")
        except NoReverseMatch:
            pass  # the admin is installed but not mounted
    return str(settings.LOGIN_URL)


def refuse(request: HttpRequest, access: Access) -> HttpResponseBase:
    if access is Access.ANONYMOUS:
        return redirect_to_login(request.get_full_path(), login_url())
    return HttpResponseForbidden(
        "<!doctype html><title>403 Forbidden</title>"
        "<p>You are logged in, but not allowed to see the jobs dashboard.</p>",
        content_type="text/html; charset=utf-8",
    )
