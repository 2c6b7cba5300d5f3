"""Search and bulk actions at the store seam: what a search filter matches, and the batch
bounds every store keeps.

A `ListFilter` may carry three search terms besides its exact filters:

- ``kind_prefix``: the job's kind starts with this text (``"billing."`` matches
  ``billing.refund`` and ``billing.invoice``);
- ``error``: the job's last error, written ``"<type>: <message>"``, contains this text,
  compared without regard to case;
- ``args``: the job's arguments contain this JSON object, as PostgreSQL's ``jsonb @>`` reads
  it: each key of it is in the arguments with a value that contains its value (objects key by
  key, arrays element by element in any order, numbers by value, other values equal).

A search may read many jobs to find few, so the caller bounds it with ``min_id``: a store then
looks only at jobs with ids from ``min_id`` up to ``after`` (an id window), and no store reads
more than that window holds. This module owns the rule as Python, for the stores that test it
in Python (memory, Redis, SQLite's argument test); PostgreSQL writes the same rule in SQL.

It imports nothing of the runtime: stores use it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Literal

#: Most job ids one bulk action call (`Store.act`) takes; callers loop in batches this big.
BULK_BATCH_MAX = 1000

BulkAction = Literal["retry", "cancel", "delete"]
BULK_ACTIONS: tuple[BulkAction, ...] = ("retry", "cancel", "delete")


def json_contains(actual: Any, wanted: Any) -> bool:
    """Whether JSON value `actual` contains `wanted`, as PostgreSQL's ``jsonb @>`` decides."""
    if isinstance(wanted, Mapping):
        return isinstance(actual, Mapping) and all(
            key in actual and json_contains(actual[key], value) for key, value in wanted.items()
        )
    if isinstance(wanted, list):
        return isinstance(actual, list) and all(
            any(json_contains(item, part) for item in actual) for part in wanted
        )
    if isinstance(wanted, bool) or isinstance(actual, bool):
        return isinstance(wanted, bool) and isinstance(actual, bool) and wanted == actual
    if isinstance(wanted, (int, float)):
        return isinstance(actual, (int, float)) and actual == wanted
    return bool(type(actual) is type(wanted) and actual == wanted)


def last_error_text(errors: Sequence[Mapping[str, Any]]) -> str:
    """The last error as search reads it, ``"<type>: <message>"`` ("" when there is none)."""
    if not errors:
        return ""
    last = errors[-1]
    return f"{last.get('type') or ''}: {last.get('message') or ''}"


def error_matches(errors: Sequence[Mapping[str, Any]], text: str) -> bool:
    return bool(errors) and text.lower() in last_error_text(errors).lower()


def searches(filter: Any) -> bool:
    """Whether `filter` (a `ListFilter`) carries a search term."""
    return filter.kind_prefix is not None or filter.error is not None or filter.args is not None


def search_matches(
    filter: Any, *, kind: str, args: Mapping[str, Any], errors: Sequence[Mapping[str, Any]]
) -> bool:
    """Whether a job with this kind, arguments and errors matches `filter`'s search terms."""
    if filter.kind_prefix is not None and not kind.startswith(filter.kind_prefix):
        return False
    if filter.error is not None and not error_matches(errors, filter.error):
        return False
    return filter.args is None or json_contains(args, filter.args)
