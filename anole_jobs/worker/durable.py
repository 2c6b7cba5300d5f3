"""Durable execution inside one attempt (docs/durable.md): what `job.step`, `job.astep`,
`job.sleep_for` / `sleep_until` and `job.wait_for_signal` do, for the executor's control.

A handler replays from the top on every attempt; each durable call looks up its name in the
job's recorded steps (read from the store once, at the attempt's first durable call) and
returns the recorded value instead of running again. Every write is fenced by the run's
claim, so a stale attempt records nothing.

Parking (a sleep, a wait for a signal) writes the job back ``scheduled`` itself, the attempt
given back, as `job.complete_in` writes its completion; then raises `Parked`, and the
executor reports the run ``snoozed`` with nothing more to write. A wait for a signal first
records the awaited name (fenced), then parks, then asks the store to wake the job if the
signal came in between: with `Store.signal` waking a job parked for its name in the same
write, no interleaving loses a signal.
"""

from __future__ import annotations

import asyncio
import inspect
import json
import threading
from collections.abc import Callable
from dataclasses import replace
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any, TypeVar

from asgiref.sync import async_to_sync
from django.db import connections, transaction

from anole_jobs import encryption
from anole_jobs.errors import Canceled, Parked, SignalTimeout
from anole_jobs.jsontext import compact
from anole_jobs.records import encode_result
from anole_jobs.stores.base import Finish
from anole_jobs.stores.durable import DurableState, StepEntry, iso, parse_iso

if TYPE_CHECKING:
    from anole_jobs.service import JobService
    from anole_jobs.stores.base import ClaimedJob
    from anole_jobs.worker.cancel import CancelScope

T = TypeVar("T")


