"""Workflows on the database store (the rules are in stores/base.py, "Workflows").

A step is a job row with `workflow_id`, `step_name`, `waiting_on` (dependencies not yet
ended), `ignore_failed`, `ready_delay` (microseconds, counted from readiness) and
`cancelled_by` (the dependency whose failure cancelled it); its edges are rows of the
dependency table. Everything here runs inside the transaction of the write that causes it
(`write_lock`): the finish of a step (`SQLStore.finish` opens one only for a batch with steps
in it, so a plain job's finish pays nothing), a rescue that kills, an admin cancel or retry.

Exactly once under concurrent finishes: the dependents are read ``FOR UPDATE`` (PostgreSQL,
in id order, re-read at their latest version once locked; SQLite holds its one write lock), so
two finishers of the last two dependencies of one step take turns on its row and only the
second sees its count reach zero.
"""

from __future__ import annotations

import json
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from anole_jobs.core import FINAL_STATES, ErrorEntry, WorkflowRow, dependency_failed
from anole_jobs.stores.base import Inserted, NewJob, NewStep, NewWorkflow
from anole_jobs.stores.database.parts import LIVE, SQLParts
from anole_jobs.timeline import CANCELLED

if TYPE_CHECKING:
    from django.db.backends.utils import CursorWrapper


@dataclass
class Settled:
    """What settling steps did: the queues to wake and the ids of the steps it ended."""

    queues: set[str] = field(default_factory=set)
    ended: list[int] = field(default_factory=list)


def _micros(delay: timedelta | None) -> int | None:
    return None if delay is None else delay // timedelta(microseconds=1)


def _ids(store: SQLParts, column: str, ids: Collection[int]) -> tuple[str, list[Any]]:
    """``column IN ids`` with one parameter (`in_list` is for text values)."""
    if store.vendor == "postgresql":
        return f"{column} = ANY(%s::bigint[])", [list(ids)]
    return f"{column} IN (SELECT value FROM json_each(%s))", [json.dumps(list(ids))]


def _lock_rows(store: SQLParts) -> str:
    return " FOR UPDATE OF j" if store.vendor == "postgresql" else ""


def _apply(store: SQLParts, cursor: CursorWrapper, updates: Sequence[list[Any]]) -> None:
    """Write steps' new states in one statement. Each update: id, state, waiting_on,
    scheduled_at (None: keep), finished_at, error entry (dict or None), cancelled_by."""
    if not updates:
        return
    table = store.job_table
    if store.vendor == "postgresql":
        batch = json.dumps(
            [
                [
                    i,
                    state,
                    waiting,
                    None if at is None else at.isoformat(),
                    None if done is None else done.isoformat(),
                    error,
                    by,
                ]
                for i, state, waiting, at, done, error, by in updates
            ]
        )
        cursor.execute(
            f"UPDATE {table} AS j SET state = u.state, waiting_on = u.waiting_on,"
            " scheduled_at = COALESCE(u.scheduled_at, j.scheduled_at),"
            " finished_at = u.finished_at, cancelled_by = u.cancelled_by,"
            " errors = CASE WHEN u.error IS NULL THEN j.errors"
            " ELSE j.errors || jsonb_build_array(u.error) END"
            " FROM (SELECT (r->>0)::bigint AS id, r->>1 AS state, (r->>2)::int AS waiting_on,"
            " (r->>3)::timestamptz AS scheduled_at, (r->>4)::timestamptz AS finished_at,"
            " NULLIF(r->5, 'null'::jsonb) AS error, (r->>6)::bigint AS cancelled_by"
            " FROM jsonb_array_elements(%s::jsonb) AS e(r)) AS u WHERE j.id = u.id",
            [batch],
        )
        return
    batch = json.dumps(
        [
            [
                i,
                state,
                waiting,
                store.encode_time(at),
                store.encode_time(done),
                None if error is None else json.dumps(error),
                by,
            ]
            for i, state, waiting, at, done, error, by in updates
        ]
    )
    fields = ("u_id", "u_state", "u_waiting", "u_at", "u_done", "u_error", "u_by")
    row = ", ".join(f"json_extract(value, '$[{i}]') AS {name}" for i, name in enumerate(fields))
    cursor.execute(
        f"UPDATE {table} SET state = u_state, waiting_on = u_waiting,"
        " scheduled_at = COALESCE(u_at, scheduled_at), finished_at = u_done,"
        " cancelled_by = u_by, errors = CASE WHEN u_error IS NULL THEN errors"
        " ELSE json_insert(errors, '$[#]', json(u_error)) END"
        f" FROM (SELECT {row} FROM json_each(%s)) AS u WHERE id = u_id",
        [batch],
    )


