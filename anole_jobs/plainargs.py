"""The enqueue fast path of `codec.check_args`, for args dataclasses whose fields are plain.

`codec.check_args` encodes an args instance and decodes it back exactly as the worker will,
so a job that could never run is refused at enqueue. For the commonest kinds — every field an
``int``, ``float``, ``str``, ``bool`` or ``None`` (or an ``Optional`` of one), no field rules,
no ``clean()``, no ``__post_init__``, the dataclass's own ``__init__`` — that round trip can
only succeed when each value already has exactly its annotated type, and then the encoded
dict is the instance's fields as they are. `plain_encoder(cls)` returns a function that checks
exactly that and returns the encoded dict, or None whenever anything is off (a wrong type, a
subclass, NaN, a NUL, a lone surrogate...): the caller then takes the general path, which
raises the error with its usual message. So the fast path changes no result and no error; it
only skips building them (a hypothesis test holds the two paths to the same outputs).

A leaf module: it imports only the standard library.
"""

from __future__ import annotations

import dataclasses
import math
import types
import typing
from collections.abc import Callable
from typing import Any

_NoneType = type(None)

#: An encoded plain dict, or None: "not plain, take the general path".
PlainEncoder = Callable[[object], "dict[str, Any] | None"]
_Check = Callable[[Any], bool]


def _is_int(value: Any) -> bool:
    return type(value) is int


def _is_float(value: Any) -> bool:
    # An int in a float field decodes as a float (and a huge one fails): the general path.
    return type(value) is float and math.isfinite(value)


def _is_str(value: Any) -> bool:
    if type(value) is not str or "\x00" in value:
        return False
    if value.isascii():
        return True
    try:
        value.encode("utf-8")  # a lone surrogate cannot be stored
    except UnicodeEncodeError:
        return False
    return True


def _is_bool(value: Any) -> bool:
    return type(value) is bool


def _is_none(value: Any) -> bool:
    return value is None


_CHECKS: dict[object, _Check] = {
    int: _is_int,
    float: _is_float,
    str: _is_str,
    bool: _is_bool,
    _NoneType: _is_none,
}


def _optional(check: _Check) -> _Check:
    def optional(value: Any) -> bool:
        return value is None or check(value)

    return optional


def _check_for(annotation: object) -> _Check | None:
    """The exact-type check of a plain annotation, or None when it is not plain."""
    origin, args = typing.get_origin(annotation), typing.get_args(annotation)
    if origin is typing.Annotated:  # the decoder ignores the metadata too
        return _check_for(args[0])
    try:
        check = _CHECKS.get(annotation)
    except TypeError:  # unhashable
        return None
    if check is not None:
        return check
    if (origin is typing.Union or origin is types.UnionType) and len(args) == 2:
        others = [arg for arg in args if arg is not _NoneType]
        if len(others) == 1 and others[0] in _CHECKS:
            return _optional(_CHECKS[others[0]])
    return None


def _generated_init(cls: type) -> bool:
    # The decoder builds the instance with cls(**fields): equivalent to the instance at hand
    # only with the dataclass's generated __init__ (exec'd from a string by `dataclasses`).
    init = cls.__dict__.get("__init__") or getattr(cls, "__init__", None)
    code = getattr(init, "__code__", None)
    return code is not None and code.co_filename == "<string>"


_ENCODERS: dict[type, PlainEncoder | None] = {}


def plain_encoder(cls: type) -> PlainEncoder | None:
    """The fast encoder of args dataclass `cls`, or None when `cls` is not plain (see the
    module docstring). Cached per class."""
    try:
        return _ENCODERS[cls]
    except KeyError:
        encoder = _ENCODERS[cls] = _build(cls)
        return encoder
    except TypeError:  # a class whose metaclass makes it unhashable: no shortcut
        return None


def _build(cls: type) -> PlainEncoder | None:
    if not (isinstance(cls, type) and dataclasses.is_dataclass(cls)):
        return None
    if hasattr(cls, "__post_init__") or callable(getattr(cls, "clean", None)):
        return None
    if not _generated_init(cls):
        return None
    fields = dataclasses.fields(cls)
    # InitVar and ClassVar pseudo-fields, and init=False fields, change what decoding builds.
    if len(fields) != len(cls.__dataclass_fields__) or not all(f.init for f in fields):
        return None
    try:
        hints = typing.get_type_hints(cls, include_extras=True)
    except Exception:  # unresolvable annotations: the general path reports them
        return None
    plan: list[tuple[str, _Check]] = []
    for f in fields:
        if f.metadata.get("validators"):
            return None
        check = _check_for(hints.get(f.name, Any))
        if check is None:
            return None
        plan.append((f.name, check))
    frozen_plan = tuple(plan)

    def encode(value: object) -> dict[str, Any] | None:
        out: dict[str, Any] = {}
        for name, check in frozen_plan:
            item = getattr(value, name)
            if not check(item):
                return None
            out[name] = item
        return out

    return encode
