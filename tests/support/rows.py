"""Rows written behind the store's back, as an older release or a hand-written INSERT leaves
them."""

from __future__ import annotations

from typing import Any

from anole_jobs.stores.base import NewJob


def insert_undecodable(store: Any, now: Any) -> int:
    """An ``available`` `test.validated` job whose arguments no longer decode (a string where
    its dataclass wants an int); its id."""
    (inserted,) = store.insert(
        [
            NewJob(
                kind="test.validated",
                queue="default",
                args={"count": "three"},
                meta={},
                priority=0,
                max_attempts=5,
                state="available",
                scheduled_at=now,
                created_at=now,
            )
        ]
    )
    return int(inserted.id)
