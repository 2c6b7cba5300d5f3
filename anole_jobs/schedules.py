"""Cron schedules: the `CRON` entries, parsed and validated, and their tick arithmetic.

A leaf: it imports only `bounds`, `codec`, `errors`, `kinds` and `unique` (and cronsim, a
five-field cron parser that follows Debian cron, including its daylight-saving rules). What
runs the entries lives elsewhere: the leader's duty in `maintenance/cron.py`, the admin calls
in the service.

- **Parsing and validation** (`parse_cron`, `validate_cron`, `load_cron`): every problem of
  every entry is reported at once, each message naming the entry. The system checks report
  them as ``anole_jobs.E009``; `runjobs` calls `load_cron` and refuses to start.
- **Tick arithmetic** (`CronEntry.next_after`, `CronEntry.latest_between`).

cronsim is a required dependency. It is still imported only when `CRON` has entries, so that a
broken install shows up as one system check error (`parser_problem`) rather than at import.
"""

from __future__ import annotations

import difflib
import logging
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta, tzinfo
from typing import TYPE_CHECKING, Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from django.utils.module_loading import import_string

from anole_jobs import codec
from anole_jobs.bounds import name_problem
from anole_jobs.errors import ConfigurationError, InvalidJob
from anole_jobs.kinds import check_priority, spec_of

if TYPE_CHECKING:
    from anole_jobs.conf import Settings

logger = logging.getLogger("anole_jobs.cron")

ENTRY_KEYS = ("name", "schedule", "job", "args", "timezone", "queue", "priority", "meta")
REQUIRED_KEYS = ("name", "schedule", "job")
DEFAULT_TIMEZONE = "UTC"
#: cronsim gives up after 50 years without a match; looking further back is pointless.
_HORIZON = timedelta(days=366 * 50)
_NICKNAMES = {
    "@yearly": "0 0 1 1 *",
    "@annually": "0 0 1 1 *",
    "@monthly": "0 0 1 * *",
    "@weekly": "0 0 * * 0",
    "@daily": "0 0 * * *",
    "@midnight": "0 0 * * *",
    "@hourly": "0 * * * *",
}
_REFERENCE = datetime(2000, 1, 1, tzinfo=UTC)  # where validation looks for a first match


# -- entries -----------------------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class CronEntry:
    """One valid `CRON` entry, with its job type imported and its time zone loaded."""

    name: str
    schedule: str
    timezone: str
    job_type: type
    kind: str
    args: Mapping[str, Any] = field(default_factory=dict)
    queue: str | None = None
    priority: int | None = None
    meta: Mapping[str, Any] = field(default_factory=dict)
    tz: tzinfo = field(default=UTC, compare=False, repr=False)

    def args_instance(self) -> object:
        """A fresh args dataclass for one job (decoded each time: dataclasses may be mutable)."""
        return codec.decode_args(self.job_type, dict(self.args))

    # -- ticks ---------------------------------------------------------------------------------
    def ticks_after(self, moment: datetime) -> Iterator[datetime]:
        """The entry's ticks strictly after `moment`, in order, as aware UTC datetimes.

        cronsim walks local wall time. For schedules with a fixed minute and hour it maps a
        wall time that does not exist (spring forward) to the first moment after the gap, and
        a repeated one (fall back) to its first occurrence — so, started inside a repeated
        hour, it can return a moment *before* `moment`. Those are filtered out here, which
        makes every start point agree with one walk from the distant past.
        """
        from cronsim import CronSim

        it = CronSim(self.schedule, moment.astimezone(self.tz))
        last = moment
        stalled = 0
        while True:
            try:
                tick = next(it).astimezone(UTC)
            except StopIteration:  # no match within cronsim's 50-year horizon
                return
            if tick > last:
                stalled = 0
                last = tick
                yield tick
            else:
                # A defensive bound: cronsim always moves forward in wall time, so results at
                # or before `last` can only come from one repeated hour.
                stalled += 1
                if stalled > 10_000:
                    return

    def next_after(self, moment: datetime) -> datetime | None:
        """The first tick strictly after `moment`, or None if none comes within 50 years."""
        return next(self.ticks_after(moment), None)

    def latest_between(self, after: datetime | None, now: datetime) -> datetime | None:
        """The latest tick in ``(after, now]`` (`after` None: no lower bound), or None.

        Forward walks only: cronsim's reverse iteration picks the wrong tick inside a repeated
        (fall-back) hour. To stay cheap after a long gap, it looks back from `now` over windows
        that double in length until one holds a tick, then walks that window forward.
        """
        if after is not None:
            first = self.next_after(after)
            if first is None or first > now:
                return None
        span = timedelta(minutes=1)
        while True:
            start = now - span
            if after is not None and start <= after:
                return self._last_in(after, now)
            found = self._last_in(start, now)
            if found is not None:
                return found
            if span > _HORIZON:
                return None
            span *= 2

    def _last_in(self, start: datetime, now: datetime) -> datetime | None:
        found = None
        for tick in self.ticks_after(start):
            if tick > now:
                break
            found = tick
        return found


