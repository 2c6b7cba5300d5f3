"""Queue and cron names in URLs: the store accepts any character in a name (``reports/eu``
included), so every surface's routes use the ``anole_name`` converter registered here rather
than Django's ``str``, which stops at a slash."""

from __future__ import annotations

from django.urls import register_converter

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