def _ready(
    store: SQLParts,
    row_id: int,
    waiting: int,
    ready_delay: int | None,
    scheduled_at: datetime,
    queue: str,
    now: datetime,
    settled: Settled,
) -> list[Any]:
    """The update that makes a step whose dependencies all ended due."""
    if ready_delay is not None:
        at = now + timedelta(microseconds=ready_delay)
    else:
        at = max(scheduled_at, now)
    state = "scheduled" if at > now else "available"
    if state == "available":
        settled.queues.add(queue)
    return [row_id, state, waiting, at, None, None, None]


def settle_steps(
    store: SQLParts,
    cursor: CursorWrapper,
    ended: Collection[int],
    now: datetime,
    *,
    ended_at: Mapping[int, datetime] | None = None,
) -> Settled:
    """Steps `ended` just ended (in this transaction): release or cancel their pending
    dependents, transitively. Costs one indexed read when none has dependents.

    `ended_at` gives the moment each of them ended when they differ (a worker's batch of
    finishes): a dependent is released or cancelled as of the latest moment one of its
    dependencies in the batch ended; the others use `now`. One batch is settled with one
    read and one write per level of the graph, however many steps it ended."""
    settled = Settled()
    frontier = list(ended)
    when_of: dict[int, datetime] = dict(ended_at or {})
    while frontier:
        where, params = _ids(store, "d.dependency_id", frontier)
        cursor.execute(
            f"SELECT j.id, d.dependency_id, p.state, p.step_name, j.waiting_on,"
            " j.ignore_failed, j.ready_delay, j.scheduled_at, j.queue, j.attempt"
            f' FROM "{store.tables.dependency}" AS d'
            f" JOIN {store.job_table} AS p ON p.id = d.dependency_id"
            f" JOIN {store.job_table} AS j ON j.id = d.job_id"
            f" WHERE {where} AND j.state = 'pending' ORDER BY j.id{_lock_rows(store)}",
            params,
        )
        rows = cursor.fetchall()
        updates: list[list[Any]] = []
        frontier = []
        by_child: dict[int, list[tuple[Any, ...]]] = {}
        for row in rows:
            by_child.setdefault(row[0], []).append(row)
        for child_id, edges in by_child.items():
            _, _, _, _, waiting, ignore_failed, ready_delay, scheduled_at, queue, attempt = edges[0]
            when = max(when_of.get(edge[1], now) for edge in edges)
            cancelled = None
            for _, dep_id, dep_state, dep_name, *_rest in edges:
                if dep_state != "completed" and not ignore_failed:
                    cancelled = (dep_id, dep_state, dep_name)
                    break
                waiting -= 1
            if cancelled is not None:
                dep_id, dep_state, dep_name = cancelled
                error = ErrorEntry(
                    at=when,
                    attempt=attempt,
                    type="DependencyFailed",
                    message=dependency_failed(dep_name, dep_state),
                ).as_json()
                updates.append([child_id, "cancelled", waiting, None, when, error, dep_id])
                settled.ended.append(child_id)
                when_of[child_id] = when
                frontier.append(child_id)
            elif waiting <= 0:
                updates.append(
                    _ready(
                        store,
                        child_id,
                        0,
                        ready_delay,
                        store.decode_time(scheduled_at),  # type: ignore[arg-type]
                        queue,
                        when,
                        settled,
                    )
                )
            else:
                updates.append([child_id, "pending", waiting, None, None, None, None])
        _apply(store, cursor, updates)
    return settled


def announce(store: SQLParts, settled: Settled) -> None:
    """Tell workers and result waiters what settling did, once it is committed."""
    if settled.queues:
        store.send_notify(sorted(settled.queues))
        store.wake_at_commit(settled.queues)
    if settled.ended:
        store.send_done_notify(settled.ended)
        store.finished_at_commit(settled.ended)


