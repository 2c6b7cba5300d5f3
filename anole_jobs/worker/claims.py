"""How a queue's jobs are claimed: the one place that decides between a plain claim and one
within the queue's limits (docs/limits.md), for the runtime's pools and for `jobs.step()`.

A queue is claimed within its limits when its settings give it some, or when `jobs.set_limits`
stored some for it in the store (the limited claim then reads what is stored itself); a queue
with neither takes the plain claim, so a queue without limits never pays for them. The pools
look up the queues with stored limits now and then (`RuntimeLimitsLookup`); `step()` looks
them up once per round.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Collection
from dataclasses import replace
from datetime import datetime

from anole_jobs import deploys
from anole_jobs.background import close_connections, sharing_store_sessions
from anole_jobs.clock import monotonic
from anole_jobs.kinds import Registry
from anole_jobs.limits import Limits
from anole_jobs.service import JobService
from anole_jobs.stores.base import LimitedClaim

logger = logging.getLogger("anole_jobs.worker")


def limits_in_force(
    settings_limits: Limits, queue: str, runtime_limited: Collection[str]
) -> Limits | None:
    """The limits to claim `queue` within, None for a plain claim: those of the settings
    when they are active or when the store holds limits set at runtime for the queue
    (`runtime_limited`: the queues it holds some for)."""
    if settings_limits.active or settings_limits.flow or queue in runtime_limited:
        return settings_limits
    return None


def with_sequences(
    limits: Limits | None, kinds: Collection[str] | None, registry: Registry
) -> Limits | None:
    """`limits` marked `sequenced` when a kind claimed (`kinds`; every kind when None) has a
    sequence (docs/flow-control.md): the claim then keeps each sequence one at a time. Only
    kinds this process knows can carry one: a claim of other kinds stays as it was."""
    sequenced = registry.sequenced()
    if not sequenced or (kinds is not None and sequenced.isdisjoint(kinds)):
        return limits
    if limits is None:
        return Limits(sequenced=True)
    return limits if limits.sequenced else replace(limits, sequenced=True)


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
    limits = with_sequences(limits, kinds, service.registry)
    if limits is None:
        jobs = store.claim(
            queue, kinds=kinds, limit=limit, now=now, lease_until=lease_until, worker=worker
        )
        return _canonical(service, LimitedClaim(jobs=jobs))
    return _canonical(
        service,
        store.claim_limited(
            queue,
            limits=limits,
            kinds=kinds,
            limit=limit,
            now=now,
            lease_until=lease_until,
            worker=worker,
        ),
    )


def _canonical(service: JobService, claimed: LimitedClaim) -> LimitedClaim:
    """Jobs claimed under an alias of their kind, renamed to the kind (docs/deploys.md)."""
    handler = service.registry.handler
    if all(handler(job.record.kind) is not None for job in claimed.jobs):
        return claimed
    jobs = deploys.canonical_claims(service.store, service.registry, claimed.jobs)
    return replace(claimed, jobs=jobs)


#: Seconds a pool waits for a look-up of the runtime limits before it claims with what the
#: last one found (the look-up then finishes aside).
LOOKUP_WAIT = 0.05


class RuntimeLimitsLookup:
    """The queues the store holds runtime limits for, looked up at most every `every`
    seconds (a pool claims many times a second; a limit set at runtime may take that long
    to apply to a queue that had none).

    The look-up reads every queue's limits. Where queues fail apart (a Redis Cluster, whose
    look-up reads every master), each look-up after the first runs in a thread of its own and
    the pool waits for it `LOOKUP_WAIT` seconds at most, so that one master's failover does
    not stop the claims of queues whose masters answer; one the store cannot answer keeps
    what the last one found. Elsewhere the pool looks up itself, as it claims."""

    def __init__(self, service: JobService, every: float) -> None:
        self.service = service
        self.every = every
        self._at = -every
        self._queues: frozenset[str] | None = None
        self._lock = threading.Lock()
        self._done: threading.Event | None = None  # set once the look-up in flight ends
        self.aside = service.store.queues_fail_apart

    def queues(self) -> frozenset[str]:
        now = monotonic()
        if now - self._at >= self.every:
            self._at = now
            if self._queues is None or not self.aside:  # the first: before the first claim
                self._queues = frozenset(self.service.store.runtime_limits())
            else:
                self._look_aside().wait(LOOKUP_WAIT)
        return self._queues or frozenset()

    def _look_aside(self) -> threading.Event:
        with self._lock:
            if self._done is not None:
                return self._done  # one look-up at a time
            done = self._done = threading.Event()
        threading.Thread(target=self._look, args=(done,), name="anole-limits", daemon=True).start()
        return done

    def _look(self, done: threading.Event) -> None:
        try:
            with sharing_store_sessions():
                self._queues = frozenset(self.service.store.runtime_limits())
        except Exception as exc:  # noqa: BLE001 - the claims go on with what was found before
            logger.debug("runtime limits not looked up (%s); as before until next time", exc)
        finally:
            close_connections()  # a thread's own, if the store used one (SQLite, POOL_SIZE 0)
            with self._lock:
                self._done = None
            done.set()
