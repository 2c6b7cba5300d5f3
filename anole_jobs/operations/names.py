"""Queue, kind and cron names as people write them.

- In URLs: a name may hold any printable character (``reports/eu`` included), so every
  surface's routes use the ``anole_name`` converter registered here rather than Django's
  ``str``, which stops at a slash.
- `parse_name`: a name a person typed (a path segment, a filter, a CLI argument) checked by
  the one rule for names (`anole_jobs.bounds`); what breaks it is `BadInput` naming the field,
  before any store is asked.
"""

from __future__ import annotations

from django.urls import register_converter

from anole_jobs.bounds import name_problem
from anole_jobs.operations.problems import BadInput

#: The converter's name in route patterns: ``queues/<anole_name:name>/pause``.
NAME_CONVERTER = "anole_name"


class AnyName:
    """Any characters, slashes and newlines included (Django's `path` stops at a newline).
    Greedy: ``queues/a/pause/pause`` is the queue ``a/pause``."""

    regex = r"[\s\S]+"

    def to_python(self, value: str) -> str:
        return value

    def to_url(self, value: str) -> str:
        return value


register_converter(AnyName, NAME_CONVERTER)


def parse_name(field: str, text: str, *, code: str = "bad_request") -> str:
    """`text` if it can be a queue, kind or cron name (see `anole_jobs.bounds`), else
    `BadInput` naming `field`."""
    problem = name_problem(text, what=field)
    if problem is not None:
        raise BadInput(field, problem, code=code)
    return text
