"""Helpers for the admin tests: who is asking, the custom permission, and a store env with
users and a cron entry.

`PRINCIPALS` are the askers every route is tried with: nobody logged in, a user without the
permission, a staff user, and — with a custom ``ADMIN_PERMISSION`` that checks a header — a
client holding the token (no session at all) and a staff user without it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.test import Client

# Re-exported: the admin tests' conftest and older tests import it from here.
from tests.support.clients import make_users as make_users

MOUNT = "/ops/jobs/"
TOKEN_HEADER = "X-Ops-Token"
TOKEN = "s3cret-token"
CUSTOM_PERMISSION = "tests.admin.support.token_permission"
CRON_ENTRY = {"name": "nightly", "schedule": "0 3 * * *", "job": "tests.sampleapp.jobs.Work"}
METHODS = ("GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS")


def token_permission(request: Any) -> bool:
    """The documented example: a permission that checks an API token in a header."""
    return request.headers.get(TOKEN_HEADER) == TOKEN


@dataclass(frozen=True)
class Principal:
    name: str
    custom_permission: bool  # ADMIN_PERMISSION = CUSTOM_PERMISSION
    user: str | None  # "staff" or "plain": logged in with a session
    token: bool  # sends the token header
    allowed: bool
    refusal: int | None  # the status when refused


PRINCIPALS = (
    Principal("anonymous", False, None, False, False, 401),
    Principal("no-permission", False, "plain", False, False, 403),
    Principal("staff", False, "staff", False, True, None),
    Principal("token", True, None, True, True, None),
    Principal("staff-without-token", True, "staff", False, False, 403),
)


def client_for(principal: Principal, users: dict[str, Any], **client_options: Any) -> Client:
    headers = {TOKEN_HEADER: TOKEN} if principal.token else {}
    client = Client(headers=headers, **client_options)
    if principal.user is not None:
        client.force_login(users[principal.user])
    return client


def configure_admin(env: Any, principal: Principal | None = None) -> None:
    extra: dict[str, Any] = {"CRON": [CRON_ENTRY]}
    if principal is not None and principal.custom_permission:
        extra["ADMIN_PERMISSION"] = CUSTOM_PERMISSION
    env.configure(**extra)
