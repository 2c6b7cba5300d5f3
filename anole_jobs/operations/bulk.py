"""Bulk actions: retry, cancel or delete every job a listing matches (its state, queue, kind
and search terms), in batches of at most `BULK_BATCH_MAX` jobs per store call.

`preview` counts what an action would touch, for the confirmation step every surface shows
first; `act` walks the listing's pages newest first and hands each page's ids to the store,
which acts only on those still in the listing's state (a job that moved meanwhile is left as
it is) and returns how many it changed. The action's rule per state is the store's
(`Store.act`): retry leaves running and available jobs alone, cancel leaves finished ones,
delete takes any. A listing with no filter at all is refused: "every job" is too easy to ask
for by mistake.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, replace

from anole_jobs.api import jobs
from anole_jobs.operations import audit
from anole_jobs.operations.ids import job_id_or_none
from anole_jobs.operations.listing import Listing, Page, fetch_page, parse_listing
from anole_jobs.operations.problems import BadInput
from anole_jobs.stores.search import BULK_ACTIONS, BULK_BATCH_MAX, BulkAction

#: A preview stops counting here: the confirmation then says "more than".
COUNT_CAP = 10_000
#: Job ids a preview of a search looks at, at most (the confirmation then says "at least").
COUNT_SEARCH_BUDGET = 200_000

PAST_TENSE = {"retry": "retried", "cancel": "cancelled", "delete": "deleted"}
LABELS = {"retry": "Retry", "cancel": "Cancel", "delete": "Delete"}
#: What each action leaves as it is, for the confirmation page.
RULES = {
    "retry": "Running jobs stay with their worker and available jobs are already due: "
    "both are left as they are. Every other matching job is made available now.",
    "cancel": "Waiting jobs are cancelled; running jobs are cancelled too, and their worker is "
    "told to stop at its next heartbeat. Finished jobs are left as they are.",
    "delete": "Every matching job is deleted, whatever its state. A running job's worker is "
    "told to stop at its next heartbeat. This cannot be undone.",
}


@dataclass(frozen=True)
class Preview:
    """How many jobs match; `exact` is False when counting stopped early (at `COUNT_CAP`
    matches, or after a search looked at `COUNT_SEARCH_BUDGET` ids): "at least `count`"."""

    count: int
    exact: bool


@dataclass(frozen=True)
class BulkOutcome:
    """What a bulk action did: the jobs that matched when it looked, and those it changed."""

    action: BulkAction
    matched: int
    done: int


def parse_action(text: str) -> BulkAction:
    for action in BULK_ACTIONS:
        if text == action:
            return action
    raise BadInput(
        "action",
        f"unknown action {text!r}; actions are {', '.join(BULK_ACTIONS)}",
        code="bad_action",
    )


def check_filtered(listing: Listing) -> Listing:
    """`listing` when it names at least one filter; `BadInput` otherwise."""
    if not listing.filters():
        raise BadInput(
            "filter",
            "a bulk action needs at least one filter (state, queue, kind, kind_prefix, error "
            "or args); it never acts on every job at once",
            code="bad_filter",
        )
    return listing


def preview(listing: Listing) -> Preview:
    """How many jobs `listing` matches, counted up to `COUNT_CAP`."""
    check_filtered(listing)
    if listing.kind is None and not listing.searching and listing.workflow is None:
        # State and queue only: the store's counts answer at once, exactly.
        return Preview(_counted(listing), True)
    count, looked = 0, 0
    for page in _pages(listing):
        count += len(page.records)
        if page.searched is not None:
            looked += page.searched[1] - page.searched[0] + 1
        if count >= COUNT_CAP:
            return Preview(COUNT_CAP, False)
        if looked >= COUNT_SEARCH_BUDGET and page.next_after is not None:
            return Preview(count, False)
    return Preview(count, True)


def act(action: BulkAction, listing: Listing) -> BulkOutcome:
    """Apply `action` to every job `listing` matches, a batch per store call."""
    check_filtered(listing)
    matched = done = 0
    for page in _pages(listing):
        ids = [record.id for record in page.records]
        if ids:
            matched += len(ids)
            done += jobs.act(action, ids, state=listing.state)
    audit.record(f"bulk_{action}", f"{matched} jobs matching a filter", f"{done} done")
    return BulkOutcome(action, matched, done)


def _pages(listing: Listing) -> Iterator[Page]:
    listing = replace(listing, limit=BULK_BATCH_MAX, after=None)
    while True:
        page = fetch_page(listing)
        yield page
        if page.next_after is None:
            return
        listing = replace(listing, after=page.next_after)


def _counted(listing: Listing) -> int:
    total = 0
    for queue, states in jobs.counts().items():
        if listing.queue is not None and queue != listing.queue:
            continue
        for state, n in states.items():
            if listing.state is None or state == listing.state:
                total += n
    return total


#: Listing fields a bulk action does not take (it acts on every match, page by page).
NOT_FOR_BULK = ("limit", "after")


def parse_bulk_listing(
    query: Mapping[str, Sequence[str]], *, blank_is_absent: bool = False, ignore: Iterable[str] = ()
) -> Listing:
    """The filters of a bulk action (a listing's, without `limit` and `after`), with at least
    one set; `BadInput` otherwise."""
    for name in NOT_FOR_BULK:
        if any(v != "" or not blank_is_absent for v in query.get(name, ())):
            raise BadInput(
                name,
                f"a bulk action takes no {name}: it acts on every job the filters match",
                code="bad_filter",
            )
    given = {k: v for k, v in query.items() if k not in NOT_FOR_BULK}
    return check_filtered(parse_listing(given, blank_is_absent=blank_is_absent, ignore=ignore))


#: The most jobs one action on chosen rows takes (a page of the jobs list holds fewer).
CHOSEN_MAX = BULK_BATCH_MAX


def parse_chosen(values: Sequence[str]) -> list[int]:
    """The ids of the rows a person chose: whole numbers, at least one, at most
    `CHOSEN_MAX`; duplicates once, in the order given. `BadInput` names the field."""
    ids: dict[int, None] = {}
    for text in values:
        job_id = job_id_or_none(text)
        if job_id is None:
            raise BadInput("id", f"id must be a job id, got {text[:40]!r}", code="bad_filter")
        ids[job_id] = None
    if not ids:
        raise BadInput("id", "choose at least one job", code="bad_filter")
    if len(ids) > CHOSEN_MAX:
        raise BadInput("id", f"choose at most {CHOSEN_MAX} jobs at once", code="bad_filter")
    return list(ids)


def act_on_chosen(action: BulkAction, ids: Sequence[int]) -> BulkOutcome:
    """Apply `action` to the jobs of `ids` (those that exist and the action's rule allows)."""
    done = jobs.act(action, ids)
    shown = ", ".join(map(str, ids[:20])) + (" ..." if len(ids) > 20 else "")
    audit.record(f"bulk_{action}", f"{len(ids)} chosen jobs", f"{done} done: {shown}")
    return BulkOutcome(action, len(ids), done)
