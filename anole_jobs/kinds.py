"""Kinds and handlers: the `@kind` decorator and the process-wide registries.

A kind is declared on its args dataclass; `@jobs.handler(ArgsType)` registers the function
that runs it. Both registries live here so that decorating at import time needs no settings.

Leaf rule: imports only `bounds`, `durations`, `errors`, `backoff` and `unique`.
"""

from __future__ import annotations

import dataclasses
import inspect
import json
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import timedelta
from typing import Any, TypeVar

from django.core.exceptions import ImproperlyConfigured

from anole_jobs.backoff import Backoff
from anole_jobs.bounds import check_name, count_problem
from anole_jobs.core import VERSION_MARK, claim_key
from anole_jobs.durations import Duration, to_timedelta
from anole_jobs.errors import InvalidJob
from anole_jobs.unique import Debounce, Unique

T = TypeVar("T")
PRIORITY_MIN, PRIORITY_MAX = -100, 100
KIND_ATTRIBUTE = "__anole_kind__"


@dataclass(frozen=True, kw_only=True)
class KindSpec:
    """Everything `@kind` declared about one args type."""

    name: str
    args_type: type
    queue: str = "default"
    priority: int = 0
    attempts: int = 20
    backoff: Backoff | None = None
    timeout: timedelta = timedelta(minutes=15)
    unique: Unique | None = None
    #: Fold bursts of enqueues into one job (docs/debounce.md).
    debounce: Debounce | None = None
    #: The args fields whose values make a sequence: jobs of the kind with the same values run
    #: one at a time, in enqueue order (docs/flow-control.md); empty for none.
    sequence: tuple[str, ...] = ()
    #: Per-job overrides read from a job's encoded args, for a kind whose options travel with
    #: each job (the django.tasks backend's); returning None keeps the kind's own value.
    attempts_of: Callable[[Mapping[str, Any]], int | None] | None = None
    timeout_of: Callable[[Mapping[str, Any]], timedelta | None] | None = None
    #: The version of the kind's args (docs/deploys.md): enqueues store it with each job.
    version: int = 1
    #: Former names of the kind: stored jobs of these run with this kind's handler.
    aliases: tuple[str, ...] = ()
    #: Args and result stored encrypted with `ENCRYPTION_KEYS`.
    encrypt: bool = False

    def attempts_for(self, args: Mapping[str, Any]) -> int:
        value = self.attempts_of(args) if self.attempts_of is not None else None
        return self.attempts if value is None else value

    def timeout_for(self, args: Mapping[str, Any]) -> timedelta:
        value = self.timeout_of(args) if self.timeout_of is not None else None
        return self.timeout if value is None else value


@dataclass(frozen=True, kw_only=True)
class HandlerSpec:
    kind: KindSpec
    func: Callable[..., Any]
    is_async: bool


def check_priority(priority: object, *, where: str) -> int:
    if isinstance(priority, bool) or not isinstance(priority, int):
        raise InvalidJob(f"{where}: priority must be an int in -100..100, got {priority!r}")
    if not PRIORITY_MIN <= priority <= PRIORITY_MAX:
        raise InvalidJob(
            f"{where}: priority must be in -100..100 (higher runs first), got {priority}"
        )
    return priority


def _duration(value: Duration, *, where: str) -> timedelta:
    try:
        return to_timedelta(value, name=where)
    except ValueError as exc:
        raise InvalidJob(str(exc)) from None