class DurableRun:
    """The durable calls of one attempt."""

    def __init__(
        self,
        service: JobService,
        claimed: ClaimedJob,
        scope: CancelScope,
        started_at: Callable[[], datetime | None],
    ) -> None:
        self.service = service
        self.claimed = claimed
        self.scope = scope
        self._started_at = started_at
        self._state: DurableState | None = None
        self._steps: dict[str, StepEntry] = {}
        #: Set once the run wrote the job back ``scheduled``: nothing more to write.
        self.parked = False

    @property
    def store(self) -> Any:
        return self.service.store

    @property
    def _seal_keys(self) -> tuple[str, ...] | None:
        """The keys a step's record is sealed with: those of ENCRYPTION_KEYS for a kind
        declared with encrypt=True (its steps, like its args and result, are stored
        encrypted), else None."""
        spec = self.service.registry.canonical(self.claimed.record.kind)
        if spec is None or not spec.encrypt:
            return None
        return tuple(self.service.settings.encryption_keys)

    # -- reads ------------------------------------------------------------------------------
    def _load(self) -> DurableState:
        state = self.store.durable_state(self.claimed.run.id)
        if state is None:
            return DurableState()
        if any(encryption.is_sealed(entry.value) for entry in state.steps):
            keys = self.service.settings.encryption_keys
            opened = tuple(
                replace(entry, value=encryption.open_sealed(entry.value, keys))
                if encryption.is_sealed(entry.value)
                else entry
                for entry in state.steps
            )
            state = replace(state, steps=opened)
        return state

    def state(self) -> DurableState:
        """The job's durable state as this attempt began using it (read once)."""
        if self._state is None:
            self._state = self._on_thread(self._load)
            self._steps = self._state.step_map()
        return self._state

    def _recorded(self, name: str) -> StepEntry | None:
        self.state()
        return self._steps.get(name)

    # -- steps ------------------------------------------------------------------------------
    def _check_atomic(self, atomic: bool) -> str | None:
        if not atomic:
            return None
        alias: str | None = self.store.atomic_alias
        if alias is None:
            raise ValueError(
                f"job.step(..., atomic=True) needs the database store; the {self.store.name}"
                " store has no transaction to join"
            )
        return alias

    def _encode(self, name: str, value: Any) -> str:
        text = encode_result(
            value, limit=self.service.settings.max_result_bytes, where=f"step {name!r}"
        )
        return "null" if text is None else text

    def _record(self, name: str, text: str) -> Any:
        now = self.service.clock()
        keys = self._seal_keys
        stored = text if keys is None else compact(encryption.seal_text(text, keys))
        if not self.store.record_step(self.claimed.run, name=name, value=stored, at=now):
            raise Canceled("lost")  # the job moved on without this run: it records nothing
        value = json.loads(text)
        self._steps[name] = StepEntry(name=name, value=value, at=now)
        return json.loads(text)

    def step(
        self,
        name: str,
        fn: Callable[..., Any],
        args: tuple[Any, ...],
        kwargs: dict[str, Any],
        *,
        atomic: bool,
    ) -> Any:
        alias = self._check_atomic(atomic)
        found = self._recorded(name)
        if found is not None:
            return _copy(found.value)
        self.scope.check()
        # From an async handler the sync `fn` and the record run on a thread of their own
        # (Django refuses connections on the loop's thread): `fn` may use the ORM there, as
        # in a sync handler, on every store.
        if _in_event_loop():
            return off_the_loop(self._run_step, name, fn, args, kwargs, alias)
        return self._run_step(name, fn, args, kwargs, alias)

    def _run_step(
        self,
        name: str,
        fn: Callable[..., Any],
        args: tuple[Any, ...],
        kwargs: dict[str, Any],
        alias: str | None,
    ) -> Any:
        if alias is None:
            return self._record(name, self._encode(name, fn(*args, **kwargs)))
        with transaction.atomic(using=alias):
            # fn's writes and the record commit together, or neither does (a lost fence
            # raises here, inside the block, so the block rolls back).
            return self._record(name, self._encode(name, fn(*args, **kwargs)))

    async def astep(
        self,
        name: str,
        fn: Callable[..., Any],
        args: tuple[Any, ...],
        kwargs: dict[str, Any],
        *,
        atomic: bool,
    ) -> Any:
        alias = self._check_atomic(atomic)
        found = await self._off_loop(self._recorded, name)
        if found is not None:
            return _copy(found.value)
        self.scope.check()
        if alias is not None:

            def in_transaction() -> Any:
                with transaction.atomic(using=alias):
                    if inspect.iscoroutinefunction(fn):
                        value = async_to_sync(fn)(*args, **kwargs)
                    else:
                        value = fn(*args, **kwargs)
                    return self._record(name, self._encode(name, value))

            return await self._off_loop(in_transaction)
        value = fn(*args, **kwargs)
        if inspect.isawaitable(value):
            value = await value
        text = self._encode(name, value)
        return await self._off_loop(self._record, name, text)

    # -- sleeps -----------------------------------------------------------------------------
    def sleep_until(self, name: str, when: datetime | None, delay: timedelta | None) -> None:
        self._on_thread(self._sleep_until, name, when, delay)

    def _sleep_until(self, name: str, when: datetime | None, delay: timedelta | None) -> None:
        now = self.service.clock()
        found = self._recorded(name)
        if found is not None:
            wake = _wake_time(name, found.value)
        else:
            wake = when if when is not None else now + (delay or timedelta(0))
            self._record(name, json.dumps(iso(wake)))
        if wake <= now:
            return None
        self._park(wake, awaiting=None)

    # -- signals ----------------------------------------------------------------------------
    def wait_for_signal(self, name: str, timeout: timedelta) -> Any:
        return self._on_thread(self._wait_for_signal, name, timeout)

    def _wait_for_signal(self, name: str, timeout: timedelta) -> Any:
        state = self._load()  # fresh: a signal may have come since the attempt began
        if name in state.signals:
            if state.awaiting == name:
                self._await(None, None)
            return state.signals[name]
        now = self.service.clock()
        deadline = state.waits.get(name)
        if deadline is None:
            deadline = now + timeout
        if deadline <= now:
            if state.awaiting == name:
                self._await(None, None)
            raise SignalTimeout(f"no signal {name!r} came by its deadline, {deadline.isoformat()}")
        self._park(deadline, awaiting=name)
        return None  # not reached: parking raises

    def _await(self, name: str | None, deadline: datetime | None) -> None:
        if not self.store.await_signal(self.claimed.run, name=name, deadline=deadline):
            raise Canceled("lost")

    # -- parking ----------------------------------------------------------------------------
    def _park(self, until: datetime, *, awaiting: str | None) -> None:
        self.scope.check()
        if awaiting is not None:
            self._await(awaiting, until)
        elif self._state is not None and self._state.awaiting is not None:
            self._await(None, None)  # a wait that ended: a later signal must not wake a sleep
        now = self.service.clock()
        finish = Finish(
            run=self.claimed.run,
            state="scheduled",
            at=now,
            scheduled_at=until,
            give_back_attempt=True,
            started_at=self._started_at(),
        )
        (written,) = self.store.finish([finish])
        if not written:
            raise Canceled("lost")
        self.parked = True
        if awaiting is not None:
            # A signal stored while the job was still running found it not yet parked.
            self.store.wake_signalled(self.claimed.run.id, now=now)
        raise Parked(until)

    # -- threads ----------------------------------------------------------------------------
    def _on_thread(self, fn: Callable[..., T], *args: Any) -> T:
        return on_a_thread(self.store, fn, *args)

    async def _off_loop(self, fn: Callable[..., T], *args: Any) -> T:
        """`fn(*args)` for an async handler: at once on a store without Django connections,
        else on a thread of the loop's executor, whose connections are closed after it
        (Django refuses them on the loop's own thread)."""
        if self.store.atomic_alias is None:
            return fn(*args)

        def closing() -> T:
            try:
                return fn(*args)
            finally:
                connections.close_all()

        return await asyncio.to_thread(closing)


def on_a_thread(store: Any, fn: Callable[..., T], *args: Any) -> T:
    """`fn(*args)` here, or, when called from an event loop's thread (an async handler's
    sync call: `job.step`, `job.record_output` ...) on the database store, whose connections
    Django refuses there, on a short-lived thread of its own whose connections are closed
    after it. The loop waits for it: these are single short writes."""
    if store.atomic_alias is None or not _in_event_loop():
        return fn(*args)
    return off_the_loop(fn, *args)


def off_the_loop(fn: Callable[..., T], *args: Any) -> T:
    """`fn(*args)` on a short-lived thread (its Django connections closed after it), waited
    for."""
    outcome: list[tuple[bool, Any]] = []

    def target() -> None:
        try:
            outcome.append((True, fn(*args)))
        except BaseException as exc:  # noqa: BLE001 - handed back to the caller
            outcome.append((False, exc))
        finally:
            connections.close_all()

    thread = threading.Thread(target=target, name="anole-jobs-off-loop")
    thread.start()
    thread.join()
    ok, value = outcome[0]
    if not ok:
        raise value
    return value


def _in_event_loop() -> bool:
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return False
    return True


def _copy(value: Any) -> Any:
    return json.loads(json.dumps(value))


def _wake_time(name: str, value: Any) -> datetime:
    try:
        return parse_iso(value)
    except (TypeError, ValueError):
        raise ValueError(
            f"step {name!r} holds {value!r:.60}, not a sleep's wake-up time: steps and sleeps"
            " share one namespace per job"
        ) from None