# -- the contract's workflow methods -----------------------------------------------------
def insert_workflow(
    store: SQLParts,
    workflow: NewWorkflow,
    steps: Sequence[NewStep],
    *,
    last: bool,
    now: datetime,
) -> list[int]:
    settled = Settled()
    with store.write_lock(), store.cursor() as cursor:
        cursor.execute(
            f'INSERT INTO "{store.tables.workflow}" (id, name, created_at, cancelled)'
            " VALUES (%s, %s, %s, FALSE) ON CONFLICT (id) DO NOTHING",
            [workflow.id, workflow.name, store.encode_time(workflow.created_at)],
        )
        ids: list[int] = []
        if steps:
            jobs = [_pending(step.job) for step in steps]
            ids = sorted(row_id for row_id, _ in store.insert_rows(cursor, jobs))
            _mark_steps(store, cursor, workflow.id, steps, ids)
            # Steps of a fair queue or of a kind with a sequence: their turns and places.
            store.stamp_flow(cursor, jobs, [Inserted(row_id, True) for row_id in ids])
        if last:
            cursor.execute(
                f"SELECT j.id, j.ready_delay, j.scheduled_at, j.queue FROM {store.job_table}"
                " AS j WHERE j.workflow_id = %s AND j.state = 'pending' AND j.waiting_on = 0"
                f" ORDER BY j.id{_lock_rows(store)}",
                [workflow.id],
            )
            _apply(
                store,
                cursor,
                [
                    _ready(store, i, 0, delay, store.decode_time(at), queue, now, settled)  # type: ignore[arg-type]
                    for i, delay, at, queue in cursor.fetchall()
                ],
            )
        if settled.queues:
            store.send_notify(sorted(settled.queues))
    store.wake_at_commit(settled.queues)
    return ids


def _mark_steps(
    store: SQLParts,
    cursor: CursorWrapper,
    workflow_id: str,
    steps: Sequence[NewStep],
    ids: Sequence[int],
) -> None:
    marks = []
    edges: list[list[int]] = []
    for step, row_id in zip(steps, ids, strict=True):
        deps = [ids[i] for i in step.after] + list(step.after_ids)
        marks.append(
            [row_id, step.name, len(deps), bool(step.ignore_failed), _micros(step.ready_delay)]
        )
        edges.extend([row_id, dep] for dep in deps)
    table = store.job_table
    if store.vendor == "postgresql":
        cursor.execute(
            f"UPDATE {table} AS j SET workflow_id = %s, step_name = m.r->>1,"
            " waiting_on = (m.r->>2)::int, ignore_failed = (m.r->>3)::boolean,"
            " ready_delay = (m.r->>4)::bigint"
            " FROM jsonb_array_elements(%s::jsonb) AS m(r) WHERE j.id = (m.r->>0)::bigint",
            [workflow_id, json.dumps(marks)],
        )
        if edges:
            cursor.execute(
                f'INSERT INTO "{store.tables.dependency}" (job_id, dependency_id)'
                " SELECT (r->>0)::bigint, (r->>1)::bigint"
                " FROM jsonb_array_elements(%s::jsonb) AS e(r)",
                [json.dumps(edges)],
            )
        return
    cursor.execute(
        f"UPDATE {table} SET workflow_id = %s, step_name = m_name, waiting_on = m_waiting,"
        " ignore_failed = m_ignore, ready_delay = m_delay"
        " FROM (SELECT json_extract(value, '$[0]') AS m_id,"
        " json_extract(value, '$[1]') AS m_name, json_extract(value, '$[2]') AS m_waiting,"
        " json_extract(value, '$[3]') AS m_ignore, json_extract(value, '$[4]') AS m_delay"
        " FROM json_each(%s)) AS m WHERE id = m_id",
        [workflow_id, json.dumps(marks)],
    )
    if edges:
        cursor.execute(
            f'INSERT INTO "{store.tables.dependency}" (job_id, dependency_id)'
            " SELECT json_extract(value, '$[0]'), json_extract(value, '$[1]')"
            " FROM json_each(%s)",
            [json.dumps(edges)],
        )


def workflow(store: SQLParts, workflow_id: str) -> WorkflowRow | None:
    with store.cursor() as cursor:
        cursor.execute(
            f'SELECT name, created_at, cancelled FROM "{store.tables.workflow}" WHERE id = %s',
            [workflow_id],
        )
        found = cursor.fetchone()
        if found is None:
            return None
        cursor.execute(
            f"SELECT {store.select(steps=True)} FROM {store.job_table}"
            " WHERE workflow_id = %s ORDER BY id",
            [workflow_id],
        )
        steps = tuple(store.record(row) for row in cursor.fetchall())
        cursor.execute(
            f'SELECT d.job_id, d.dependency_id FROM "{store.tables.dependency}" AS d'
            f" JOIN {store.job_table} AS j ON j.id = d.job_id WHERE j.workflow_id = %s"
            " ORDER BY d.id",
            [workflow_id],
        )
        dependencies: dict[int, list[int]] = {step.id: [] for step in steps}
        for job_id, dep_id in cursor.fetchall():
            dependencies.setdefault(job_id, []).append(dep_id)
    return WorkflowRow(
        id=workflow_id,
        name=found[0],
        created_at=store.decode_time(found[1]),  # type: ignore[arg-type]
        cancelled=bool(found[2]),
        steps=steps,
        dependencies={k: tuple(v) for k, v in dependencies.items()},
    )


