"""The instrumented store: one wrapper at the contract seam that times every store call.

`InstrumentedStore` wraps any `Store` and, for each contract method, emits one
``STORE_CALL {method, seconds, ok}`` event on the bus (``ok`` is False when the call raised).
Metrics and tracing listen to that event; no store emits anything itself (Oban's engine
wrapper is the model). When nothing listens, a call costs one attribute check more than a call
on the bare store.

The timer comes in as an argument: a store never reads the clock itself (only `clock.py` does).
Attributes outside the contract (a store's `alias`, `client`, `keys` …) are on `inner`, the
wrapped store: the wrapper has no `__getattr__`, which would slow every attribute read on it.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping, Sequence
from datetime import datetime, timedelta
from typing import Any, ParamSpec, TypeVar

from anole_jobs import events
from anole_jobs.stores.base import (
    ClaimedJob,
    CronState,
    Finish,
    Inserted,
    JobRecord,
    ListFilter,
    NewJob,
    Rescued,
    RunRef,
    Store,
)
from anole_jobs.stores.wakeups import Subscription, WakeupHub

P = ParamSpec("P")
R = TypeVar("R")


class InstrumentedStore(Store):
    """`inner` with every contract call timed by `timer` (seconds) and reported on `bus`."""

    def __init__(self, inner: Store, *, bus: events.EventBus, timer: Callable[[], float]) -> None:
        self.inner = inner
        self.bus = bus
        self.timer = timer
        self.atomic_alias = inner.atomic_alias
        self.capabilities = inner.capabilities
        self.name = inner.name

    def __repr__(self) -> str:
        return f"InstrumentedStore({self.inner!r})"

    def _timed(self, method: str, call: Callable[P, R], /, *args: P.args, **kwargs: P.kwargs) -> R:
        started = self.timer()
        ok = False
        try:
            result = call(*args, **kwargs)
            ok = True
            return result
        finally:
            self.bus.emit(events.STORE_CALL, method=method, seconds=self.timer() - started, ok=ok)

    # -- enqueueing ------------------------------------------------------------------------
    def insert(self, jobs: Sequence[NewJob]) -> list[Inserted]:
        if not self.bus.listeners:
            return self.inner.insert(jobs)
        return self._timed("insert", self.inner.insert, jobs)

    # -- running ---------------------------------------------------------------------------
    def claim(
        self,
        queue: str,
        *,
        kinds: Collection[str] | None,
        limit: int,
        now: datetime,
        lease_until: datetime,
        worker: str,
    ) -> list[ClaimedJob]:
        if not self.bus.listeners:
            return self.inner.claim(
                queue, kinds=kinds, limit=limit, now=now, lease_until=lease_until, worker=worker
            )
        return self._timed(
            "claim",
            self.inner.claim,
            queue,
            kinds=kinds,
            limit=limit,
            now=now,
            lease_until=lease_until,
            worker=worker,
        )

    def heartbeat(self, runs: Collection[RunRef], *, lease_until: datetime) -> set[RunRef]:
        if not self.bus.listeners:
            return self.inner.heartbeat(runs, lease_until=lease_until)
        return self._timed("heartbeat", self.inner.heartbeat, runs, lease_until=lease_until)

    def finish(self, results: Sequence[Finish]) -> list[bool]:
        if not self.bus.listeners:
            return self.inner.finish(results)
        return self._timed("finish", self.inner.finish, results)

    def relax_claim_durability(self) -> None:
        self.inner.relax_claim_durability()

    # -- maintenance -----------------------------------------------------------------------
    def stage(self, *, now: datetime, limit: int = 10_000) -> int:
        if not self.bus.listeners:
            return self.inner.stage(now=now, limit=limit)
        return self._timed("stage", self.inner.stage, now=now, limit=limit)

    def rescue(self, *, now: datetime, limit: int = 10_000) -> list[Rescued]:
        if not self.bus.listeners:
            return self.inner.rescue(now=now, limit=limit)
        return self._timed("rescue", self.inner.rescue, now=now, limit=limit)

    def prune(
        self, *, now: datetime, horizons: Mapping[str, timedelta], limit: int = 10_000
    ) -> int:
        if not self.bus.listeners:
            return self.inner.prune(now=now, horizons=horizons, limit=limit)
        return self._timed("prune", self.inner.prune, now=now, horizons=horizons, limit=limit)

    def waiting_kinds(self, queues: Collection[str]) -> dict[str, set[str]]:
        if not self.bus.listeners:
            return self.inner.waiting_kinds(queues)
        return self._timed("waiting_kinds", self.inner.waiting_kinds, queues)

    def lead(self, *, instance: str, now: datetime, ttl: timedelta) -> bool:
        if not self.bus.listeners:
            return self.inner.lead(instance=instance, now=now, ttl=ttl)
        return self._timed("lead", self.inner.lead, instance=instance, now=now, ttl=ttl)

    def resign(self, *, instance: str) -> None:
        if not self.bus.listeners:
            self.inner.resign(instance=instance)
        self._timed("resign", self.inner.resign, instance=instance)

    # -- cron ------------------------------------------------------------------------------
    def cron_states(self, names: Collection[str]) -> dict[str, CronState]:
        if not self.bus.listeners:
            return self.inner.cron_states(names)
        return self._timed("cron_states", self.inner.cron_states, names)

    def cron_advance(self, *, name: str, tick: datetime, job: NewJob | None) -> Inserted | None:
        if not self.bus.listeners:
            return self.inner.cron_advance(name=name, tick=tick, job=job)
        return self._timed("cron_advance", self.inner.cron_advance, name=name, tick=tick, job=job)

    # -- admin -----------------------------------------------------------------------------
    def get(self, job_id: int) -> JobRecord | None:
        if not self.bus.listeners:
            return self.inner.get(job_id)
        return self._timed("get", self.inner.get, job_id)

    def list(self, filter: ListFilter) -> list[JobRecord]:
        if not self.bus.listeners:
            return self.inner.list(filter)
        return self._timed("list", self.inner.list, filter)

    def counts(self) -> dict[str, dict[str, int]]:
        if not self.bus.listeners:
            return self.inner.counts()
        return self._timed("counts", self.inner.counts)

    def retry(self, job_id: int, *, now: datetime) -> JobRecord | None:
        if not self.bus.listeners:
            return self.inner.retry(job_id, now=now)
        return self._timed("retry", self.inner.retry, job_id, now=now)

    def cancel(self, job_id: int, *, now: datetime) -> JobRecord | None:
        if not self.bus.listeners:
            return self.inner.cancel(job_id, now=now)
        return self._timed("cancel", self.inner.cancel, job_id, now=now)

    def delete(self, job_id: int) -> bool:
        if not self.bus.listeners:
            return self.inner.delete(job_id)
        return self._timed("delete", self.inner.delete, job_id)

    # -- queue pause -----------------------------------------------------------------------
    def pause(self, queue: str, *, now: datetime) -> bool:
        if not self.bus.listeners:
            return self.inner.pause(queue, now=now)
        return self._timed("pause", self.inner.pause, queue, now=now)

    def resume(self, queue: str) -> bool:
        if not self.bus.listeners:
            return self.inner.resume(queue)
        return self._timed("resume", self.inner.resume, queue)

    def paused_queues(self) -> dict[str, datetime]:
        if not self.bus.listeners:
            return self.inner.paused_queues()
        return self._timed("paused_queues", self.inner.paused_queues)

    # -- wake-ups (the wrapped store's hub, never a second one) ------------------------------
    def wake(self, queues: Collection[str]) -> None:
        if not self.bus.listeners:
            self.inner.wake(queues)
        self._timed("wake", self.inner.wake, queues)

    def subscribe(self, queues: Collection[str]) -> Subscription:
        return self.inner.subscribe(queues)

    @property
    def wakeups(self) -> WakeupHub:
        return self.inner.wakeups

    # -- lifecycle -------------------------------------------------------------------------
    def close(self) -> None:
        self.inner.close()


def _delegate(method: str) -> Callable[..., Any]:
    def call(self: InstrumentedStore, *args: Any, **kwargs: Any) -> Any:
        target = getattr(self.inner, method)
        if not self.bus.listeners:
            return target(*args, **kwargs)
        return self._timed(method, target, *args, **kwargs)

    call.__name__ = method
    return call


# A contract method added to `Store` later, and not yet written out above, is still timed and
# delegated (so the wrapper never turns abstract); write it out when you add one.
for _method in InstrumentedStore.__abstractmethods__:
    setattr(InstrumentedStore, _method, _delegate(_method))
InstrumentedStore.__abstractmethods__ = frozenset()


def instrument(
    store: Store, *, bus: events.EventBus, timer: Callable[[], float]
) -> InstrumentedStore:
    """`store` wrapped once (a store already wrapped is returned as it is)."""
    if isinstance(store, InstrumentedStore):
        return store
    return InstrumentedStore(store, bus=bus, timer=timer)
