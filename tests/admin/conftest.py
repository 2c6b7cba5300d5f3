"""Admin tests run on every store (the `env` matrix) and need users: each module marks its
tests `django_db` on the default database (the SQL store params widen that to theirs)."""

from __future__ import annotations

from typing import Any

import pytest

from tests.admin.support import configure_admin, make_users
from tests.support.clients import logged_in


@pytest.fixture
def users() -> dict[str, Any]:
    return make_users()


@pytest.fixture
def staff(env: Any, users: dict[str, Any]) -> Any:
    """A client logged in as the staff user, with the admin surfaces configured for `env`."""
    configure_admin(env)
    return logged_in(users["staff"])
