"""Rows written behind the store's back, as an older release or a hand-written INSERT leaves
them."""

from __future__ import annotations

from typing import Any

from anole_jobs.testing.contract import new_job


def insert_undecodable(store: Any, now: Any) -> int:
    """An ``available`` `test.validated` job whose arguments no longer decode (a string where
    its dataclass wants an int); its id."""
    (inserted,) = store.insert(
        [new_job(at=now, kind="test.validated", args={"count": "three"}, max_attempts=5)]
    )
    return int(inserted.id)
