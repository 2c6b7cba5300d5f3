"""The instrumented store: one wrapper at the contract seam that times every store call.

`InstrumentedStore` wraps any `Store` and forwards its whole public contract — every public
method, property and attribute of `Store`, abstract or optional — to the wrapped store. For
each call of a timed method it emits one ``STORE_CALL {method, seconds, ok}`` event on the bus
(``ok`` is False when the call raised). Metrics and tracing listen to that event; no store
emits anything itself (Oban's engine wrapper is the model). When nobody listens to
``STORE_CALL``, a call costs one dict lookup more than a call on the bare store.

The forwarding methods are generated from `Store` itself, so a method added to the contract
later is forwarded (and timed) without anyone remembering to write it out here. Attributes
outside the contract (a store's `alias`, `client`, `keys` …) are on `inner`, the wrapped store:
the wrapper has no `__getattr__`, which would slow every attribute read on it (Python then
takes its slow path for all of them, the wrapper's own `inner` and `bus` included).

The timer comes in as an argument: a store never reads the clock itself (only `clock.py` does).
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

from anole_jobs import events
from anole_jobs.background import shares_store_sessions
from anole_jobs.stores.base import Store
from anole_jobs.stores.wakeups import WakeupHub

#: Contract methods forwarded without a timing: they hand out a handle, are hooks or only
#: compute, not calls whose duration says anything about the store.
UNTIMED = frozenset(
    {
        "subscribe",
        "subscribe_finished",
        "wake_finished",
        "waits_for_finished",
        "close",
        "lowest_id_below",
        "shared_session",
        "name_sessions",
    }
)

#: Contract methods that never borrow a shared session (`Store.shared_session`): they open
#: none, or they are the borrowing itself.
SESSIONLESS = frozenset(
    {"subscribe", "subscribe_finished", "close", "shared_session", "name_sessions"}
)


class InstrumentedStore(Store):
    """`inner` with every contract call timed by `timer` (seconds) and reported on `bus`."""

    def __init__(self, inner: Store, *, bus: events.EventBus, timer: Callable[[], float]) -> None:
        self.inner = inner
        self.bus = bus
        self.timer = timer
        # Plain attributes of the contract, copied once: `atomic_alias` is read per enqueue.
        for name in CONTRACT_ATTRIBUTES:
            setattr(self, name, getattr(inner, name))

    def __repr__(self) -> str:
        return f"InstrumentedStore({self.inner!r})"

    @property
    def wakeups(self) -> WakeupHub:
        """The wrapped store's hub, never a second one."""
        return self.inner.wakeups

    @property
    def finished_wakeups(self) -> WakeupHub:
        """The wrapped store's hub of result waiters, never a second one."""
        return self.inner.finished_wakeups

    def _timed(self, method: str, call: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Any:
        started = self.timer()
        ok = False
        try:
            result = call(*args, **kwargs)
            ok = True
            return result
        finally:
            self.bus.emit(events.STORE_CALL, method=method, seconds=self.timer() - started, ok=ok)


def _forwarding_method(name: str, *, timed: bool) -> Callable[..., Any]:
    """A method with `Store.<name>`'s own signature (for `inspect` and `help()`) that calls
    the wrapped store's, timed when someone listens to STORE_CALL. No source is generated:
    the package never runs `exec`, and the repacking of the arguments costs well under a
    microsecond beside a store's round trip."""
    contract = getattr(Store, name)
    # The contract's defaults are passed on explicitly, as a caller of the contract expects
    # them, whatever default the wrapped store's own signature declares.
    defaults: list[tuple[int, str, Any]] = []  # (position or -1 for keyword-only, name, value)
    for position, parameter in enumerate(list(inspect.signature(contract).parameters.values())[1:]):
        if parameter.kind not in (parameter.POSITIONAL_OR_KEYWORD, parameter.KEYWORD_ONLY):
            raise TypeError(f"Store.{name}: only plain and keyword-only parameters are wrapped")
        if parameter.default is not parameter.empty:
            keyword_only = parameter.kind is parameter.KEYWORD_ONLY
            defaults.append((-1 if keyword_only else position, parameter.name, parameter.default))

    def with_defaults(args: tuple[Any, ...], kwargs: dict[str, Any]) -> dict[str, Any]:
        for position, key, value in defaults:
            if key not in kwargs and not 0 <= position < len(args):
                kwargs[key] = value
        return kwargs

    if timed:

        def method(self: InstrumentedStore, *args: Any, **kwargs: Any) -> Any:
            kwargs = with_defaults(args, kwargs)
            if self.shares_sessions and shares_store_sessions():
                # A runtime thread: the call runs on one of the store's shared sessions.
                with self.inner.shared_session():
                    if events.STORE_CALL in self.bus.by_name:
                        return self._timed(name, getattr(self.inner, name), *args, **kwargs)
                    return getattr(self.inner, name)(*args, **kwargs)
            if events.STORE_CALL in self.bus.by_name:
                return self._timed(name, getattr(self.inner, name), *args, **kwargs)
            return getattr(self.inner, name)(*args, **kwargs)

    elif name not in SESSIONLESS:

        def method(self: InstrumentedStore, *args: Any, **kwargs: Any) -> Any:
            kwargs = with_defaults(args, kwargs)
            if self.shares_sessions and shares_store_sessions():
                with self.inner.shared_session():
                    return getattr(self.inner, name)(*args, **kwargs)
            return getattr(self.inner, name)(*args, **kwargs)

    else:

        def method(self: InstrumentedStore, *args: Any, **kwargs: Any) -> Any:
            return getattr(self.inner, name)(*args, **with_defaults(args, kwargs))

    method.__name__ = name
    method.__signature__ = inspect.signature(contract)  # type: ignore[attr-defined]
    return method


def _public(name: str) -> bool:
    return not name.startswith("_")


#: The public methods of the contract (abstract or optional), every one forwarded.
CONTRACT_METHODS: tuple[str, ...] = tuple(
    name for name, value in vars(Store).items() if _public(name) and inspect.isfunction(value)
)
#: The contract's properties (each written out on the wrapper, as `wakeups` is).
CONTRACT_PROPERTIES: tuple[str, ...] = tuple(
    name for name, value in vars(Store).items() if _public(name) and isinstance(value, property)
)
#: The contract's plain attributes (`atomic_alias`, `name`, the capabilities), copied from the
#: wrapped store.
CONTRACT_ATTRIBUTES: tuple[str, ...] = tuple(
    dict.fromkeys(
        name
        for name in (*vars(Store), *Store.__annotations__)
        if _public(name) and name not in CONTRACT_METHODS and name not in CONTRACT_PROPERTIES
    )
)

for _name in CONTRACT_METHODS:
    _method = _forwarding_method(_name, timed=_name not in UNTIMED)
    _method.__qualname__ = f"InstrumentedStore.{_name}"
    _method.__doc__ = getattr(Store, _name).__doc__
    setattr(InstrumentedStore, _name, _method)
for _name in CONTRACT_PROPERTIES:
    if _name not in vars(InstrumentedStore):
        raise TypeError(f"InstrumentedStore must forward the contract's property {_name!r}")
# Every abstract method now has its forwarding method.
InstrumentedStore.__abstractmethods__ = frozenset()


def instrument(
    store: Store, *, bus: events.EventBus, timer: Callable[[], float]
) -> InstrumentedStore:
    """`store` wrapped once (a store already wrapped is returned as it is)."""
    if isinstance(store, InstrumentedStore):
        return store
    # The forwarding methods are set on the class just above, which mypy cannot see.
    return InstrumentedStore(store, bus=bus, timer=timer)  # type: ignore[abstract]