class Registry:
    """Kinds by name and handlers by kind name. Thread-safe; process-wide."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._kinds: dict[str, KindSpec] = {}
        self._handlers: dict[str, HandlerSpec] = {}
        self._upcasters: dict[tuple[str, int], Callable[[dict[str, Any]], dict[str, Any]]] = {}
        self._sequenced: frozenset[str] = frozenset()
        #: `claim_keys`, made once and again after any change (a pool claims many times a
        #: second); None: to be made.
        self._claim_keys: frozenset[str] | None = None

    def sequenced(self) -> frozenset[str]:
        """The names of the kinds declared with a sequence."""
        return self._sequenced

    def add_kind(self, spec: KindSpec) -> None:
        with self._lock:
            for alias in spec.aliases:
                other = next(
                    (k for k in self._kinds.values() if k.name != spec.name and alias in k.aliases),
                    None,
                )
                if other is not None or (alias in self._kinds and alias != spec.name):
                    raise ImproperlyConfigured(
                        f"kind {spec.name!r}: alias {alias!r} is already "
                        + (f"an alias of kind {other.name!r}" if other else "a kind's name")
                    )
            existing = self._kinds.get(spec.name)
            if existing is not None and _origin(existing.args_type) != _origin(spec.args_type):
                raise ImproperlyConfigured(
                    f"kind {spec.name!r} is declared twice: on {_origin(existing.args_type)} "
                    f"and on {_origin(spec.args_type)}; kind names must be unique"
                )
            self._kinds[spec.name] = spec
            self._claim_keys = None
            self._sequenced = frozenset(k.name for k in self._kinds.values() if k.sequence)

    def kind(self, name: str) -> KindSpec | None:
        return self._kinds.get(name)

    def kinds(self) -> list[KindSpec]:
        return list(self._kinds.values())

    def add_handler(self, spec: KindSpec, func: Callable[..., Any]) -> HandlerSpec:
        handler = HandlerSpec(kind=spec, func=func, is_async=inspect.iscoroutinefunction(func))
        with self._lock:
            existing = self._handlers.get(spec.name)
            # A module imported twice (autoreload, tests) re-registers the same function: fine.
            if existing is not None and _origin(existing.func) != _origin(func):
                raise ImproperlyConfigured(
                    f"kind {spec.name!r} already has a handler, {_origin(existing.func)}; "
                    f"{_origin(func)} cannot be a second one (one handler per kind)"
                )
            self._handlers[spec.name] = handler
            self._claim_keys = None
        return handler

    def handler(self, kind_name: str) -> HandlerSpec | None:
        return self._handlers.get(kind_name)

    def handled_kinds(self) -> frozenset[str]:
        """What this process's claims name: the handled kinds, their aliases, and the stored
        versions it can run (`claim_keys`)."""
        return self.claim_keys()

    # -- aliases, versions and upcasters (docs/deploys.md) ---------------------------------
    def add_upcaster(
        self, kind_name: str, from_version: int, func: Callable[[dict[str, Any]], dict[str, Any]]
    ) -> None:
        with self._lock:
            existing = self._upcasters.get((kind_name, from_version))
            if existing is not None and _origin(existing) != _origin(func):
                raise ImproperlyConfigured(
                    f"kind {kind_name!r} already has an upcaster from version {from_version}: "
                    f"{_origin(existing)}"
                )
            self._upcasters[(kind_name, from_version)] = func
            self._claim_keys = None

    def remove_upcaster(self, kind_name: str, from_version: int) -> None:
        """Forget an upcaster (tests that model code without it)."""
        with self._lock:
            self._upcasters.pop((kind_name, from_version), None)
            self._claim_keys = None

    def canonical(self, name: str) -> KindSpec | None:
        """The kind named `name` or having it as an alias, or None."""
        spec = self._kinds.get(name)
        if spec is not None:
            return spec
        for candidate in list(self._kinds.values()):
            if name in candidate.aliases:
                return candidate
        return None

    def resolve(self, name: str) -> HandlerSpec | None:
        """The handler that runs stored jobs of kind `name`: its own, or that of the kind
        having `name` as an alias."""
        handler = self._handlers.get(name)
        if handler is not None:
            return handler
        spec = self.canonical(name)
        return None if spec is None else self._handlers.get(spec.name)

    def upcast_path(self, kind_name: str, from_version: int, to_version: int) -> bool:
        """Whether upcasters lead from `from_version` to `to_version` of `kind_name`."""
        return all((kind_name, v) in self._upcasters for v in range(from_version, to_version))

    def missing_upcaster(self, kind_name: str, from_version: int, to_version: int) -> int | None:
        """The first version with no upcaster on the way to `to_version`, or None."""
        for v in range(from_version, to_version):
            if (kind_name, v) not in self._upcasters:
                return v
        return None

    def upcast(
        self, kind_name: str, args: Mapping[str, Any], from_version: int, to_version: int
    ) -> dict[str, Any]:
        """`args` of `from_version` brought to `to_version` through the upcasters (each takes
        a copy). `InvalidJob` when the chain has a gap."""
        value = dict(args)
        for v in range(from_version, to_version):
            func = self._upcasters.get((kind_name, v))
            if func is None:
                raise InvalidJob(f"kind {kind_name!r} has no upcaster from version {v}")
            value = func(dict(value))
            if not isinstance(value, dict):
                raise InvalidJob(
                    f"the upcaster of {kind_name!r} from version {v} returned "
                    f"{type(value).__name__}, not a dict"
                )
        return value

    def runnable_versions(self, kind_name: str) -> list[int]:
        """The stored versions of `kind_name`'s jobs this process can run: its own version
        and every older one with an upcaster path to it."""
        spec = self._kinds.get(kind_name)
        if spec is None:
            return []
        return [
            v for v in range(1, spec.version + 1) if self.upcast_path(spec.name, v, spec.version)
        ]

    def known_versions(self) -> dict[str, int]:
        """``{kind or alias: version}`` of every handled kind (what this process's workers
        record in their presence rows: a job of a higher version waits for another worker)."""
        known: dict[str, int] = {}
        for name in list(self._handlers):
            spec = self._kinds.get(name)
            if spec is None:
                continue
            for label in (spec.name, *spec.aliases):
                known[label] = spec.version
        return known

    def can_run(self, kind_name: str, version: int) -> bool:
        """Whether this process runs a stored job of `kind_name` at `version`."""
        handler = self.resolve(kind_name)
        if handler is None:
            return False
        return version in self.runnable_versions(handler.kind.name)

    def claim_keys(self) -> frozenset[str]:
        """What a claim's `kinds` names for this process (see `claim_key`): every handled
        kind and alias at each version it can run."""
        keys = self._claim_keys
        if keys is None:
            with self._lock:
                keys = self._claim_keys
                if keys is None:
                    keys = self._claim_keys = self._make_claim_keys()
        return keys

    def _make_claim_keys(self) -> frozenset[str]:
        keys: set[str] = set()
        for name in list(self._handlers):
            spec = self._kinds.get(name)
            labels = (name,) if spec is None else (spec.name, *spec.aliases)
            versions = [1] if spec is None else self.runnable_versions(name)
            for label in labels:
                keys.update(claim_key(label, v) for v in versions)
        return frozenset(keys)

    def remove_kind(self, kind_name: str) -> None:
        """Forget a kind and its handler (tests that declare a kind for a while)."""
        with self._lock:
            self._kinds.pop(kind_name, None)
            self._handlers.pop(kind_name, None)
            self._claim_keys = None

    def remove_handler(self, kind_name: str) -> None:
        """Forget a handler (tests that model a worker without it)."""
        with self._lock:
            self._handlers.pop(kind_name, None)
            self._claim_keys = None


def _origin(obj: Any) -> str:
    return f"{getattr(obj, '__module__', '?')}.{getattr(obj, '__qualname__', repr(obj))}"


registry = Registry()


Upcaster = Callable[[dict[str, Any]], dict[str, Any]]


def upcaster(kind_name: str, *, from_version: int) -> Callable[[Upcaster], Upcaster]:
    """Register a function that turns the args of `kind_name`'s jobs stored at
    `from_version` (a dict) into those of the next version (a dict)."""
    name = check_name(kind_name, what="a kind name", where="upcaster()")
    if isinstance(from_version, bool) or not isinstance(from_version, int) or from_version < 1:
        raise InvalidJob(f"upcaster({name!r}): from_version must be an int >= 1")

    def decorate(func: Upcaster) -> Upcaster:
        if not callable(func):
            raise InvalidJob(f"upcaster({name!r}) decorates a function (args dict) -> dict")
        registry.add_upcaster(name, from_version, func)
        return func

    return decorate


def kind(
    name: str,
    *,
    queue: str = "default",
    priority: int = 0,
    attempts: int = 20,
    backoff: Callable[[int], timedelta] | None = None,
    timeout: Duration = timedelta(minutes=15),
    unique: Unique | None = None,
    debounce: Debounce | None = None,
    version: int = 1,
    aliases: Sequence[str] = (),
    encrypt: bool = False,
    sequence: str | list[str] | tuple[str, ...] | None = None,
) -> Callable[[type[T]], type[T]]:
    """Declare a dataclass as the arguments of job kind `name`."""
    where = f"kind({name!r})"
    name = check_name(name, what="a kind name", where="kind()")
    queue = check_name(queue, what="a queue name", where=where)
    check_priority(priority, where=where)
    problem = count_problem(attempts, what="attempts")
    if problem is not None:
        raise InvalidJob(f"{where}: {problem}")
    if backoff is not None and not callable(backoff):
        raise InvalidJob(f"{where}: backoff must be a callable (attempt) -> timedelta")
    timeout_td = _duration(timeout, where=f"{where} timeout")
    if timeout_td <= timedelta(0):
        raise InvalidJob(f"{where}: timeout must be positive")
    if unique is not None and not isinstance(unique, Unique):
        raise InvalidJob(f"{where}: unique must be a Unique(...), got {unique!r}")
    if debounce is not None and not isinstance(debounce, Debounce):
        raise InvalidJob(f"{where}: debounce must be a Debounce(...), got {debounce!r}")
    if debounce is not None and unique is not None:
        raise InvalidJob(
            f"{where}: give unique or debounce, not both (a debounced job is one per key)"
        )

    if isinstance(version, bool) or not isinstance(version, int) or not 1 <= version <= 32767:
        raise InvalidJob(f"{where}: version must be an int from 1 to 32767, got {version!r}")
    if isinstance(aliases, str):
        raise InvalidJob(f"{where}: aliases must be a list of kind names, not a str")
    alias_names = tuple(check_name(a, what="a kind alias", where=where) for a in aliases)
    if name in alias_names:
        raise InvalidJob(f"{where}: a kind cannot be its own alias")
    if version > 1 and any(VERSION_MARK in a for a in (name, *alias_names)):
        raise InvalidJob(f"{where}: a versioned kind's names cannot hold {VERSION_MARK!r}")
    if not isinstance(encrypt, bool):
        raise InvalidJob(f"{where}: encrypt must be True or False")
    sequence_fields = _sequence_fields(sequence, where=where)

    def decorate(cls: type[T]) -> type[T]:
        if not (isinstance(cls, type) and dataclasses.is_dataclass(cls)):
            raise InvalidJob(
                f"{where} decorates a dataclass; put @kind above @dataclass on {cls!r}"
            )
        names = {f.name for f in dataclasses.fields(cls)}
        missing = [f for f in sequence_fields if f not in names]
        if missing:
            raise InvalidJob(
                f"{where}: sequence names {', '.join(map(repr, missing))}, which is no field"
                f" of {cls.__qualname__} (its fields: {', '.join(sorted(names)) or 'none'})"
            )
        spec = KindSpec(
            name=name,
            args_type=cls,
            queue=queue,
            priority=priority,
            attempts=attempts,
            backoff=backoff,
            timeout=timeout_td,
            unique=unique,
            debounce=debounce,
            version=version,
            aliases=alias_names,
            encrypt=encrypt,
            sequence=sequence_fields,
        )
        registry.add_kind(spec)
        setattr(cls, KIND_ATTRIBUTE, spec)
        return cls

    return decorate


def _sequence_fields(value: object, *, where: str) -> tuple[str, ...]:
    """`sequence=` as a tuple of field names: a name, or a non-empty list of distinct ones."""
    if value is None:
        return ()
    fields = [value] if isinstance(value, str) else value
    if (
        not isinstance(fields, (list, tuple))
        or not fields
        or not all(isinstance(f, str) and f for f in fields)
        or len(set(fields)) != len(fields)
    ):
        raise InvalidJob(
            f"{where}: sequence must be an args field name or a non-empty list of distinct"
            f" field names, got {value!r}"
        )
    return tuple(fields)


def sequence_key(spec: KindSpec, args: Mapping[str, Any]) -> str | None:
    """The sequence a job of `spec` with (encoded) `args` belongs to, None for a kind without
    one: the kind's name and the JSON of its fields' values."""
    if not spec.sequence:
        return None
    values = [args.get(name) for name in spec.sequence]
    value = values[0] if len(values) == 1 else values
    return f"{spec.name}:{json.dumps(value, sort_keys=True, default=str)}"


def set_job_options(
    args_type: type,
    *,
    attempts_of: Callable[[Mapping[str, Any]], int | None] | None = None,
    timeout_of: Callable[[Mapping[str, Any]], timedelta | None] | None = None,
) -> KindSpec:
    """Let each job of `args_type`'s kind carry its own attempts and timeout in its args
    (read by `attempts_of`/`timeout_of`); call before registering its handler."""
    spec = dataclasses.replace(spec_of(args_type), attempts_of=attempts_of, timeout_of=timeout_of)
    registry.add_kind(spec)
    setattr(args_type, KIND_ATTRIBUTE, spec)
    return spec


def spec_of(args_type: type) -> KindSpec:
    """The `KindSpec` of a decorated args type; `InvalidJob` for anything else."""
    spec = args_type.__dict__.get(KIND_ATTRIBUTE) if isinstance(args_type, type) else None
    if not isinstance(spec, KindSpec):
        name = getattr(args_type, "__qualname__", repr(args_type))
        raise InvalidJob(
            f"{name} is not a job kind: decorate its dataclass with "
            f"@kind('some.name') from anole_jobs"
        )
    return spec
