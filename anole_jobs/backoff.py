"""Retry delays. Pure functions; leaf module.

Attempt n (1-based) waits d = min(15 s * 2^(n-1), 6 h) with equal jitter: d/2 + uniform(0, d/2).
"""

from __future__ import annotations

import random
from collections.abc import Callable
from datetime import timedelta

BASE = timedelta(seconds=15)
CAP = timedelta(hours=6)

Backoff = Callable[[int], timedelta]


def ceiling(attempt: int) -> timedelta:
    """The un-jittered delay d for `attempt` (1-based)."""
    if attempt < 1:
        raise ValueError(f"attempt is 1-based, got {attempt}")
    # 2^11 * 15 s already exceeds 6 h; cap the exponent so huge attempts stay cheap.
    return min(BASE * (2 ** min(attempt - 1, 20)), CAP)


def default_backoff(attempt: int, *, rand: Callable[[], float] = random.random) -> timedelta:
    """Equal jitter: half the ceiling for sure, the other half at random."""
    d = ceiling(attempt)
    half = d / 2
    return half + half * rand()
