"""The dashboard's template filters: one way to show a time, and JSON as JSON.

- ``{{ when|moment:now }}``: ``<time datetime="2026-12-04T12:30:05Z" title="3 min ago">
  2026-12-04 12:30:05 UTC</time>``: every time on every page reads the same, in UTC with the
  zone written out, and says how long ago (or how soon) when pointed at. `now` is the
  dashboard's clock (the configured ``CLOCK``), which every page's context holds. A time
  stored as text (an error's ``at``) is read as ISO 8601; text that is not a time is shown as
  it is.
- ``{{ value|json }}``: the value as pretty-printed JSON (keys sorted, two-space indent), as
  the job's arguments and meta are stored, never a Python repr.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

from django import template
from django.utils.html import format_html

register = template.Library()

#: How a time reads on every page.
FORMAT = "%Y-%m-%d %H:%M:%S UTC"


def _aware(value: object) -> datetime | None:
    if isinstance(value, datetime):
        return value if value.tzinfo is not None else value.replace(tzinfo=UTC)
    if isinstance(value, str):
        try:
            return _aware(datetime.fromisoformat(value))
        except ValueError:
            return None
    return None


def relative(moment: datetime, now: datetime) -> str:
    """``3 min ago``, ``in 2 h``, ``just now``: the distance from `now`, in one unit."""
    seconds = (now - moment).total_seconds()
    distance = abs(seconds)
    if distance < 1:
        return "just now"
    for unit, size in (("d", 86400), ("h", 3600), ("min", 60), ("s", 1)):
        if distance >= size:
            amount = f"{int(distance // size)} {unit}"
            break
    return f"{amount} ago" if seconds > 0 else f"in {amount}"


@register.filter
def moment(value: object, now: object = None) -> str:
    """`value` as a ``<time>`` element: UTC, to the second, and relative to `now`."""
    when = _aware(value)
    if when is None:
        return "" if value is None else str(value)
    when = when.astimezone(UTC)
    reference = _aware(now)
    title = relative(when, reference) if reference is not None else ""
    return format_html(
        '<time datetime="{}"{}>{}</time>',
        when.strftime("%Y-%m-%dT%H:%M:%SZ"),
        format_html(' title="{}"', title) if title else "",
        when.strftime(FORMAT),
    )


@register.filter(name="json")
def as_json(value: Any) -> str:
    """`value` as pretty-printed JSON (autoescaped by the template like any text)."""
    return json.dumps(value, indent=2, sort_keys=True, ensure_ascii=False, default=str)