def cancel_workflow(store: SQLParts, workflow_id: str, *, now: datetime) -> bool | None:
    with store.write_lock(), store.cursor() as cursor:
        lock = " FOR UPDATE" if store.vendor == "postgresql" else ""
        cursor.execute(
            f'SELECT cancelled FROM "{store.tables.workflow}" WHERE id = %s{lock}',
            [workflow_id],
        )
        found = cursor.fetchone()
        if found is None:
            return None
        cursor.execute(
            f'UPDATE "{store.tables.workflow}" SET cancelled = TRUE WHERE id = %s',
            [workflow_id],
        )
        cursor.execute(
            f"UPDATE {store.job_table} SET {store.end_attempt_sql(CANCELLED)},"
            " state = 'cancelled', finished_at = %s,"
            f" lease_until = NULL WHERE workflow_id = %s AND state IN ({LIVE}) RETURNING id",
            [store.encode_time(now), store.encode_time(now), workflow_id],
        )
        ended = [row_id for (row_id,) in cursor.fetchall()]
        store.send_done_notify(ended)
    store.finished_at_commit(ended)
    return not found[0]


def dependency_results(store: SQLParts, job_id: int) -> dict[str, Any]:
    with store.cursor() as cursor:
        cursor.execute(
            f'SELECT p.step_name, p.result FROM "{store.tables.dependency}" AS d'
            f" JOIN {store.job_table} AS p ON p.id = d.dependency_id"
            " WHERE d.job_id = %s AND p.state = 'completed' ORDER BY d.id",
            [job_id],
        )
        return {
            name: (None if result is None else _json(result)) for name, result in cursor.fetchall()
        }


def reopen_steps(store: SQLParts, cursor: CursorWrapper, retried: int) -> None:
    """Step `retried` runs again: the dependents its ending cancelled wait for it again,
    transitively, unless another of their dependencies failed too."""
    frontier = [retried]
    while frontier:
        where, params = _ids(store, "d.dependency_id", frontier)
        cursor.execute(
            f'SELECT j.id, j.ignore_failed FROM "{store.tables.dependency}" AS d'
            f" JOIN {store.job_table} AS j ON j.id = d.job_id"
            f" WHERE {where} AND j.state = 'cancelled' AND j.cancelled_by = d.dependency_id"
            f" ORDER BY j.id{_lock_rows(store)}",
            params,
        )
        children = cursor.fetchall()
        frontier = []
        for child_id, ignore_failed in children:
            cursor.execute(
                f'SELECT p.id, p.state FROM "{store.tables.dependency}" AS d'
                f" JOIN {store.job_table} AS p ON p.id = d.dependency_id WHERE d.job_id = %s"
                " ORDER BY d.id",
                [child_id],
            )
            deps = cursor.fetchall()
            blocker = next((dep for dep, state in deps if state in ("dead", "cancelled")), None)
            if blocker is not None and not ignore_failed:
                cursor.execute(
                    f"UPDATE {store.job_table} SET cancelled_by = %s WHERE id = %s",
                    [blocker, child_id],
                )
                continue
            waiting = sum(1 for _, state in deps if state not in FINAL_STATES)
            cursor.execute(
                f"UPDATE {store.job_table} SET state = 'pending', finished_at = NULL,"
                " cancelled_by = NULL, waiting_on = %s WHERE id = %s",
                [waiting, child_id],
            )
            frontier.append(child_id)


def forget_steps(store: SQLParts, cursor: CursorWrapper, pruned: Sequence[tuple[int, Any]]) -> None:
    """Rows `(id, workflow_id)` were deleted: drop their edges, and each workflow left
    with no step."""
    steps = [row_id for row_id, workflow_id in pruned if workflow_id is not None]
    if not steps:
        return
    where, params = _ids(store, "job_id", steps)
    cursor.execute(f'DELETE FROM "{store.tables.dependency}" WHERE {where}', params)
    workflows = sorted({wf for _, wf in pruned if wf is not None})
    where, params = store.in_list("w.id", workflows)
    cursor.execute(
        f'DELETE FROM "{store.tables.workflow}" AS w WHERE {where}'
        f" AND NOT EXISTS (SELECT 1 FROM {store.job_table} AS j WHERE j.workflow_id = w.id)",
        params,
    )


def _pending(job: NewJob) -> NewJob:
    """A step's job as inserted: pending, never holding a unique key."""
    return replace(job, state="pending", unique_key=None)


def _json(value: Any) -> Any:
    return json.loads(value) if isinstance(value, (str, bytes)) else value
