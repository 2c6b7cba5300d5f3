"""What the SQL store's parts share with `SQLStore` without importing it: the state lists as
SQL literals, and `SQLParts`, the part of `SQLStore` that `workflows` calls. `base` (which
defines `SQLStore`) imports its parts (`workflows`, `limits`, `workers`); they import this
module and never `base`, so each dependency goes one way."""

from __future__ import annotations

from collections.abc import Collection, Sequence
from contextlib import AbstractContextManager
from datetime import datetime
from typing import TYPE_CHECKING, Any, Protocol

from anole_jobs.core import FINAL_STATES, LIVE_STATES, STATES, JobRecord

if TYPE_CHECKING:
    from django.db.backends.utils import CursorWrapper

    from anole_jobs.stores.base import Inserted, NewJob
    from anole_jobs.stores.database.ddl import Tables


def literals(states: Collection[str]) -> str:
    """States as a SQL list of literals (only known state names ever reach SQL text)."""
    for state in states:
        if state not in STATES:
            raise ValueError(f"unknown job state {state!r}")
    return ", ".join(f"'{state}'" for state in states)


#: A job's claim key (`core.claim_key`): what a claim's `kinds` names, the kind for version 1
#: and ``kind@N`` above (docs/deploys.md). Each claim compares it with the worker's kinds.
CLAIM_KEY_SQL = "(CASE WHEN version <= 1 THEN kind ELSE kind || '@' || version END)"

LIVE = literals(LIVE_STATES)
FINAL = literals(FINAL_STATES)


class SQLParts(Protocol):
    """The statements and helpers of `SQLStore` its parts use (`SQLStore` is one)."""

    vendor: str
    tables: Tables
    #: The quoted name of the job table.
    job_table: str

    def cursor(self) -> CursorWrapper: ...
    def write_lock(self) -> AbstractContextManager[None]: ...
    def encode_time(self, value: datetime | None) -> Any: ...
    def decode_time(self, value: Any) -> datetime | None: ...
    def in_list(self, column: str, values: Collection[Any]) -> tuple[str, list[Any]]: ...
    def select(self, alias: str = "", *, steps: bool = False) -> str: ...
    def end_attempt_sql(self, outcome: str) -> str: ...
    def record(self, row: Sequence[Any]) -> JobRecord: ...
    def insert_rows(
        self, cursor: CursorWrapper, jobs: Sequence[NewJob]
    ) -> list[tuple[int, Any]]: ...
    def stamp_flow(
        self, cursor: CursorWrapper, jobs: Sequence[NewJob], results: Sequence[Inserted]
    ) -> None: ...
    def send_notify(self, queues: Sequence[str]) -> None: ...
    def send_done_notify(self, job_ids: Sequence[int]) -> None: ...
    def wake_at_commit(self, queues: Collection[str]) -> None: ...
    def finished_at_commit(self, job_ids: Collection[int]) -> None: ...
