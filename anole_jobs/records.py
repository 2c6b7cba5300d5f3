"""Public result types: `Enqueued`, `StepReport` and its `RunRecord`s, `QueueRecord`; and a
job's result as stored (`encode_result`, `decode_result`: see docs/results.md). Leaf module."""

from __future__ import annotations

import dataclasses
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal

from anole_jobs.errors import ResultTooLarge

#: The default of ``MAX_RESULT_BYTES``: the largest result, as compact UTF-8 JSON.
MAX_RESULT_BYTES = 1024 * 1024
#: A NUL character's escape in JSON text (an even number of backslashes before it is text).
_NUL = re.compile(r"(?<!\\)(?:\\\\)*\\u0000")

Outcome = Literal["completed", "retried", "dead", "snoozed", "interrupted", "lost"]
OUTCOMES: tuple[Outcome, ...] = ("completed", "retried", "dead", "snoozed", "interrupted", "lost")


@dataclass(frozen=True)
class Enqueued:
    """What `enqueue` returns: the job's id, and False when a unique duplicate was returned.

    `id` is None only for ``on_commit=True`` on a memory or Redis store while the transaction
    is still open: the write happens at commit.
    """

    id: int | None
    inserted: bool

    @property
    def duplicate(self) -> bool:
        """True when this enqueue stored no new job and `id` names the one it joined: a unique
        duplicate, or a debounced enqueue folded into the job already waiting."""
        return self.id is not None and not self.inserted


#: Why a job waits, in the order `jobs.why` looks for them (docs/debounce.md).
WAITING_REASONS: tuple[str, ...] = (
    "scheduled",
    "retry_backoff",
    "queue_paused",
    "concurrency_limit",
    "rate_limit",
    "sequence",
    "dependencies",
    "signal",
    "debounce",
    "no_worker",
    "ready",
)


@dataclass(frozen=True)
class Waiting:
    """What `jobs.why(id)` says of a job not running yet: `reason` (one of `WAITING_REASONS`),
    `detail` for a person, and `until`, when the wait ends if that is known."""

    reason: str
    detail: str
    until: datetime | None = None


@dataclass(frozen=True)
class RunRecord:
    job_id: int
    kind: str
    queue: str
    attempt: int
    outcome: Outcome


@dataclass(frozen=True, kw_only=True)
class StepReport:
    """What one `jobs.step()` did."""

    runs: list[RunRecord] = field(default_factory=list)
    staged: int = 0
    rescued: int = 0
    pruned: int = 0
    cron_enqueued: int = 0
    leader: bool = False

    def outcomes(self) -> dict[int, Outcome]:
        """``{job_id: outcome}`` of this step's runs (the last run of each job)."""
        return {run.job_id: run.outcome for run in self.runs}


@dataclass(frozen=True, kw_only=True)
class QueueLimits:
    """A queue's limits in force (docs/limits.md): `rate_limit` as text ("20/s"), None for
    none; `source` is "runtime" once `jobs.set_limits` stored some, else "settings"."""

    global_concurrency: int | None = None
    rate_limit: str | None = None
    partition: tuple[str, ...] = ()
    source: str = "settings"


@dataclass(frozen=True, kw_only=True)
class QueueRecord:
    """One queue as `jobs.queues()` reports it: whether it is paused, and its jobs
    counted by state (``{state: n}``, states with none omitted); its limits in force and how
    many available jobs they hold back (`held`)."""

    name: str
    paused: bool
    counts: Mapping[str, int]
    limits: QueueLimits = field(default_factory=QueueLimits)
    held: int = 0
    #: When its oldest available job became available (its `scheduled_at`); None when it has
    #: none. Now minus this is the queue's latency (the gauge autoscalers read).
    oldest_available: datetime | None = None


def encode_result(value: object, *, limit: int, where: str = "the handler") -> str | None:
    """A handler's return value as the JSON text the store keeps, or None for None (nothing
    is stored).

    JSON is what ``json.dumps`` accepts without a custom encoder (dicts with str, int, float
    or bool keys, lists, tuples, str, int, float, bool, None), dataclass instances of such
    values included. Refused, as `TypeError`: anything else, NaN and infinities, and strings
    no store can hold (NUL characters, lone surrogates). Refused as `ResultTooLarge`: JSON
    over `limit` bytes of UTF-8.
    """
    if value is None:
        return None
    try:
        text = json.dumps(
            value,
            separators=(",", ":"),
            ensure_ascii=False,
            allow_nan=False,
            default=_dataclass_as_dict,
        )
    except (TypeError, ValueError, RecursionError) as exc:
        raise TypeError(
            f"{where} returned a {type(value).__name__}, which is not a JSON value ({exc}); "
            "return dicts, lists, strings, numbers, booleans or a dataclass of those"
        ) from None
    if "\\u0000" in text and _NUL.search(text):
        raise TypeError(f"{where} returned a string with a NUL character, which no store keeps")
    try:
        size = len(text.encode("utf-8"))
    except UnicodeEncodeError:
        raise TypeError(
            f"{where} returned a string with a lone surrogate, which is not valid UTF-8"
        ) from None
    if size > limit:
        raise ResultTooLarge(
            f"{where} returned {size} bytes of JSON, more than the {limit} bytes "
            "MAX_RESULT_BYTES allows; store large data elsewhere (a file, a model) and return "
            "its key, or raise ANOLE_JOBS['MAX_RESULT_BYTES']"
        )
    return text


def decode_result(text: str | bytes | None) -> Any:
    """The stored JSON text of a result as a value (None when there is none)."""
    return None if text is None else json.loads(text)


def _dataclass_as_dict(value: object) -> object:
    """``json.dumps``'s `default`: a dataclass instance (at any depth) as a dict."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return dataclasses.asdict(value)
    raise TypeError(f"Object of type {type(value).__name__} is not JSON serializable")
