"""The bulk action routes' handlers: ``GET bulk`` counts the jobs a filter matches (the
confirmation a client shows first), ``POST bulk/<action>`` retries, cancels or deletes every
one of them in one request and answers how many it changed. The filters are the query
parameters of ``GET jobs`` (without ``limit`` and ``after``), at least one of them."""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest

from anole_jobs.operations import bulk


def _payload(preview: bulk.Preview, filters: dict[str, str]) -> dict[str, Any]:
    return {"count": preview.count, "exact": preview.exact, "filters": filters}


def bulk_preview(request: HttpRequest) -> tuple[int, Any]:
    listing = bulk.parse_bulk_listing(dict(request.GET.lists()))
    return 200, _payload(bulk.preview(listing), listing.filters())


def bulk_action(request: HttpRequest, action: str) -> tuple[int, Any]:
    chosen = bulk.parse_action(action)
    listing = bulk.parse_bulk_listing(dict(request.GET.lists()))
    outcome = bulk.act(chosen, listing)
    return 200, {
        "action": outcome.action,
        "matched": outcome.matched,
        "done": outcome.done,
        "filters": listing.filters(),
    }


HANDLERS = {handler.__name__: handler for handler in (bulk_preview, bulk_action)}
