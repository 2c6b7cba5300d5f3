"""The enqueue fast path for plain args (anole_jobs.plainargs): for any value, `check_args`
gives exactly what the general encode-then-decode round trip gives — the same encoded dict, or
the same error type and message — and the fast path is taken only for the kinds it is for."""

from __future__ import annotations

import json
import math
from dataclasses import InitVar, dataclass, field
from enum import IntEnum
from typing import Annotated, Any, ClassVar, Optional

import pytest
from django.core.validators import MinValueValidator
from hypothesis import given
from hypothesis import strategies as st

from anole_jobs import codec
from anole_jobs.errors import InvalidJob
from anole_jobs.jsontext import compact, compact_ascii
from anole_jobs.plainargs import plain_encoder


@dataclass
class Plain:
    count: int
    ratio: float
    name: str
    flag: bool
    nothing: None
    maybe: Optional[int] = None  # noqa: UP045 - the typing spelling is a case of its own
    label: str | None = None
    tagged: Annotated[int, "meta"] = 0


@dataclass(frozen=True, slots=True, kw_only=True)
class PlainSlots:
    count: int
    name: str = ""


@dataclass
class WithValidators:
    count: int = field(metadata={"validators": [MinValueValidator(1)]})


@dataclass
class WithClean:
    count: int

    def clean(self) -> None:
        if self.count < 0:
            raise ValueError("count must not be negative")


@dataclass
class WithPostInit:
    count: int

    def __post_init__(self) -> None:
        if self.count == 13:
            raise ValueError("unlucky")


@dataclass(init=False)
class OwnInit:
    count: int

    def __init__(self, count: int, extra: int = 0) -> None:
        self.count = count + extra


@dataclass
class WithInitVar:
    count: int
    scale: InitVar[int] = 1


@dataclass
class WithClassVar:
    count: int
    kind_name: ClassVar[str] = "x"


@dataclass
class NotInit:
    count: int
    double: int = field(init=False, default=0)


@dataclass
class Rich:
    items: list[int]
    mapping: dict[str, int]
    either: int | str


class Color(IntEnum):
    RED = 1


class MyStr(str):
    pass


class MyInt(int):
    pass


def test_the_fast_path_is_for_plain_kinds_only():
    assert plain_encoder(Plain) is not None
    assert plain_encoder(PlainSlots) is not None
    for cls in (WithValidators, WithClean, WithPostInit, OwnInit, WithInitVar, WithClassVar):
        assert plain_encoder(cls) is None, cls
    assert plain_encoder(NotInit) is None
    assert plain_encoder(Rich) is None
    assert plain_encoder(int) is None


def general(value: object) -> dict[str, Any]:
    """The general path: encode, then decode back as the worker will."""
    encoded = codec.encode_args(value)
    codec.decode_args(type(value), encoded)
    return encoded


def outcome(check: Any, value: object) -> tuple[str, Any]:
    try:
        return "ok", check(value)
    except InvalidJob as exc:
        return type(exc).__name__, str(exc)


# Values that are right, and values that are wrong in every way the codec knows of.
anything = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(),  # NaN and infinities too
    st.text(),
    st.text(alphabet=st.characters(codec="utf-8") | st.sampled_from(["\x00", "\ud800", "é"])),
    st.just(Color.RED),
    st.builds(MyStr, st.text(max_size=3)),
    st.builds(MyInt, st.integers()),
    st.lists(st.integers(), max_size=2),
    st.just({1, 2}),
    st.just(b"bytes"),
)


@given(
    count=anything,
    ratio=anything,
    name=anything,
    flag=anything,
    nothing=anything,
    maybe=anything,
    label=anything,
    tagged=anything,
)
def test_property_fast_path_gives_what_the_general_path_gives(**fields: Any) -> None:
    value = Plain(**fields)
    fast = plain_encoder(Plain)
    assert fast is not None
    shortcut = fast(value)
    expected = outcome(general, value)
    if shortcut is not None:  # the fast path answered: the general one must agree
        assert expected == ("ok", shortcut)
        assert json.dumps(shortcut) == json.dumps(expected[1])  # same types, same text
    assert outcome(codec.check_args, value) == expected


@given(count=anything, name=anything)
def test_property_slots_and_kw_only_kinds_agree_too(count: Any, name: Any) -> None:
    value = PlainSlots(count=count, name=name)
    assert outcome(codec.check_args, value) == outcome(general, value)


@pytest.mark.parametrize(
    ("value", "message"),
    [
        (Plain(count=True, ratio=1.0, name="", flag=True, nothing=None), "expected int"),
        (Plain(count=1, ratio=math.nan, name="", flag=True, nothing=None), "NaN"),
        (Plain(count=1, ratio=1.0, name="a\x00", flag=True, nothing=None), "NUL"),
        (Plain(count=1, ratio=1.0, name="\ud800", flag=True, nothing=None), "surrogate"),
        (Plain(count=1, ratio=1.0, name=1, flag=True, nothing=None), "expected str"),  # type: ignore[arg-type]
        (Plain(count=Color.RED, ratio=1.0, name="", flag=True, nothing=None), "enums"),
        (Plain(count=1, ratio=2**1100, name="", flag=True, nothing=None), "expected float"),
    ],
)
def test_bad_plain_values_raise_the_general_paths_errors(value: Plain, message: str) -> None:
    with pytest.raises(InvalidJob, match=message):
        codec.check_args(value)
    assert outcome(codec.check_args, value) == outcome(general, value)


def test_an_int_in_a_float_field_is_stored_as_the_general_path_stores_it():
    value = Plain(count=1, ratio=2, name="", flag=False, nothing=None)  # type: ignore[arg-type]
    assert codec.check_args(value) == general(value)
    assert type(codec.check_args(value)["ratio"]) is int


def test_kinds_off_the_fast_path_keep_their_rules():
    with pytest.raises(InvalidJob, match="greater than or equal to 1"):
        codec.check_args(WithValidators(0))
    with pytest.raises(InvalidJob, match="negative"):
        codec.check_args(WithClean(-1))
    with pytest.raises(InvalidJob, match="unlucky"):
        codec.check_args(_post_init_13())


def _post_init_13() -> WithPostInit:
    value = WithPostInit(1)
    value.count = 13  # valid when built, refused when the worker rebuilds it
    return value


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(),
    lambda children: st.lists(children, max_size=3) | st.dictionaries(st.text(), children),
    max_leaves=10,
)


@given(json_values)
def test_property_compact_json_is_json_dumps(value: Any) -> None:
    assert compact(value) == json.dumps(value, separators=(",", ":"), ensure_ascii=False)
    try:
        expected: str | None = json.dumps(value, separators=(",", ":"), allow_nan=False)
    except ValueError:
        expected = None
    if expected is None:
        with pytest.raises(ValueError):
            compact_ascii(value)
    else:
        assert compact_ascii(value) == expected
