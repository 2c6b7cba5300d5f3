"""Durations at the edges: ``timedelta`` or seconds (int/float) in, ``timedelta`` inside.

A leaf module.
"""

from __future__ import annotations

import math
from datetime import timedelta

Duration = timedelta | int | float


def to_timedelta(
    value: Duration, *, name: str = "duration", allow_negative: bool = False
) -> timedelta:
    """Return `value` as a `timedelta`; raise `ValueError` naming `name` for anything else."""
    if isinstance(value, bool):
        raise ValueError(f"{name} must be a timedelta or a number of seconds, not a bool")
    if isinstance(value, timedelta):
        result = value
    elif isinstance(value, (int, float)):
        if not math.isfinite(value):
            raise ValueError(f"{name} must be a finite number of seconds, got {value!r}")
        try:
            result = timedelta(seconds=value)
        except OverflowError:  # past timedelta's ~2.7 million years, either way
            raise ValueError(
                f"{name} is too long: at most {timedelta.max.days:,} days, got {value!r} seconds"
            ) from None
    else:
        raise ValueError(
            f"{name} must be a timedelta or a number of seconds, got {type(value).__name__}"
        )
    if not allow_negative and result < timedelta(0):
        raise ValueError(f"{name} must not be negative, got {seconds(result)}")
    return result


def seconds(value: timedelta) -> str:
    """`value` as a person reads a duration in an error: "-5 seconds", not "-1 day, 23:59:55"."""
    return f"{value.total_seconds():g} seconds"
