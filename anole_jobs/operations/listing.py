"""A listing of jobs: its filters parsed once into a `Listing`, and keyset pages of it.

`parse_listing` reads the filters a person wrote (a query string, the dashboard's form, the
CLI's options) and refuses what cannot be used with one `BadInput` that names the field.
`fetch_page` asks the facade for one job more than the page holds, so a page says "more"
only when another job follows it (a page that is exactly full is the last one if nothing
follows). Pages are newest first; `next_after` is the ``after`` of the next page.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, replace

from anole_jobs.api import jobs
from anole_jobs.operations.ids import MAX_ID, job_id_or_none
from anole_jobs.operations.problems import BadInput
from anole_jobs.stores.base import LIST_LIMIT_MAX, STATES, JobRecord

#: The filters a listing takes, in the order error messages list them.
FIELDS = ("state", "queue", "kind", "workflow", "limit", "after")
DEFAULT_LIMIT = 100
_CODE = "bad_filter"


@dataclass(frozen=True, kw_only=True)
class Listing:
    """Which jobs to list: every filter is optional; `after` is the previous page's last id.

    `workflow` keeps the steps of one workflow (its id)."""

    state: str | None = None
    queue: str | None = None
    kind: str | None = None
    workflow: str | None = None
    limit: int = DEFAULT_LIMIT
    after: int | None = None

    def filters(self) -> dict[str, str]:
        """The filters that are set, as text (for links to this listing), without `after`."""
        values = (
            ("state", self.state),
            ("queue", self.queue),
            ("kind", self.kind),
            ("workflow", self.workflow),
        )
        return {name: value for name, value in values if value is not None}


@dataclass(frozen=True)
class Page:
    """One page of a listing, newest first; `next_after` is None on the last page."""

    records: list[JobRecord]
    next_after: int | None

    @property
    def more(self) -> bool:
        return self.next_after is not None


def parse_state(text: str) -> str:
    if text not in STATES:
        message = f"unknown state {text!r}; states are {', '.join(STATES)}"
        raise BadInput("state", message, code=_CODE)
    return text


def parse_limit(text: str) -> int:
    """A page size: a whole number from 1; above the stores' cap it reads as the cap."""
    digits = text.lstrip("0") if isinstance(text, str) else ""
    if not (digits.isascii() and digits.isdigit()) or not text.isdigit():
        raise BadInput("limit", f"limit must be a whole number from 1, got {text!r}", code=_CODE)
    # Past nine digits it is over the cap anyway (and int() of thousands of digits refuses).
    return LIST_LIMIT_MAX if len(digits) > 9 else min(int(digits), LIST_LIMIT_MAX)


def parse_after(text: str) -> int:
    value = job_id_or_none(text)
    if value is None:
        raise BadInput(
            "after",
            f"after must be a job id (a whole number from 1 to {MAX_ID}), got {text!r}",
            code=_CODE,
        )
    return value


def _name(field: str, text: str) -> str:
    if text == "":
        raise BadInput(field, f"{field} must not be empty", code=_CODE)
    return text


def _workflow(text: str) -> str:
    from anole_jobs.operations.workflows import workflow_id_or_none

    value = workflow_id_or_none(text)
    if value is None:
        raise BadInput(
            "workflow",
            f"workflow must be a workflow id (1 to 100 characters), got {text!r}",
            code=_CODE,
        )
    return value


_PARSERS = {
    "state": parse_state,
    "queue": lambda text: _name("queue", text),
    "kind": lambda text: _name("kind", text),
    "workflow": _workflow,
    "limit": parse_limit,
    "after": parse_after,
}


def parse_listing(
    query: Mapping[str, Sequence[str]],
    *,
    default_limit: int = DEFAULT_LIMIT,
    blank_is_absent: bool = False,
    ignore: Iterable[str] = (),
) -> Listing:
    """`query` (each name with every value given, as ``QueryDict.lists()`` has them) as a
    `Listing`. Unknown names, a name given twice and values that cannot be used raise
    `BadInput`. With `blank_is_absent` (an HTML form sends its empty fields), an empty value
    means "not set"; names in `ignore` belong to the page, not to the listing."""
    ignored = set(ignore)
    unknown = sorted(name for name in query if name not in FIELDS and name not in ignored)
    if unknown:
        raise BadInput(
            unknown[0],
            f"unknown parameter {unknown[0]!r}; the filters are {', '.join(FIELDS)}",
            code=_CODE,
        )
    values: dict[str, object] = {"limit": default_limit}
    for name in FIELDS:
        given = [v for v in query.get(name, ()) if not (blank_is_absent and v == "")]
        if not given:
            continue
        if len(given) > 1:
            raise BadInput(name, f"give {name} once, not {len(given)} times", code=_CODE)
        values[name] = _PARSERS[name](given[0])
    return Listing(**values)  # type: ignore[arg-type]


def fetch_page(listing: Listing) -> Page:
    """One page of `listing` (one job more is read to know whether another page follows)."""
    wanted = listing.limit + 1
    records = _read(listing, limit=min(wanted, LIST_LIMIT_MAX))
    if len(records) > listing.limit:
        records = records[: listing.limit]
        return Page(records, records[-1].id)
    # The stores read at most LIST_LIMIT_MAX at once: past it, ask for the one after.
    full = bool(records) and len(records) == listing.limit and wanted > LIST_LIMIT_MAX
    if full and _read(listing, limit=1, after=records[-1].id):
        return Page(records, records[-1].id)
    return Page(records, None)


def each_page(listing: Listing) -> Iterator[Page]:
    """Every page of `listing`, from its first."""
    while True:
        page = fetch_page(listing)
        yield page
        if page.next_after is None:
            return
        listing = replace(listing, after=page.next_after)


def _read(listing: Listing, *, limit: int, after: int | None = None) -> list[JobRecord]:
    return jobs.list(
        state=listing.state,
        queue=listing.queue,
        kind=listing.kind,
        workflow=listing.workflow,
        limit=limit,
        after=listing.after if after is None else after,
    )
