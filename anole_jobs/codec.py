"""Job arguments and meta as JSON: dataclass instances in, plain JSON data out, and back.
Nothing is ever pickled or imported from a payload.

This module owns the one mapping between an args dataclass and its stored JSON form: which
Python values may appear in arguments and how each is written (`encode_args`), how a stored
payload is read back and checked against the field annotations and field rules (`decode_args`),
the enqueue-time check that runs both exactly as the worker will (`check_args`), meta
validation (`ensure_json_object`) and the canonical text used for unique keys (`canonical_json`).

A leaf module: it imports only the standard library, ``django.core.exceptions``,
``anole_jobs.errors``, ``anole_jobs.jsontext`` and ``anole_jobs.plainargs`` (fast paths) — never
the registry, stores or runtime. Nothing is pickled or imported from a payload; a payload can
only name values of the types the annotations allow.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import math
import types
import typing
from collections.abc import Callable
from datetime import date, datetime
from decimal import Decimal, InvalidOperation
from enum import Enum
from typing import Any, NamedTuple, TypeVar, get_type_hints
from uuid import UUID

from django.core.exceptions import NON_FIELD_ERRORS, ValidationError

from anole_jobs.errors import InvalidJob
from anole_jobs.jsontext import compact
from anole_jobs.plainargs import plain_encoder

__all__ = [
    "DecodeError",
    "canonical_json",
    "check_args",
    "decode_args",
    "encode_args",
    "ensure_json_object",
]

T = TypeVar("T")

_SUPPORTED = (
    "supported: int, float, str, bool, None, list, tuple, dict with str keys, dataclass, "
    "aware datetime, date, Decimal, UUID"
)
_MAX_ERRORS = 20  # a payload with thousands of bad items must not make a megabyte message


class DecodeError(InvalidJob):
    """A payload that does not decode into its args dataclass (types or field rules).

    Raised by `decode_args`; the worker discards such a job since it can never pass.
    """


def _fail(cls: type[InvalidJob], errors: list[str]) -> InvalidJob:
    shown = errors[:_MAX_ERRORS]
    if len(errors) > _MAX_ERRORS:
        shown.append(f"... and {len(errors) - _MAX_ERRORS} more")
    return cls("; ".join(shown))


def _short(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def _got(value: object) -> str:
    return f"got {type(value).__name__} {_short(value)}"


# --- encoding ----------------------------------------------------------------------------------


@functools.cache
def _init_fields(cls: type) -> tuple[str, ...]:
    # Only init fields are stored: decoding passes them to the constructor; the others are
    # derived (usually in __post_init__) and would only bloat the payload and its unique key.
    return tuple(f.name for f in dataclasses.fields(cls) if f.init)


_HINTS: tuple[tuple[type | tuple[type, ...], str], ...] = (
    (Enum, "store its .value instead; enums are not supported"),
    ((set, frozenset), "use a list or tuple"),
    ((bytes, bytearray, memoryview), "decode it to str, e.g. with base64"),
    (type, "a class, not an instance"),
)


def _not_json(value: object, path: str) -> str:
    hint = next((hint for kinds, hint in _HINTS if isinstance(value, kinds)), _SUPPORTED)
    return f"{path}: value of type {type(value).__name__} is not JSON ({hint})"


def _to_json(value: object, path: str, errors: list[str], rich: bool) -> Any:
    """Return `value` as plain JSON data, appending a message to `errors` for each bad part.

    With `rich`, dataclass instances, datetimes, dates, Decimals and UUIDs are written in their
    JSON form (argument encoding); without it only plain JSON is accepted (meta).
    """
    if value is None or isinstance(value, bool):
        return value
    if isinstance(value, Enum):  # an IntEnum/StrEnum would pass as an int/str, then not decode
        errors.append(_not_json(value, path))
        return None
    if isinstance(value, int):
        return int(value)
    if isinstance(value, float):
        if not math.isfinite(value):
            errors.append(f"{path}: {value!r} is not JSON (NaN and infinities are not allowed)")
            return None
        return float(value)
    if isinstance(value, str):
        if "\x00" in value:
            # PostgreSQL's jsonb cannot store U+0000; refuse it on every store alike.
            errors.append(f"{path}: the string contains a NUL character (U+0000)")
            return None
        if not value.isascii() and not _is_utf8(value):
            errors.append(
                f"{path}: the string contains a lone surrogate (U+D800..U+DFFF), which UTF-8 "
                "cannot encode; decode bytes with errors='replace' or pass valid text"
            )
            return None
        return str(value)
    if isinstance(value, list | tuple):
        return [_to_json(item, f"{path}[{i}]", errors, rich) for i, item in enumerate(value)]
    if isinstance(value, dict):
        out: dict[str, Any] = {}
        for key, item in value.items():
            if not isinstance(key, str):
                errors.append(
                    f"{path}: dict key {_short(key)} of type {type(key).__name__} is not a str "
                    "(JSON object keys are strings)"
                )
                continue
            if "\x00" in key:
                errors.append(f"{path}: dict key {key!r} contains a NUL character (U+0000)")
                continue
            if not key.isascii() and not _is_utf8(key):
                errors.append(f"{path}: dict key {key!r} contains a lone surrogate")
                continue
            out[str(key)] = _to_json(item, f"{path}[{key!r}]", errors, rich)
        return out
    if rich:
        if dataclasses.is_dataclass(value) and not isinstance(value, type):
            return {
                name: _to_json(getattr(value, name), f"{path}.{name}", errors, rich)
                for name in _init_fields(type(value))
            }
        if isinstance(value, datetime):
            if value.utcoffset() is None:
                errors.append(
                    f"{path}: datetime {value.isoformat()} is naive; make it timezone-aware "
                    "(e.g. django.utils.timezone.make_aware, or tzinfo=datetime.UTC)"
                )
                return None
            return value.isoformat()
        if isinstance(value, date):
            return value.isoformat()
        if isinstance(value, Decimal):
            if not value.is_finite():
                errors.append(f"{path}: Decimal {value} is not allowed (only finite values)")
                return None
            return str(value)
        if isinstance(value, UUID):
            return str(value)
    errors.append(_not_json(value, path))
    return None


def _is_utf8(text: str) -> bool:
    # Lone surrogates pass through Python but no store can write them (UTF-8 refuses them).
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _convert(value: object, path: str, *, rich: bool) -> Any:
    errors: list[str] = []
    try:
        converted = _to_json(value, path, errors, rich)
    except RecursionError:
        raise InvalidJob(f"{path}: nested too deeply (or cyclic)")
    if errors:
        raise _fail(InvalidJob, errors)
    return converted


def encode_args(value: object) -> dict[str, Any]:
    """Return the JSON form of a dataclass instance: a dict holding only JSON types.

    Tuples become lists, nested dataclasses dicts, aware datetimes ISO 8601 strings, dates
    ``YYYY-MM-DD``, Decimals and UUIDs strings. Anything else (sets, bytes, enums, NaN,
    non-str dict keys, naive datetimes...) raises `InvalidJob` naming every offending path.
    """
    if not dataclasses.is_dataclass(value) or isinstance(value, type):
        raise InvalidJob(
            f"job arguments must be a dataclass instance, got {type(value).__name__}; "
            "decorate the class with @kind(...) and @dataclass and pass an instance"
        )
    return _convert(value, type(value).__name__, rich=True)


def encode_value(value: object, *, name: str = "value") -> Any:
    """Return any value in the JSON form argument encoding gives it (test helpers compare a
    user's expected args with stored ones this way); `InvalidJob` names what is not JSON."""
    return _convert(value, name, rich=True)


def ensure_json_object(value: object, *, name: str = "meta") -> dict[str, Any]:
    """Return `value` as a fresh dict of plain JSON types (None gives ``{}``).

    Anything but a dict with str keys whose content is JSON raises `InvalidJob` naming `name`
    and the path of each offending value.
    """
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise InvalidJob(
            f"{name} must be a JSON object (a dict with str keys), got {type(value).__name__}"
        )
    return _convert(value, name, rich=False)


def check_payload_size(args: object, meta: object, *, limit: int, where: str) -> None:
    """Refuse a job whose args and meta, as compact UTF-8 JSON, exceed `limit` bytes.

    A queue row is read on every claim and copied on every retry; a payload that large belongs
    in a file or a table, with its key in the job.
    """
    size = _json_size(args) + _json_size(meta)
    if size > limit:
        raise InvalidJob(
            f"{where}: the job's args and meta take {size} bytes of JSON, more than the "
            f"{limit} bytes MAX_PAYLOAD_BYTES allows; store the data elsewhere (a file, a "
            "model) and pass its key, or raise ANOLE_JOBS['MAX_PAYLOAD_BYTES']"
        )


def _json_size(value: object) -> int:
    """The bytes of `value` as compact UTF-8 JSON."""
    if isinstance(value, dict) and not value:
        return 2  # "{}": most meta
    text = compact(value)
    return len(text) if text.isascii() else len(text.encode("utf-8"))


def canonical_json(value: object) -> str:
    """Return the one text of JSON `value` that does not depend on dict key order (unique keys)."""
    try:
        return json.dumps(
            value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False
        )
    except (TypeError, ValueError) as exc:
        raise InvalidJob(f"value is not canonical JSON: {exc}")


# --- decoding ----------------------------------------------------------------------------------

# A decoder takes (data, path, errors) and returns the decoded value, or _INVALID after
# appending at least one message to errors. Decoders are built once per annotation and cached.
_Decoder = Callable[[Any, str, list[str]], Any]
_INVALID: Any = object()
_NoneType = type(None)
_DECODERS: dict[object, _Decoder] = {}


class _Field(NamedTuple):
    name: str
    decode: _Decoder
    required: bool
    validators: tuple[Callable[[Any], object], ...]


class _Unsupported(Exception):  # noqa: N818 - internal signal, never escapes this module
    pass


def _is_int(data: Any) -> bool:
    return isinstance(data, int) and not isinstance(data, bool)


_SCALARS: dict[object, tuple[str, Callable[[Any], bool], Callable[[Any], Any]]] = {
    _NoneType: ("None", lambda d: d is None, lambda d: d),
    bool: ("bool", lambda d: isinstance(d, bool), bool),
    int: ("int", _is_int, int),
    float: ("float", lambda d: _is_int(d) or isinstance(d, float) and math.isfinite(d), float),
    str: ("str", lambda d: isinstance(d, str), str),
}


def _parse_datetime(text: str) -> datetime:
    value = datetime.fromisoformat(text)  # accepts "Z" since Python 3.11
    if value.utcoffset() is None:
        raise ValueError("it has no UTC offset; a stored datetime must be timezone-aware")
    return value


def _parse_decimal(text: str) -> Decimal:
    try:
        value = Decimal(text)
    except InvalidOperation:
        raise ValueError("not a number")
    if not value.is_finite():
        raise ValueError("only finite values are allowed")
    return value


_TEXTUAL: dict[object, Callable[[str], Any]] = {
    datetime: _parse_datetime,
    date: date.fromisoformat,
    Decimal: _parse_decimal,
    UUID: UUID,
}


def _type_name(tp: object) -> str:
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    if tp is _NoneType or tp is Ellipsis:
        return "None" if tp is _NoneType else "..."
    if origin is typing.Union or origin is types.UnionType:
        return " | ".join(_type_name(a) for a in args)
    if origin is typing.Literal:
        return f"Literal{list(args)!r}"
    if origin is not None and args:
        return f"{_type_name(origin)}[{', '.join(_type_name(a) for a in args)}]"
    if isinstance(tp, type):
        return tp.__name__
    return repr(tp).replace("typing.", "")


def _report(message: str, data: Any, path: str, errors: list[str]) -> Any:
    errors.append(f"{path}: {message}")
    return _INVALID


def _decode_any(data: Any, path: str, errors: list[str]) -> Any:
    before = len(errors)
    value = _to_json(data, path, errors, rich=False)
    return _INVALID if len(errors) > before else value


def _decoder(tp: object) -> _Decoder:
    # Unions compare equal whatever their order (int | float == float | int), yet the first
    # alternative wins: the repr tells them apart. Only plans call this, so it is off the hot path.
    key = (tp, repr(tp))
    try:
        return _DECODERS[key]
    except KeyError:
        pass
    except TypeError:  # an unhashable annotation (e.g. Annotated metadata): build uncached
        return _build(tp)
    decoder = _DECODERS[key] = _build(tp)
    return decoder


def _build(tp: object) -> _Decoder:
    origin, args, name = typing.get_origin(tp), typing.get_args(tp), _type_name(tp)
    if origin is typing.Annotated:
        return _decoder(args[0])
    if tp is Any or tp is object:
        return _decode_any
    if tp in _SCALARS:
        return _scalar(*_SCALARS[tp])
    if tp in _TEXTUAL:
        return _textual(name, _TEXTUAL[tp])
    if isinstance(tp, type) and dataclasses.is_dataclass(tp):
        # The plan is looked up at call time, so a self-referencing dataclass builds fine.
        return functools.partial(_decode_object, tp)
    if tp is list or origin is list:
        return _sequence(name, _decoder(args[0] if args else Any))
    if tp is tuple or tp is typing.Tuple:  # noqa: UP006 - bare Tuple is tuple[Any, ...]
        return _sequence(name, _decode_any, as_tuple=True)
    if origin is tuple:
        if len(args) == 2 and args[1] is Ellipsis:
            return _sequence(name, _decoder(args[0]), as_tuple=True)
        fixed = () if args in ((), ((),)) else tuple(_decoder(a) for a in args)  # (()) is empty
        return _sequence(name, _decode_any, fixed, as_tuple=True)
    if tp is dict or origin is dict:
        if args and args[0] not in (str, Any):
            raise _Unsupported(f"{name} is not supported (JSON object keys are str)")
        return _mapping(name, _decoder(args[1] if args else Any))
    if origin is typing.Union or origin is types.UnionType:
        return _union(name, args)
    if origin is typing.Literal:
        return _literal(args)
    raise _Unsupported(
        f"{name} is not supported ({_SUPPORTED}, and list[T], tuple[...], dict[str, T], "
        "Optional, Union, Literal, Any)"
    )


def _scalar(name: str, accept: Callable[[Any], bool], convert: Callable[[Any], Any]) -> _Decoder:
    def decode(data: Any, path: str, errors: list[str]) -> Any:
        if accept(data):
            try:
                return convert(data)
            except OverflowError:  # an int too large for a float
                pass
        errors.append(f"{path}: expected {name}, {_got(data)}")
        return _INVALID

    return decode


def _textual(name: str, parse: Callable[[str], Any]) -> _Decoder:
    def decode(data: Any, path: str, errors: list[str]) -> Any:
        if not isinstance(data, str):
            errors.append(f"{path}: expected {name} (as a string), {_got(data)}")
            return _INVALID
        try:
            return parse(data)
        except (ValueError, ArithmeticError) as exc:
            errors.append(f"{path}: {_short(data)} is not a valid {name} ({exc})")
            return _INVALID

    return decode


def _sequence(
    name: str,
    item: _Decoder,
    fixed: tuple[_Decoder, ...] | None = None,
    *,
    as_tuple: bool = False,
) -> _Decoder:
    def decode(data: Any, path: str, errors: list[str]) -> Any:
        if not isinstance(data, list | tuple):
            errors.append(f"{path}: expected {name}, {_got(data)}")
            return _INVALID
        if fixed is not None and len(data) != len(fixed):
            errors.append(f"{path}: expected {name} of length {len(fixed)}, got {len(data)} items")
            return _INVALID
        decoders = fixed if fixed is not None else (item,) * len(data)
        pairs = enumerate(zip(decoders, data, strict=True))
        out = [decode_item(x, f"{path}[{i}]", errors) for i, (decode_item, x) in pairs]
        if any(x is _INVALID for x in out):
            return _INVALID
        return tuple(out) if as_tuple else out

    return decode


def _mapping(name: str, value: _Decoder) -> _Decoder:
    def decode(data: Any, path: str, errors: list[str]) -> Any:
        if not isinstance(data, dict):
            errors.append(f"{path}: expected {name}, {_got(data)}")
            return _INVALID
        before = len(errors)
        out: dict[str, Any] = {}
        for key, item in data.items():
            if isinstance(key, str):
                out[key] = value(item, f"{path}[{key!r}]", errors)
            else:
                errors.append(f"{path}: dict key {_short(key)} is not a str")
        return _INVALID if len(errors) > before else out

    return decode


def _union(name: str, args: tuple[object, ...]) -> _Decoder:
    allows_none = _NoneType in args
    others = [a for a in args if a is not _NoneType]
    if len(others) == 1:  # Optional[T]: report T's own (possibly nested) messages
        only = _decoder(others[0])

        def decode_optional(data: Any, path: str, errors: list[str]) -> Any:
            return None if data is None and allows_none else only(data, path, errors)

        return decode_optional
    alternatives = [_decoder(a) for a in args]

    def decode(data: Any, path: str, errors: list[str]) -> Any:
        for alternative in alternatives:  # the first alternative that accepts the data wins
            scratch: list[str] = []
            value = alternative(data, path, scratch)
            if not scratch:
                return value
        errors.append(f"{path}: expected {name}, {_got(data)}")
        return _INVALID

    return decode


def _literal(allowed: tuple[object, ...]) -> _Decoder:
    # Compare types too: True == 1 == 1.0, but Literal[1] must accept neither True nor 1.0.
    def decode(data: Any, path: str, errors: list[str]) -> Any:
        for value in allowed:
            if type(data) is type(value) and data == value:
                return value
        errors.append(f"{path}: expected one of {list(allowed)!r}, {_got(data)}")
        return _INVALID

    return decode


@functools.cache  # an exception is not cached: a class that fails keeps failing loudly
def _plan(cls: type) -> tuple[tuple[_Field, ...], bool]:
    """Return (fields, has clean()) for `cls`: its type hints resolved once per class."""
    try:
        hints = get_type_hints(cls, include_extras=True)
    except Exception as exc:  # NameError for an undefined name, TypeError for bad syntax...
        raise DecodeError(f"{cls.__name__}: cannot resolve the field annotations ({exc!r})")
    fields = []
    for f in dataclasses.fields(cls):
        if not f.init:
            continue
        try:
            decode = _decoder(hints.get(f.name, Any))
        except _Unsupported as exc:
            decode = functools.partial(_report, f"field type {exc}")
        required = f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING
        validators = tuple(f.metadata.get("validators", ()))
        fields.append(_Field(f.name, decode, required, validators))
    return tuple(fields), callable(getattr(cls, "clean", None))


def _rule_messages(exc: Exception, path: str) -> list[str]:
    if isinstance(exc, ValidationError):
        if hasattr(exc, "error_dict"):  # ValidationError({"field": ...}) from clean()
            out: list[str] = []
            for key, messages in exc.message_dict.items():
                where = path if key == NON_FIELD_ERRORS else f"{path}.{key}"
                out.extend(f"{where}: {message}" for message in messages)
            return out
        return [f"{path}: {message}" for message in exc.messages]
    return [f"{path}: {exc}"]


def _decode_object(cls: type, data: Any, path: str, errors: list[str]) -> Any:
    if not isinstance(data, dict):
        errors.append(f"{path}: expected {cls.__name__} (a JSON object), {_got(data)}")
        return _INVALID
    fields, has_clean = _plan(cls)
    before = len(errors)
    kwargs: dict[str, Any] = {}
    for f in fields:  # keys that are not fields are ignored (see decode_args)
        if f.name not in data:
            if f.required:  # a missing field with a default takes it, unvalidated
                errors.append(f"{path}.{f.name}: missing required field")
            continue
        where = f"{path}.{f.name}"
        kwargs[f.name] = value = f.decode(data[f.name], where, errors)
        if value is _INVALID:
            continue
        for validator in f.validators:
            try:
                validator(value)
            except (ValidationError, ValueError) as exc:
                errors.extend(_rule_messages(exc, where))
    if len(errors) > before:  # clean() may rely on every field being valid
        return _INVALID
    try:
        instance = cls(**kwargs)
    except (ValidationError, ValueError, TypeError) as exc:  # from __post_init__
        errors.extend(_rule_messages(exc, path))
        return _INVALID
    if has_clean:
        try:
            instance.clean()
        except (ValidationError, ValueError) as exc:
            errors.extend(_rule_messages(exc, path))
            return _INVALID
    return instance


def decode_args(cls: type[T], data: object) -> T:
    """Return the instance of dataclass `cls` that JSON `data` (a dict) describes.

    Each field is checked against its annotation (bool is not an int; an int is accepted for a
    float; datetimes must carry an offset), then against its field rules: the Django validators
    in ``field(metadata={"validators": [...]})``, then the instance's ``clean()`` if it has one.
    Keys that are not fields are ignored, so a payload written by a newer release still decodes
    during a rolling deploy; a missing field with a default takes the default. Every violation
    found is reported in one `DecodeError`, each message naming the field's path.
    """
    if not (isinstance(cls, type) and dataclasses.is_dataclass(cls)):
        raise DecodeError(f"decode_args needs a dataclass, got {cls!r}")
    errors: list[str] = []
    try:
        instance = _decode_object(cls, data, cls.__name__, errors)
    except RecursionError:
        raise DecodeError(f"{cls.__name__}: arguments are nested too deeply")
    if errors:
        raise _fail(DecodeError, errors)
    return instance


def check_args(value: object) -> dict[str, Any]:
    """Encode `value` and decode it back exactly as the worker will; return the encoded dict.

    This is the enqueue-time check: it raises `InvalidJob` (`DecodeError` for type and field
    rule violations) so that a job which could never run is refused at once.
    """
    plain = plain_encoder(type(value))
    if plain is not None:  # the same result without the round trip, or None: no shortcut
        encoded = plain(value)
        if encoded is not None:
            return encoded
    encoded = encode_args(value)
    decode_args(type(value), encoded)
    return encoded