@dataclass(frozen=True, kw_only=True)
class CronRecord:
    """What `jobs.cron_list()` returns for one entry. Times are aware UTC."""

    name: str
    schedule: str
    timezone: str
    next_run_at: datetime | None
    last_tick_at: datetime | None
    last_job_id: int | None


# -- parsing and validation --------------------------------------------------------------------


def parser_problem() -> str | None:
    """Why the cron parser cannot be used (a broken install), or None when it can."""
    try:
        import cronsim  # noqa: F401
    except ImportError:
        return (
            'ANOLE_JOBS["CRON"] needs cronsim, a dependency of anole-jobs that is not '
            'installed: pip install "cronsim>=2.6" (or reinstall anole-jobs)'
        )
    return None


def _check_schedule(schedule: object) -> str | None:
    """Why `schedule` is not a usable five-field expression, or None when it is."""
    from cronsim import CronSim, CronSimError

    if not isinstance(schedule, str) or not schedule.strip():
        return f"schedule must be a five-field cron expression string, got {schedule!r}"
    text = schedule.strip()
    if text.lower() in _NICKNAMES:
        return f"schedule {text!r}: nicknames are not supported; write {_NICKNAMES[text.lower()]!r}"
    fields = text.split()
    if len(fields) != 5:
        return (
            f"schedule {text!r} has {len(fields)} fields; a cron expression has five: "
            "minute hour day-of-month month day-of-week"
        )
    try:
        it = CronSim(text, _REFERENCE)
    except CronSimError as exc:
        return f"schedule {text!r} is not a valid cron expression: {exc}"
    except Exception as exc:  # noqa: BLE001 - cronsim rejects some input with other errors
        return f"schedule {text!r} is not a valid cron expression ({type(exc).__name__}: {exc})"
    try:
        next(it)
    except StopIteration:
        return f"schedule {text!r} never matches (no date within 50 years fits it)"
    return None


def _load_timezone(value: object) -> tuple[tzinfo | None, str | None]:
    if not isinstance(value, str) or not value:
        return None, f"timezone must be an IANA name such as 'Europe/Paris', got {value!r}"
    if value == "UTC":
        # datetime.UTC lets cronsim skip its daylight-saving handling entirely.
        return UTC, None
    try:
        return ZoneInfo(value), None
    except (ZoneInfoNotFoundError, ValueError):
        return None, f"timezone {value!r} is not a known IANA time zone (e.g. 'Europe/Paris')"


def _load_job_type(path: object) -> tuple[type | None, str | None]:
    if not isinstance(path, str) or not path:
        return None, f"job must be the dotted path of a @kind dataclass, got {path!r}"
    try:
        target = import_string(path)
    except ImportError as exc:
        return None, f"job {path!r} cannot be imported: {exc}"
    try:
        spec_of(target)
    except InvalidJob:
        return None, f"job {path!r} is not a job kind: decorate its dataclass with @kind(...)"
    return target, None


