"""Users and logged-in test clients for the admin routes, the dashboard and the Django admin."""

from __future__ import annotations

from typing import Any

from django.contrib.auth import get_user_model
from django.test import Client

#: The staff user's name and password (the browser test types them into the login form).
STAFF_USERNAME = "ops"
STAFF_PASSWORD = "correct horse"


def make_staff(username: str = STAFF_USERNAME, password: str = STAFF_PASSWORD) -> Any:
    """A staff user (not a superuser): what the admin routes and the dashboard let in."""
    return get_user_model().objects.create_user(username, password=password, is_staff=True)


def make_users() -> dict[str, Any]:
    """A staff user ("staff") and one without any permission ("plain")."""
    return {"staff": make_staff(), "plain": get_user_model().objects.create_user("someone")}


def logged_in(user: Any, **client_options: Any) -> Client:
    """A test client with a session for `user` (`client_options` go to `Client`)."""
    client = Client(**client_options)
    client.force_login(user)
    return client


def staff_client(user: Any | None = None, **client_options: Any) -> Client:
    """A test client logged in as `user`, or as a fresh staff user."""
    return logged_in(make_staff() if user is None else user, **client_options)
