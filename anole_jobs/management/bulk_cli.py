"""The command line's search and bulk actions, for `manage.py jobs` (commands/jobs.py).

``jobs list`` takes the search options; ``jobs retry|cancel|delete`` take either job ids or
filters. With filters they count the matching jobs, ask for a confirmation (``--yes`` skips
it; without a terminal to ask on, they refuse and exit 1) and act on every match in batches,
printing how many changed. Parsing, counting and acting are `anole_jobs.operations.bulk`'s.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import IO, Any

from django.core.management.base import CommandError

from anole_jobs.core import STATES
from anole_jobs.operations import bulk
from anole_jobs.operations.listing import Listing, parse_args, parse_search_text
from anole_jobs.operations.names import parse_name
from anole_jobs.operations.problems import OperationError

#: The filter options of a bulk action, by the listing field each sets.
FILTER_OPTIONS = {
    "state": "--state",
    "queue": "--queue",
    "kind": "--kind",
    "kind_prefix": "--kind-prefix",
    "error": "--error",
    "args": "--args",
}


def _checked(parse: Any, field: str) -> Any:
    def convert(text: str) -> Any:
        try:
            return parse(field, text) if parse is parse_search_text else parse(text)
        except OperationError as exc:
            raise argparse.ArgumentTypeError(exc.message) from None

    convert.__name__ = field
    return convert


def name_option(option: str) -> Any:
    """An argparse type for ``--queue`` or ``--kind``: the rule for names (`anole_jobs.bounds`);
    what breaks it is a usage error naming `option`."""

    def convert(text: str) -> str:
        if text == "":
            raise argparse.ArgumentTypeError(f"{option} must not be empty")
        try:
            return parse_name(option, text)
        except OperationError as exc:
            raise argparse.ArgumentTypeError(exc.message) from None

    convert.__name__ = option.lstrip("-")
    return convert


def add_search_options(command: argparse.ArgumentParser) -> None:
    """The search terms, for ``list`` and the bulk actions."""
    command.add_argument(
        "--kind-prefix",
        type=_checked(parse_search_text, "kind_prefix"),
        help="kinds starting with this text (billing. matches billing.refund)",
    )
    command.add_argument(
        "--error",
        type=_checked(parse_search_text, "error"),
        help="the last error ('<type>: <message>') contains this text, in any case",
    )
    command.add_argument(
        "--args",
        dest="args_json",  # Django's call_command takes an option named "args" for itself
        type=_checked(parse_args, "args"),
        help="the arguments contain this JSON object, e.g. '{\"customer_id\": 7}'",
    )


def add_bulk_options(command: argparse.ArgumentParser) -> None:
    """Filters (act on every matching job) and ``--yes`` for retry, cancel and delete."""
    filters = command.add_argument_group("or every job matching filters (at least one)")
    filters.add_argument("--state", choices=STATES)
    filters.add_argument("--queue", type=name_option("--queue"))
    filters.add_argument("--kind", type=name_option("--kind"))
    add_search_options(filters)  # type: ignore[arg-type]
    command.add_argument(
        "--yes", action="store_true", help="act on the matching jobs without asking first"
    )


def _option(options: dict[str, Any], field: str) -> Any:
    return options.get("args_json" if field == "args" else field)


def wants_bulk(options: dict[str, Any]) -> bool:
    return any(_option(options, field) is not None for field in FILTER_OPTIONS)


def check_names(options: dict[str, Any]) -> None:
    """``--queue`` and ``--kind`` by the rule for names: a usage error (exit 2) otherwise."""
    for field in ("queue", "kind"):
        value = options.get(field)
        if value == "":
            raise CommandError(f"--{field} must not be empty", returncode=2)
        if value is not None:
            try:
                parse_name(f"--{field}", value)
            except OperationError as exc:
                raise CommandError(exc.message, returncode=2) from None


def listing_of(options: dict[str, Any]) -> Listing:
    values: dict[str, Any] = {field: _option(options, field) for field in FILTER_OPTIONS}
    check_names(values)
    return bulk.check_filtered(Listing(**values))


def describe_filters(listing: Listing) -> str:
    return " ".join(f"{FILTER_OPTIONS[k]} {v}" for k, v in listing.filters().items())


def run_bulk(
    command: Any, action: bulk.BulkAction, options: dict[str, Any], stdin: IO[str] | None
) -> None:
    """Count, confirm and act; print the outcome (JSON: what ``POST bulk/<action>`` answers)."""
    if options.get("ids"):
        raise CommandError("give job ids or filters, not both", returncode=2)
    listing = listing_of(options)
    preview = bulk.preview(listing)
    if preview.count == 0:
        outcome = bulk.BulkOutcome(action, 0, 0)
    else:
        if not options.get("yes"):
            _confirm(command, action, listing, preview, stdin or sys.stdin)
        outcome = bulk.act(action, listing)
    if command.as_json:
        payload = {
            "action": outcome.action,
            "matched": outcome.matched,
            "done": outcome.done,
            "filters": listing.filters(),
        }
        command.stdout.write(json.dumps(payload))
        return
    verb = bulk.PAST_TENSE[action]
    if outcome.matched == 0:
        command.stdout.write(f"no jobs match {describe_filters(listing)}: nothing {verb}")
        return
    line = f"{outcome.done} of {outcome.matched} matching jobs {verb}"
    left = outcome.matched - outcome.done
    if left:
        line += f" ({left} left as they were: {_left_as_they_were(action)})"
    command.stdout.write(line)


def _left_as_they_were(action: bulk.BulkAction) -> str:
    return {
        "retry": "running or already available, or moved meanwhile",
        "cancel": "finished already, or moved meanwhile",
        "delete": "gone or moved meanwhile",
    }[action]


def _confirm(
    command: Any, action: str, listing: Listing, preview: bulk.Preview, stdin: IO[str]
) -> None:
    count = f"{preview.count:,}" if preview.exact else f"at least {preview.count:,}"
    question = f"{action} {count} jobs matching {describe_filters(listing)}?"
    if not stdin.isatty():
        raise CommandError(
            f"refusing to {action} {count} jobs without a confirmation: there is no terminal "
            "to ask on; pass --yes to confirm",
            returncode=1,
        )
    command.stdout.write(f"{question} [y/N] ", ending="")
    command.stdout.flush()
    answer = stdin.readline().strip().lower()
    if answer not in ("y", "yes"):
        raise CommandError(f"nothing {bulk.PAST_TENSE[action]}: not confirmed", returncode=1)