def _parse_entry(index: int, raw: object, errors: list[str]) -> CronEntry | None:
    where = f"ANOLE_JOBS['CRON'][{index}]"
    if not isinstance(raw, Mapping):
        errors.append(f"{where} must be a dict, got {type(raw).__name__}")
        return None
    name = raw.get("name")
    if isinstance(name, str) and name:
        where = f"{where} ({name!r})"
    found: list[str] = []

    for key in raw:
        if key not in ENTRY_KEYS:
            close = difflib.get_close_matches(str(key), ENTRY_KEYS, n=1)
            hint = f"did you mean {close[0]!r}?" if close else f"known: {', '.join(ENTRY_KEYS)}"
            found.append(f"unknown key {key!r} ({hint})")
    missing = [key for key in REQUIRED_KEYS if key not in raw]
    if missing:
        found.append(f"missing {', '.join(map(repr, missing))}")
    if "name" in raw and name_problem(name) is not None:
        found.append(str(name_problem(name, what="name")))

    schedule = raw.get("schedule")
    if "schedule" in raw:
        problem = _check_schedule(schedule)
        if problem:
            found.append(problem)

    tz, problem = _load_timezone(raw.get("timezone", DEFAULT_TIMEZONE))
    if problem:
        found.append(problem)

    job_type = None
    if "job" in raw:
        job_type, problem = _load_job_type(raw["job"])
        if problem:
            found.append(problem)

    args = raw.get("args", {})
    if not isinstance(args, Mapping):
        found.append(f"args must be a dict of the job's fields, got {type(args).__name__}")
    elif job_type is not None:
        try:
            codec.check_args(codec.decode_args(job_type, dict(args)))
        except InvalidJob as exc:
            found.append(f"args do not decode into {job_type.__qualname__}: {exc}")

    queue = raw.get("queue")
    if queue is not None and name_problem(queue) is not None:
        found.append(str(name_problem(queue, what="queue")))

    priority = raw.get("priority")
    if priority is not None:
        try:
            check_priority(priority, where="priority")
        except InvalidJob:
            found.append(
                f"priority must be an int in -100..100 (higher runs first), got {priority!r}"
            )

    meta: dict[str, Any] = {}
    try:
        meta = codec.ensure_json_object(raw.get("meta"), name="meta")
    except InvalidJob as exc:
        found.append(str(exc))

    if found:
        errors.extend(f"{where}: {problem}" for problem in found)
        return None
    assert job_type is not None and tz is not None and isinstance(name, str)
    return CronEntry(
        name=name,
        schedule=" ".join(str(schedule).split()),
        timezone=str(raw.get("timezone", DEFAULT_TIMEZONE)),
        job_type=job_type,
        kind=spec_of(job_type).name,
        args=dict(args),
        queue=queue,
        priority=priority,
        meta=meta,
        tz=tz,
    )


def parse_cron(raw: object) -> tuple[list[CronEntry], list[str]]:
    """Parse `CRON`; returns the valid entries and one message per problem (never raises)."""
    if raw is None:
        return [], []
    if not isinstance(raw, Sequence) or isinstance(raw, str):
        return [], [f"ANOLE_JOBS['CRON'] must be a list of dicts, got {type(raw).__name__}"]
    if not raw:
        return [], []
    missing = parser_problem()
    if missing:
        return [], [missing]
    errors: list[str] = []
    entries = []
    seen: dict[str, int] = {}
    for index, item in enumerate(raw):
        entry = _parse_entry(index, item, errors)
        name = item.get("name") if isinstance(item, Mapping) else None
        if isinstance(name, str) and name:
            if name in seen:
                errors.append(
                    f"ANOLE_JOBS['CRON'][{index}] ({name!r}): the name is already used by "
                    f"entry {seen[name]}; names identify entries and must be unique"
                )
                continue
            seen[name] = index
        if entry is not None:
            entries.append(entry)
    return entries, errors


def validate_cron(raw: object) -> list[str]:
    """Every problem with the `CRON` entries `raw`, one message each; empty when valid."""
    return parse_cron(raw)[1]


def load_cron(settings: Settings) -> list[CronEntry]:
    """The parsed entries of `settings`; raises `ConfigurationError` listing every problem.

    `runjobs` calls it before starting so that an invalid entry stops the process at once.
    """
    entries, errors = parse_cron(settings.cron)
    if errors:
        raise ConfigurationError("ANOLE_JOBS['CRON'] is invalid: " + "; ".join(errors))
    return entries
