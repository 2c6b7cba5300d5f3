"""Kinds and handlers: the `@kind` decorator and the process-wide registries.

A kind is declared on its args dataclass; `@jobs.handler(ArgsType)` registers the function
that runs it. Both registries live here so that decorating at import time needs no settings.

Leaf rule: imports only `bounds`, `durations`, `errors`, `backoff` and `unique`.
"""

from __future__ import annotations

import dataclasses
import inspect
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import timedelta
from typing import Any, TypeVar

from django.core.exceptions import ImproperlyConfigured

from anole_jobs.backoff import Backoff
from anole_jobs.bounds import check_name, count_problem
from anole_jobs.durations import Duration, to_timedelta
from anole_jobs.errors import InvalidJob
from anole_jobs.unique import Unique

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
    #: Per-job overrides read from a job's encoded args, for a kind whose options travel with
    #: each job (the django.tasks backend's); returning None keeps the kind's own value.
    attempts_of: Callable[[Mapping[str, Any]], int | None] | None = None
    timeout_of: Callable[[Mapping[str, Any]], timedelta | None] | None = None

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

    def add_kind(self, spec: KindSpec) -> None:
        with self._lock:
            existing = self._kinds.get(spec.name)
            if existing is not None and _origin(existing.args_type) != _origin(spec.args_type):
                raise ImproperlyConfigured(
                    f"kind {spec.name!r} is declared twice: on {_origin(existing.args_type)} "
                    f"and on {_origin(spec.args_type)}; kind names must be unique"
                )
            self._kinds[spec.name] = spec

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
        return handler

    def handler(self, kind_name: str) -> HandlerSpec | None:
        return self._handlers.get(kind_name)

    def handled_kinds(self) -> frozenset[str]:
        return frozenset(self._handlers)

    def remove_handler(self, kind_name: str) -> None:
        """Forget a handler (tests that model a worker without it)."""
        with self._lock:
            self._handlers.pop(kind_name, None)


def _origin(obj: Any) -> str:
    return f"{getattr(obj, '__module__', '?')}.{getattr(obj, '__qualname__', repr(obj))}"


registry = Registry()


def kind(
    name: str,
    *,
    queue: str = "default",
    priority: int = 0,
    attempts: int = 20,
    backoff: Callable[[int], timedelta] | None = None,
    timeout: Duration = timedelta(minutes=15),
    unique: Unique | None = None,
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

    def decorate(cls: type[T]) -> type[T]:
        if not (isinstance(cls, type) and dataclasses.is_dataclass(cls)):
            raise InvalidJob(
                f"{where} decorates a dataclass; put @kind above @dataclass on {cls!r}"
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
        )
        registry.add_kind(spec)
        setattr(cls, KIND_ATTRIBUTE, spec)
        return cls

    return decorate


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
