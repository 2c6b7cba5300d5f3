"""The operators' audit log: every action a surface takes through `operations` is recorded
here (who, what, which target, when, from which surface), so the JSON routes, the dashboard,
the CLI and the Django admin are all covered by the one place they call to act.

A surface says who acts with `acting(actor, surface)` around its call (the routes and the
dashboard from the request's user, the CLI as "cli", the Django admin from its user); an
action outside any `acting` is recorded as actor "code", surface "api". Recording never fails
the action it records: a store error is logged.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

from anole_jobs.api import jobs
from anole_jobs.stores.audit import AuditEntry

logger = logging.getLogger("anole_jobs.admin")

_ACTING: ContextVar[tuple[str, str] | None] = ContextVar("anole_jobs_acting", default=None)


def actor_of(request: Any) -> str:
    """The name a request's user is recorded under ("anonymous" without one)."""
    user = getattr(request, "user", None)
    if user is not None and getattr(user, "is_authenticated", False):
        return str(user.get_username())
    return "anonymous"


@contextmanager
def acting(actor: str, surface: str) -> Iterator[None]:
    """Record the actions taken inside as `actor` on `surface`."""
    token = _ACTING.set((actor, surface))
    try:
        yield
    finally:
        _ACTING.reset(token)


def current() -> tuple[str, str]:
    """(actor, surface) of the actions taken now."""
    return _ACTING.get() or ("code", "api")


def record(action: str, target: str, detail: str = "") -> None:
    """Record that `action` was taken on `target` (after it was)."""
    actor, surface = current()
    try:
        jobs.record_audit(actor=actor, action=action, target=target, surface=surface, detail=detail)
    except Exception:  # noqa: BLE001 - the action happened; its record must not undo that
        logger.exception("could not record %s on %s in the audit log", action, target)


def entries(
    *, action: str | None = None, limit: int = 100, before: int | None = None
) -> list[AuditEntry]:
    return jobs.audit(action=action or None, limit=limit, before=before)
