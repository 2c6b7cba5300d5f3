"""How a queue's jobs are claimed: the one place that decides between a plain claim and one
within the queue's limits (docs/limits.md), for the runtime's pools and for `jobs.step()`.

A queue is claimed within its limits when its settings give it some, or when `jobs.set_limits`
stored some for it in the store (the limited claim then reads what is stored itself); a queue
with neither takes the plain claim, so a queue without limits never pays for them. The pools
look up the queues with stored limits now and then (`RuntimeLimitsLookup`); `step()` looks
them up once per round.
"""

from __future__ import annotations

from collections.abc import Collection
from datetime import datetime

from anole_jobs.clock import monotonic
from anole_jobs.limits import Limits
from anole_jobs.service import JobService
from anole_jobs.stores.base import LimitedClaim


def limits_in_force(
    settings_limits: Limits, queue: str, runtime_limited: Collection[str]
) -> Limits | None:
    """The limits to claim `queue` within, None for a plain claim: those of the settings
    when they are active or when the store holds limits set at runtime for the queue
    (`runtime_limited`: the queues it holds some for)."""
    if settings_limits.active or queue in runtime_limited:
        return settings_limits
    return None


def claim(
    service: JobService,
    queue: str,
    limits: Limits | None,
    *,
    kinds: Collection[str] | None,
    limit: int,
    now: datetime,
    worker: str,
) -> LimitedClaim:
    """Claim up to `limit` jobs of `queue` for `worker`, within `limits` when there are
    some (`limits_in_force`); a plain claim holds nothing back."""
    store = service.store
    lease_until = now + service.settings.lease
    if limits is None:
        jobs = store.claim(
            queue, kinds=kinds, limit=limit, now=now, lease_until=lease_until, worker=worker
        )
        return LimitedClaim(jobs=jobs)
    return store.claim_limited(
        queue,
        limits=limits,
        kinds=kinds,
        limit=limit,
        now=now,
        lease_until=lease_until,
        worker=worker,
    )


class RuntimeLimitsLookup:
    """The queues the store holds runtime limits for, looked up at most every `every`
    seconds (a pool claims many times a second; a limit set at runtime may take that long
    to apply to a queue that had none)."""

    def __init__(self, service: JobService, every: float) -> None:
        self.service = service
        self.every = every
        self._at = -every
        self._queues: frozenset[str] = frozenset()

    def queues(self) -> frozenset[str]:
        now = monotonic()
        if now - self._at >= self.every:
            self._at = now
            self._queues = frozenset(self.service.store.runtime_limits())
        return self._queues
