"""Admin tests run on every store (the `env` matrix) and need users: each module marks its
tests `django_db` on the default database (the SQL store params widen that to theirs)."""

from __future__ import annotations

from typing import Any

import pytest

from tests.admin.support import make_users


@pytest.fixture
def users() -> dict[str, Any]:
    return make_users()
