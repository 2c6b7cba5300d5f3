"""What every store can hold: the one rule for names and for numbers, used wherever a value
enters (a kind's declaration, ``QUEUES`` and ``CRON``, enqueue, `set_limits`, pause and resume,
every filter of every surface). A value outside these bounds is refused where it enters, with a
sentence saying why, instead of failing deep in a store (PostgreSQL refuses a NUL in text, an
index row over 2,704 bytes and an integer over its column; SQLite an integer over 64 bits):
bad input must never read as a server error or as a store outage.

- A **name** (a queue, a kind, a cron entry, a workflow step) is a non-empty string of at
  most `NAME_MAX` characters of printable text: no control characters (NUL, tab, newline…),
  no lone surrogates. 200 characters are at most 800 bytes of UTF-8, so a name, alone or
  beside the other columns of an index, fits in one index row of every store.
- A **count** (``global_concurrency``, a rate limit's N, a kind's ``attempts``) is a whole
  number from 1 to `COUNT_MAX`, 2**31 - 1: the SQL stores keep them in INTEGER columns.
- A **job id** lies in 1 .. 2**63 - 1 (`core.MAX_JOB_ID`).
- An integer in an **args search** lies in -2**63 .. 2**63 - 1: SQLite's JSON functions read
  larger ones as inexact floats, and its driver cannot bind them at all.

`NewQueue` marks a queue name used on purpose although nothing declares it (see
docs/configuration.md#queues).

Leaf module: it imports only `errors`.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterable, Iterator
from typing import Any

from anole_jobs.errors import InvalidJob

#: The longest name (queue, kind, cron entry, workflow step), in characters.
NAME_MAX = 200
#: The largest count a store keeps (an INTEGER column: 32 bits, signed).
COUNT_MAX = 2**31 - 1
#: The range of the integers an args search may hold (SQLite's JSON: 64 bits, signed).
SEARCH_INT_MIN, SEARCH_INT_MAX = -(2**63), 2**63 - 1

__all__ = [
    "COUNT_MAX",
    "NAME_MAX",
    "SEARCH_INT_MAX",
    "SEARCH_INT_MIN",
    "NewQueue",
    "check_name",
    "close_names",
    "count_problem",
    "name_problem",
    "search_int_problem",
    "text_problem",
]


class NewQueue(str):
    """A queue name used on purpose, although neither ``QUEUES`` nor any kind declares it:
    ``jobs.enqueue(args, queue=NewQueue("tenant-42"))``, ``jobs.set_limits(NewQueue(...))``.
    Without it such a name is refused as a likely typo, with "did you mean". It is a `str`
    (stored as a plain one); the name must still follow the rule for names."""

    __slots__ = ()

    def __repr__(self) -> str:
        return f"NewQueue({str(self)!r})"


def _shown(value: str) -> str:
    """`value` for an error message: a 10,000-character name is not echoed whole."""
    return repr(value) if len(value) <= 60 else f"{value[:40]!r}… ({len(value)} characters)"


def _number(value: int) -> str:
    """`value` for an error message: a number of thousands of digits is not echoed whole
    (and Python refuses to write one of over 4,300 digits)."""
    if abs(value) < 10**30:
        return str(value)
    digits = int(abs(value).bit_length() * 0.30103) + 1  # log10(2): about that many digits
    return f"{'minus ' if value < 0 else ''}a number of about {digits} digits"


#: What no store can hold in text: NUL (PostgreSQL refuses it) and lone surrogates (not UTF-8).
_UNSTORABLE = re.compile("[\x00\ud800-\udfff]")


def storable_text(value: str) -> str:
    """`value` with each character no store can hold (a NUL, a lone surrogate) replaced by
    U+FFFD: for text a job's run produces and the store keeps as it is (an error's message
    and traceback, a log line), where refusing it would lose the attempt's outcome."""
    return _UNSTORABLE.sub("\ufffd", value) if _UNSTORABLE.search(value) else value


def text_problem(value: str) -> str | None:
    """Why a store cannot hold `value` at all (a NUL: PostgreSQL refuses it; a lone surrogate:
    not UTF-8), or None."""
    if "\x00" in value:
        return "contains a NUL character"
    if any("\ud800" <= c <= "\udfff" for c in value):
        return "contains a lone surrogate (not UTF-8)"
    return None


def name_problem(value: object, *, what: str = "a name") -> str | None:
    """Why `value` cannot be `what` (a queue, a kind, …: see the module's rule), or None."""
    if not isinstance(value, str) or not value:
        return f"{what} must be a non-empty string, got {value!r}"
    if len(value) > NAME_MAX:
        return f"{what} must be at most {NAME_MAX} characters, got {_shown(value)}"
    if not value.isprintable() or text_problem(value) is not None:
        return (
            f"{what} {_shown(value)} contains a control character or a lone surrogate; "
            "use printable text such as 'emails.send'"
        )
    return None


def check_name(value: object, *, what: str, where: str | None = None) -> str:
    """`value` as a plain `str` if it can be `what`, else `InvalidJob` saying why (prefixed by
    `where`, the call the user wrote, e.g. ``enqueue('emails.send')``)."""
    problem = name_problem(value, what=what)
    if problem is not None:
        raise InvalidJob(problem if where is None else f"{where}: {problem}")
    return str(value)  # a `NewQueue` is stored as the plain name


def count_problem(value: object, *, what: str) -> str | None:
    """Why `value` cannot be the count `what` (a whole number from 1 to `COUNT_MAX`), or None."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        return f"{what} must be a positive int, got {repr(value)[:60]}"
    if value > COUNT_MAX:
        return f"{what} must be at most {COUNT_MAX} (2**31 - 1), got {_number(value)}"
    return None


def close_names(name: str, known: Iterable[str]) -> str:
    """``"; did you mean 'mail'?"`` naming up to three known names close to `name` (a likely
    typo), or "" when none is close."""
    close = difflib.get_close_matches(name, sorted(known), n=3, cutoff=0.6)
    return f"; did you mean {' or '.join(repr(n) for n in close)}?" if close else ""


def _integers(value: Any) -> Iterator[int]:
    """Every int in JSON `value` (bools are not counted)."""
    if isinstance(value, bool):
        return
    if isinstance(value, int):
        yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from _integers(item)
    elif isinstance(value, list):
        for item in value:
            yield from _integers(item)


def search_int_problem(value: Any) -> str | None:
    """Why JSON `value` cannot be an args search (an integer beyond 64 bits), or None."""
    for number in _integers(value):
        if not SEARCH_INT_MIN <= number <= SEARCH_INT_MAX:
            return f"an args search holds integers from -2**63 to 2**63 - 1, got {_number(number)}"
    return None
