"""A listing of jobs: its filters parsed once into a `Listing`, and keyset pages of it.

`parse_listing` reads the filters a person wrote (a query string, the dashboard's form, the
CLI's options) and refuses what cannot be used with one `BadInput` that names the field.
`fetch_page` asks the facade for one job more than the page holds, so a page says "more"
only when another job follows it (a page that is exactly full is the last one if nothing
follows). Pages are newest first; `next_after` is the ``after`` of the next page.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from anole_jobs.api import jobs
from anole_jobs.bounds import search_int_problem
from anole_jobs.core import LIST_LIMIT_MAX, MAX_JOB_ID, STATES, JobRecord
from anole_jobs.operations.display import for_operators
from anole_jobs.operations.ids import job_id_or_none
from anole_jobs.operations.names import parse_name
from anole_jobs.operations.problems import BadInput

#: The search terms a listing takes (see "search" at the end of this module).
SEARCH_FIELDS = ("kind_prefix", "error", "args")
#: The filters a listing takes, in the order error messages list them.
FIELDS = ("state", "queue", "kind", "workflow", "limit", "after", *SEARCH_FIELDS)
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
    # -- search (see "search" below): each as written, checked by `parse_listing` --
    kind_prefix: str | None = None
    error: str | None = None
    args: str | None = None  # a JSON object's text

    def filters(self) -> dict[str, str]:
        """The filters that are set, as text (for links to this listing), without `after`."""
        values = (
            ("state", self.state),
            ("queue", self.queue),
            ("kind", self.kind),
            ("workflow", self.workflow),
            ("kind_prefix", self.kind_prefix),
            ("error", self.error),
            ("args", self.args),
        )
        return {name: value for name, value in values if value is not None}

    @property
    def searching(self) -> bool:
        """Whether a search term is set: pages then read a bounded window of ids."""
        return self.kind_prefix is not None or self.error is not None or self.args is not None


@dataclass(frozen=True)
class Page:
    """One page of a listing, newest first; `next_after` is None on the last page.

    A search's page also says which ids it looked at (`searched`: lowest, highest): it may
    hold fewer jobs than asked and still be followed by another."""

    records: list[JobRecord]
    next_after: int | None
    searched: tuple[int, int] | None = None

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
            f"after must be a job id (a whole number from 1 to {MAX_JOB_ID}), got {text!r}",
            code=_CODE,
        )
    return value


def _name(field: str, text: str) -> str:
    if text == "":
        raise BadInput(field, f"{field} must not be empty", code=_CODE)
    return parse_name(field, text, code=_CODE)


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
    "kind_prefix": lambda text: parse_search_text("kind_prefix", text),
    "error": lambda text: parse_search_text("error", text),
    "args": lambda text: parse_args(text),
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
    if listing.searching:
        return search_page(listing)
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
    records = jobs.list(
        state=listing.state,
        queue=listing.queue,
        kind=listing.kind,
        workflow=listing.workflow,
        limit=limit,
        after=listing.after if after is None else after,
    )
    return [for_operators(record) for record in records]


# -- search -----------------------------------------------------------------------------------
# A search term (kind prefix, error text, argument value) may match few of many jobs, so a
# search page reads a bounded id window: `SEARCH_WINDOW` ids per store call, newest first, and
# at most `SEARCH_BUDGET` ids per page. A page that used its budget before it filled says so
# (`Page.searched`) and links to the older jobs.

#: Job ids one store call of a search looks at.
SEARCH_WINDOW = 5_000
#: Job ids one search page looks at, at most.
SEARCH_BUDGET = 20_000
#: Longest search text and argument JSON accepted.
SEARCH_TEXT_MAX = 1_000


def _printable_problem(text: str) -> str | None:
    if "\x00" in text or any("\ud800" <= c <= "\udfff" for c in text):
        return "contains a NUL or a lone surrogate"
    if len(text) > SEARCH_TEXT_MAX:
        return f"is longer than {SEARCH_TEXT_MAX} characters"
    return None


def parse_search_text(field: str, text: str) -> str:
    """A kind prefix or error text: non-empty printable text."""
    if text == "":
        raise BadInput(field, f"{field} must not be empty", code=_CODE)
    problem = _printable_problem(text)
    if problem is not None:
        raise BadInput(field, f"{field} {problem}", code=_CODE)
    return text


def parse_args(text: str) -> str:
    """An argument search: the text of a JSON object, e.g. ``{"customer_id": 7}``."""
    example = 'args must be a JSON object, e.g. {"customer_id": 7}'
    problem = _printable_problem(text)
    if problem is not None:
        raise BadInput("args", f"args {problem}", code=_CODE)
    try:
        value = json.loads(text, parse_constant=_no_constant)
    except (ValueError, RecursionError):
        raise BadInput("args", f"{example}; {text!r} is not JSON", code=_CODE) from None
    if not isinstance(value, dict) or not value:
        raise BadInput("args", f"{example} with at least one key, got {text!r}", code=_CODE)
    problem = search_int_problem(value)
    if problem is not None:
        raise BadInput("args", problem, code=_CODE)
    return text


def _no_constant(name: str) -> object:
    raise ValueError(f"{name} is not JSON")


def search_terms(listing: Listing) -> dict[str, Any]:
    """`listing`'s search terms as the facade's `jobs.list` takes them."""
    return {
        "kind_prefix": listing.kind_prefix,
        "error": listing.error,
        "args": None if listing.args is None else json.loads(listing.args),
    }


def newest_id() -> int | None:
    """The id of the newest job, None when there is none."""
    newest = jobs.list(limit=1)
    return newest[0].id if newest else None


def search_page(listing: Listing, *, budget: int | None = None) -> Page:
    """One page of a search: windows of ids below `listing.after`, newest first, until the
    page is full or `budget` ids were looked at."""
    # Windows count jobs; the store says how far below an id that many jobs reach.
    newest = newest_id()
    top = listing.after if listing.after is not None else (newest or 0) + 1
    bottom = jobs.lowest_id_below(top, SEARCH_BUDGET if budget is None else budget)
    floor, terms = top, search_terms(listing)
    found: list[JobRecord] = []
    while floor > bottom and len(found) <= listing.limit:
        low = max(jobs.lowest_id_below(floor, SEARCH_WINDOW), bottom)
        asked = min(listing.limit + 1 - len(found), LIST_LIMIT_MAX)
        records = jobs.list(
            state=listing.state,
            queue=listing.queue,
            kind=listing.kind,
            limit=asked,
            after=floor,
            min_id=low,
            **terms,
        )
        found += [for_operators(record) for record in records]
        floor = records[-1].id if len(records) == asked else low
    if len(found) > listing.limit:
        found = found[: listing.limit]
        return Page(found, found[-1].id, searched=(found[-1].id, top - 1))
    return Page(found, floor if floor > 1 else None, searched=(floor, top - 1))
