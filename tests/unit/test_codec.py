"""The args/meta codec: encoding, decoding with type checks and field rules."""

from __future__ import annotations

import json
import math
import typing
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta, timezone
from decimal import Decimal
from enum import Enum
from typing import Annotated, Any, Literal, Optional, Union
from uuid import UUID

import pytest
from django.core.exceptions import ValidationError
from django.core.validators import MaxLengthValidator, MinValueValidator
from hypothesis import given
from hypothesis import strategies as st

from anole_jobs import codec
from anole_jobs.codec import (
    DecodeError,
    canonical_json,
    check_args,
    decode_args,
    encode_args,
    ensure_json_object,
)
from anole_jobs.errors import InvalidJob

# --- sample args types (module level, so string annotations resolve) ---------------------------


@dataclass
class Address:
    street: str
    zip_code: str = field(default="", metadata={"validators": [MaxLengthValidator(5)]})


@dataclass
class Everything:
    i: int
    f: float
    s: str
    b: bool
    n: None
    ints: list[int]
    pair: tuple[int, str]
    many: tuple[float, ...]
    mapping: dict[str, int]
    address: Address
    maybe: Optional[int]  # noqa: UP045 - typing.Optional is part of what is tested
    maybe_new: str | None
    either: Union[int, str]  # noqa: UP007 - typing.Union is part of what is tested
    anything: Any
    mode: Literal["fast", "slow"]
    at: datetime
    day: date
    amount: Decimal
    ident: UUID
    addresses: list[Address] = field(default_factory=list)
    bare_list: list = field(default_factory=list)
    bare_dict: dict = field(default_factory=dict)


def everything(**changes: Any) -> Everything:
    values: dict[str, Any] = {
        "i": 7,
        "f": 2.5,
        "s": "hé",
        "b": True,
        "n": None,
        "ints": [1, 2, 3],
        "pair": (1, "one"),
        "many": (0.5, 1.5),
        "mapping": {"a": 1},
        "address": Address("Main St", "12345"),
        "maybe": None,
        "maybe_new": "x",
        "either": "text",
        "anything": {"k": [1, "two", None, 3.5, True]},
        "mode": "slow",
        "at": datetime(2024, 5, 6, 7, 8, 9, 123456, tzinfo=timezone(timedelta(hours=2))),
        "day": date(2024, 2, 29),
        "amount": Decimal("1.50"),
        "ident": UUID("12345678-1234-5678-1234-567812345678"),
        "addresses": [Address("A"), Address("B", "999")],
        "bare_list": [1, "x"],
        "bare_dict": {"z": [None]},
    }
    values.update(changes)
    return Everything(**values)


def stored(**changes: Any) -> dict[str, Any]:
    """A valid stored payload of `Everything`, with some keys replaced."""
    data = json.loads(json.dumps(encode_args(everything())))
    data.update(changes)
    return data


@dataclass
class SendWelcome:
    user_id: int = field(metadata={"validators": [MinValueValidator(1)]})
    tags: list[Any] = field(default_factory=list)
    name: str = field(default="", metadata={"validators": [MaxLengthValidator(3)]})


@dataclass
class Window:
    start: int
    end: int

    def clean(self) -> None:
        if self.end < self.start:
            raise ValidationError("end must not be before start")
        if self.end == self.start:
            raise ValueError("an empty window")
        if self.end - self.start > 100:
            raise ValidationError({"end": "too far from start", "__all__": "window too wide"})


@dataclass
class Node:
    name: str
    children: list[Node] = field(default_factory=list)


@dataclass
class PostInit:
    n: int

    def __post_init__(self) -> None:
        if self.n < 0:
            raise ValueError("n must not be negative")


class Color(Enum):
    RED = "red"


@dataclass
class WithEnum:
    color: Color


@dataclass
class IntKeys:
    mapping: dict[int, str]


@dataclass
class Strict:
    one: Literal[1]
    pair: tuple[int, int]
    empty: tuple[()] = ()
    number_first: float | int = 0
    int_first: int | float = 0
    annotated: Annotated[int, "a note"] = 0


# --- round trips -------------------------------------------------------------------------------


def test_every_supported_type_round_trips_through_json_text() -> None:
    value = everything()
    encoded = encode_args(value)
    assert decode_args(Everything, json.loads(json.dumps(encoded))) == value


def test_encoded_form_holds_only_plain_json_types() -> None:
    encoded = encode_args(everything())
    assert encoded["pair"] == [1, "one"]
    assert encoded["many"] == [0.5, 1.5]
    assert encoded["address"] == {"street": "Main St", "zip_code": "12345"}
    assert encoded["at"] == "2024-05-06T07:08:09.123456+02:00"
    assert encoded["day"] == "2024-02-29"
    assert encoded["amount"] == "1.50"
    assert encoded["ident"] == "12345678-1234-5678-1234-567812345678"
    assert json.loads(json.dumps(encoded, allow_nan=False)) == encoded


def test_decoded_values_have_the_annotated_types() -> None:
    decoded = decode_args(Everything, stored(f=3, at="2024-01-01T00:00:00Z"))
    assert decoded.f == 3.0 and type(decoded.f) is float
    assert decoded.at == datetime(2024, 1, 1, tzinfo=UTC)
    assert isinstance(decoded.pair, tuple) and isinstance(decoded.many, tuple)
    assert isinstance(decoded.address, Address) and isinstance(decoded.addresses[1], Address)
    assert isinstance(decoded.amount, Decimal) and isinstance(decoded.ident, UUID)


def test_recursive_dataclass_round_trips() -> None:
    tree = Node("root", [Node("a", [Node("a1")]), Node("b")])
    assert decode_args(Node, encode_args(tree)) == tree


def test_fields_with_defaults_may_be_missing() -> None:
    assert decode_args(SendWelcome, {"user_id": 3}) == SendWelcome(3, [], "")


def test_unknown_keys_are_ignored() -> None:
    assert decode_args(SendWelcome, {"user_id": 3, "added_later": {"x": 1}}) == SendWelcome(3)


def test_union_takes_the_first_alternative_that_matches() -> None:
    assert decode_args(Everything, stored(either=5)).either == 5
    assert decode_args(Everything, stored(either="5")).either == "5"
    decoded = decode_args(Strict, {"one": 1, "pair": [1, 2], "number_first": 2, "int_first": 2})
    assert type(decoded.number_first) is float and type(decoded.int_first) is int


# --- decode type mismatches --------------------------------------------------------------------


@pytest.mark.parametrize(
    ("key", "bad", "expected"),
    [
        ("i", "7", "Everything.i: expected int, got str '7'"),
        ("i", 7.0, "Everything.i: expected int, got float 7.0"),
        ("f", "2.5", "Everything.f: expected float, got str"),
        ("s", 5, "Everything.s: expected str, got int 5"),
        ("b", 1, "Everything.b: expected bool, got int 1"),
        ("n", 0, "Everything.n: expected None, got int 0"),
        ("ints", {"a": 1}, "Everything.ints: expected list[int], got dict"),
        ("ints", [1, 2, "3"], "Everything.ints[2]: expected int, got str '3'"),
        ("pair", [1], "Everything.pair: expected tuple[int, str] of length 2, got 1 items"),
        ("pair", [1, 2], "Everything.pair[1]: expected str, got int 2"),
        ("many", [1, "x"], "Everything.many[1]: expected float, got str"),
        ("mapping", [], "Everything.mapping: expected dict[str, int], got list"),
        ("mapping", {"a": "1"}, "Everything.mapping['a']: expected int, got str"),
        ("address", "Main St", "Everything.address: expected Address (a JSON object), got str"),
        ("address", {"street": 5}, "Everything.address.street: expected str, got int 5"),
        ("addresses", [{"street": "A"}, {}], "Everything.addresses[1].street: missing required"),
        ("addresses", {}, "Everything.addresses: expected list[Address], got dict {}"),
        ("maybe", "1", "Everything.maybe: expected int, got str '1'"),
        ("maybe_new", 1, "Everything.maybe_new: expected str, got int 1"),
        ("either", None, "Everything.either: expected int | str, got NoneType None"),
        ("mode", "medium", "Everything.mode: expected one of ['fast', 'slow'], got str"),
        ("at", 1700000000, "Everything.at: expected datetime (as a string), got int"),
        ("at", "yesterday", "Everything.at: 'yesterday' is not a valid datetime"),
        ("at", "2024-01-01T10:00:00", "Everything.at: '2024-01-01T10:00:00' is not a valid"),
        ("day", "2024-02-30", "Everything.day: '2024-02-30' is not a valid date"),
        ("day", "2024-01-01T00:00:00+00:00", "Everything.day: '2024-01-01T00:00:00+00:00' is"),
        ("amount", 1.5, "Everything.amount: expected Decimal (as a string), got float"),
        ("amount", "one", "Everything.amount: 'one' is not a valid Decimal"),
        ("amount", "NaN", "Everything.amount: 'NaN' is not a valid Decimal"),
        ("ident", "not-a-uuid", "Everything.ident: 'not-a-uuid' is not a valid UUID"),
        ("anything", {"k": float("nan")}, "Everything.anything['k']: nan is not JSON"),
        ("bare_list", "x", "Everything.bare_list: expected list, got str"),
        ("bare_dict", [], "Everything.bare_dict: expected dict, got list"),
    ],
)
def test_type_mismatch_names_the_field_path(key: str, bad: object, expected: str) -> None:
    with pytest.raises(DecodeError) as info:
        decode_args(Everything, stored(**{key: bad}))
    assert str(info.value).startswith(expected), str(info.value)


def test_bool_is_not_an_int_nor_a_float() -> None:
    with pytest.raises(DecodeError, match=r"^Everything\.i: expected int, got bool True$"):
        decode_args(Everything, stored(i=True))
    with pytest.raises(DecodeError, match=r"^Everything\.f: expected float, got bool False$"):
        decode_args(Everything, stored(f=False))


def test_naive_datetime_in_payload_is_rejected_and_z_is_accepted() -> None:
    with pytest.raises(DecodeError, match="no UTC offset"):
        decode_args(Everything, stored(at="2024-01-01T10:00:00"))
    assert decode_args(Everything, stored(at="2024-01-01T10:00:00Z")).at.utcoffset() == timedelta()


def test_literal_and_fixed_tuples_are_strict() -> None:
    good = {"one": 1, "pair": [1, 2]}
    assert decode_args(Strict, good) == Strict(1, (1, 2))
    with pytest.raises(DecodeError, match=r"Strict\.one: expected one of \[1\], got bool True"):
        decode_args(Strict, {**good, "one": True})
    with pytest.raises(DecodeError, match=r"Strict\.one: expected one of \[1\], got float"):
        decode_args(Strict, {**good, "one": 1.0})
    with pytest.raises(DecodeError, match=r"Strict\.empty: expected tuple\[\(\)\] of length 0"):
        decode_args(Strict, {**good, "empty": [1]})
    with pytest.raises(DecodeError, match=r"Strict\.annotated: expected int, got str"):
        decode_args(Strict, {**good, "annotated": "1"})
    assert decode_args(Strict, {**good, "annotated": 4}).annotated == 4


def test_missing_required_field() -> None:
    with pytest.raises(DecodeError, match=r"^SendWelcome\.user_id: missing required field$"):
        decode_args(SendWelcome, {"tags": []})


@pytest.mark.parametrize("data", [None, [], "x", 5, [("user_id", 1)]])
def test_data_that_is_not_a_dict(data: object) -> None:
    with pytest.raises(DecodeError, match=r"^SendWelcome: expected SendWelcome \(a JSON object\)"):
        decode_args(SendWelcome, data)


def test_decode_needs_a_dataclass() -> None:
    with pytest.raises(DecodeError, match="needs a dataclass"):
        decode_args(dict, {})


def test_unsupported_annotations_are_reported_per_field() -> None:
    with pytest.raises(DecodeError, match=r"^WithEnum\.color: field type Color is not supported"):
        decode_args(WithEnum, {"color": "red"})
    with pytest.raises(DecodeError, match=r"IntKeys\.mapping: field type dict\[int, str\]"):
        decode_args(IntKeys, {"mapping": {}})


def test_decode_error_is_an_invalid_job() -> None:
    assert issubclass(DecodeError, InvalidJob)
    with pytest.raises(InvalidJob):
        decode_args(SendWelcome, {})


def test_all_field_errors_are_joined_in_one_message() -> None:
    with pytest.raises(DecodeError) as info:
        decode_args(Everything, stored(i="x", s=1, address={"street": None}))
    assert str(info.value) == (
        "Everything.i: expected int, got str 'x'; Everything.s: expected str, got int 1; "
        "Everything.address.street: expected str, got NoneType None"
    )


def test_a_flood_of_errors_is_capped() -> None:
    with pytest.raises(DecodeError) as info:
        decode_args(Everything, stored(ints=["x"] * 50))
    message = str(info.value)
    assert message.count("expected int") == 20
    assert message.endswith("... and 30 more")


# --- field rules -------------------------------------------------------------------------------


def test_validator_message_names_the_field() -> None:
    with pytest.raises(DecodeError) as info:
        decode_args(SendWelcome, {"user_id": 0})
    message = "SendWelcome.user_id: Ensure this value is greater than or equal to 1."
    assert str(info.value) == message


def test_validator_errors_of_several_fields_are_joined() -> None:
    with pytest.raises(DecodeError) as info:
        decode_args(SendWelcome, {"user_id": -5, "name": "long name", "tags": "x"})
    message = str(info.value)
    assert message.split("; ") == [
        "SendWelcome.user_id: Ensure this value is greater than or equal to 1.",
        "SendWelcome.tags: expected list[Any], got str 'x'",
        "SendWelcome.name: Ensure this value has at most 3 characters (it has 9).",
    ]


def test_nested_validator_message_has_the_nested_path() -> None:
    with pytest.raises(DecodeError, match=r"^Everything\.addresses\[0\]\.zip_code: Ensure this"):
        decode_args(Everything, stored(addresses=[{"street": "x", "zip_code": "1234567"}]))


def test_validators_run_on_values_not_on_types() -> None:
    # A type error is reported as such; the validator does not see (and crash on) a str.
    with pytest.raises(DecodeError, match=r"^SendWelcome\.user_id: expected int, got str '0'$"):
        decode_args(SendWelcome, {"user_id": "0"})


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        ({"start": 5, "end": 1}, "Window: end must not be before start"),
        ({"start": 5, "end": 5}, "Window: an empty window"),
        ({"start": 0, "end": 500}, "Window.end: too far from start; Window: window too wide"),
    ],
)
def test_clean_message(data: dict[str, int], expected: str) -> None:
    with pytest.raises(DecodeError) as info:
        decode_args(Window, data)
    assert str(info.value) == expected
    assert decode_args(Window, {"start": 1, "end": 2}) == Window(1, 2)


def test_post_init_error_is_reported() -> None:
    with pytest.raises(DecodeError, match=r"^PostInit: n must not be negative$"):
        decode_args(PostInit, {"n": -1})


# --- encoding ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("tags", "expected"),
    [
        ([1, 2, {3}], "SendWelcome.tags[2]: value of type set is not JSON (use a list or tuple)"),
        ([b"x"], "SendWelcome.tags[0]: value of type bytes is not JSON (decode it to str"),
        ([object()], "SendWelcome.tags[0]: value of type object is not JSON (supported: int"),
        ([Color.RED], "SendWelcome.tags[0]: value of type Color is not JSON (store its .value"),
        ([math.nan], "SendWelcome.tags[0]: nan is not JSON (NaN and infinities"),
        ([{"a": -math.inf}], "SendWelcome.tags[0]['a']: -inf is not JSON"),
        ([{1: "a"}], "SendWelcome.tags[0]: dict key 1 of type int is not a str"),
        ([Decimal("Infinity")], "SendWelcome.tags[0]: Decimal Infinity is not allowed"),
        ([Address], "SendWelcome.tags[0]: value of type type is not JSON (a class, not an"),
        ([timedelta(1)], "SendWelcome.tags[0]: value of type timedelta is not JSON"),
    ],
)
def test_encode_rejects_what_is_not_json(tags: list[Any], expected: str) -> None:
    with pytest.raises(InvalidJob) as info:
        encode_args(SendWelcome(1, tags))
    assert str(info.value).startswith(expected), str(info.value)


def test_naive_datetime_is_rejected_at_encode() -> None:
    with pytest.raises(InvalidJob, match=r"^Everything\.at: datetime 2024-01-01T00:00:00 is naive"):
        encode_args(everything(at=datetime(2024, 1, 1)))  # noqa: DTZ001 - the point of the test


def test_encode_reports_every_bad_value() -> None:
    with pytest.raises(InvalidJob) as info:
        encode_args(SendWelcome(1, [set(), Node("x", [Node("y", [b""])])]))  # type: ignore[list-item]
    assert str(info.value) == (
        "SendWelcome.tags[0]: value of type set is not JSON (use a list or tuple); "
        "SendWelcome.tags[1].children[0].children[0]: value of type bytes is not JSON "
        "(decode it to str, e.g. with base64)"
    )


@pytest.mark.parametrize("value", [{"user_id": 1}, SendWelcome, None, 5])
def test_encode_needs_a_dataclass_instance(value: object) -> None:
    with pytest.raises(InvalidJob, match="must be a dataclass instance"):
        encode_args(value)


def test_encode_rejects_cycles() -> None:
    cyclic: list[Any] = []
    cyclic.append(cyclic)
    with pytest.raises(InvalidJob, match="nested too deeply"):
        encode_args(SendWelcome(1, cyclic))


# --- check_args --------------------------------------------------------------------------------


def test_check_args_returns_the_encoded_dict() -> None:
    value = everything()
    assert check_args(value) == encode_args(value)


def test_check_args_runs_types_and_field_rules() -> None:
    with pytest.raises(InvalidJob, match=r"^SendWelcome\.user_id: Ensure this value"):
        check_args(SendWelcome(0))
    with pytest.raises(InvalidJob, match=r"^SendWelcome\.user_id: expected int, got str"):
        check_args(SendWelcome("1"))  # type: ignore[arg-type]
    with pytest.raises(InvalidJob, match=r"^Window: end must not be before start$"):
        check_args(Window(2, 1))
    with pytest.raises(InvalidJob, match=r"^SendWelcome\.tags\[0\]: value of type set"):
        check_args(SendWelcome(1, [{1}]))


def test_type_hints_are_resolved_once_per_class(monkeypatch: pytest.MonkeyPatch) -> None:
    @dataclass
    class Fresh:
        n: int

    calls: list[type] = []

    def counting(cls: type, **kwargs: Any) -> dict[str, Any]:
        calls.append(cls)
        return typing.get_type_hints(cls, globalns={"int": int}, **kwargs)

    monkeypatch.setattr(codec, "get_type_hints", counting)
    for n in range(3):
        assert decode_args(Fresh, {"n": n}) == Fresh(n)
    assert calls == [Fresh]


# --- meta and canonical JSON -------------------------------------------------------------------


def test_ensure_json_object_none_is_empty() -> None:
    assert ensure_json_object(None) == {}


def test_ensure_json_object_returns_a_deep_plain_copy() -> None:
    original: dict[str, Any] = {"a": [1, {"b": (2, 3)}], "c": None, "d": 1.5, "e": "x", "f": False}
    copy = ensure_json_object(original)
    assert copy == {"a": [1, {"b": [2, 3]}], "c": None, "d": 1.5, "e": "x", "f": False}
    copy["a"][1]["b"].append(4)
    assert original["a"][1]["b"] == (2, 3)


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ([1], "meta must be a JSON object (a dict with str keys), got list"),
        ("x", "meta must be a JSON object (a dict with str keys), got str"),
        ({1: "x"}, "meta: dict key 1 of type int is not a str"),
        ({"a": [1, {2}]}, "meta['a'][1]: value of type set is not JSON"),
        ({"a": {"b": math.inf}}, "meta['a']['b']: inf is not JSON"),
        ({"at": datetime(2024, 1, 1, tzinfo=UTC)}, "meta['at']: value of type datetime"),
        ({"n": Address("x")}, "meta['n']: value of type Address is not JSON"),
    ],
)
def test_ensure_json_object_rejects(value: object, expected: str) -> None:
    with pytest.raises(InvalidJob) as info:
        ensure_json_object(value)
    assert str(info.value).startswith(expected), str(info.value)


def test_ensure_json_object_names_what_it_checks() -> None:
    with pytest.raises(InvalidJob, match=r"^headers\['x'\]: value of type bytes"):
        ensure_json_object({"x": b""}, name="headers")


def test_canonical_json_is_compact_sorted_and_unescaped() -> None:
    assert canonical_json({"b": 1, "a": [{"y": 2, "x": "é"}]}) == '{"a":[{"x":"é","y":2}],"b":1}'
    assert canonical_json({"b": 1, "a": 2}) == canonical_json({"a": 2, "b": 1})


@pytest.mark.parametrize("value", [{"a": math.nan}, {"a": {1}}, {1: 1, "a": 2}])
def test_canonical_json_rejects_what_is_not_json(value: object) -> None:
    with pytest.raises(InvalidJob, match="not canonical JSON"):
        canonical_json(value)


# --- properties --------------------------------------------------------------------------------


@dataclass
class Inner:
    label: str
    when: datetime | None = None


@dataclass
class Outer:
    count: int
    ratio: float
    price: Decimal
    ident: UUID
    day: date
    at: datetime
    inner: Inner
    inners: list[Inner]
    maybe_inner: Inner | None
    tags: tuple[str, ...]
    scores: dict[str, float]
    pair: tuple[bool, int | None]
    extra: Any = None
    note: Optional[str] = None  # noqa: UP045


def text(**options):
    """Text without U+0000 (PostgreSQL's jsonb cannot hold it) or lone surrogates (UTF-8 cannot
    encode them), which no store accepts."""
    return st.text(
        alphabet=st.characters(exclude_characters="\x00", exclude_categories=("Cs",)), **options
    )


finite = st.floats(allow_nan=False, allow_infinity=False)
json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | finite | text(),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(text(max_size=5), children, max_size=4)
    ),
    max_leaves=15,
)
offsets = st.integers(min_value=-23 * 60 - 59, max_value=23 * 60 + 59).map(
    lambda minutes: timezone(timedelta(minutes=minutes))
)
aware = st.datetimes(timezones=st.just(UTC) | offsets)
inners = st.builds(Inner, label=text(), when=st.none() | aware)
outers = st.builds(
    Outer,
    count=st.integers(),
    ratio=finite | st.integers(min_value=-(2**53), max_value=2**53),
    price=st.decimals(allow_nan=False, allow_infinity=False),
    ident=st.uuids(),
    day=st.dates(),
    at=aware,
    inner=inners,
    inners=st.lists(inners, max_size=3),
    maybe_inner=st.none() | inners,
    tags=st.lists(text(), max_size=3).map(tuple),
    scores=st.dictionaries(text(), finite, max_size=3),
    pair=st.tuples(st.booleans(), st.none() | st.integers()),
    extra=json_values,
    note=st.none() | text(),
)


@given(outers)
def test_property_round_trip_through_json_text(value: Outer) -> None:
    assert decode_args(Outer, json.loads(json.dumps(encode_args(value)))) == value
    assert check_args(value) == encode_args(value)


nodes = st.recursive(
    st.builds(Node, text()),
    lambda kids: st.builds(Node, text(), st.lists(kids, max_size=3)),
    max_leaves=10,
)


@given(nodes)
def test_property_recursive_round_trip(value: Node) -> None:
    assert decode_args(Node, json.loads(json.dumps(encode_args(value)))) == value


def deep_shuffle(value: Any, rnd: Any) -> Any:
    if isinstance(value, dict):
        items = list(value.items())
        rnd.shuffle(items)
        return {key: deep_shuffle(item, rnd) for key, item in items}
    if isinstance(value, list):
        return [deep_shuffle(item, rnd) for item in value]
    return value


@given(st.dictionaries(text(max_size=5), json_values, max_size=6), st.randoms())
def test_property_canonical_json_ignores_key_order(value: dict[str, Any], rnd: Any) -> None:
    shuffled = deep_shuffle(value, rnd)
    assert shuffled == value
    assert canonical_json(shuffled) == canonical_json(value)
    assert json.loads(canonical_json(value)) == value


@given(st.dictionaries(text(max_size=5), json_values, max_size=6))
def test_property_ensure_json_object_keeps_json(value: dict[str, Any]) -> None:
    assert ensure_json_object(value) == value


def test_nul_characters_are_refused_everywhere():
    # PostgreSQL's jsonb cannot store U+0000; every store refuses it alike, naming the path.
    from anole_jobs.codec import ensure_json_object

    with pytest.raises(InvalidJob, match="NUL"):
        ensure_json_object({"note": "a\x00b"})
    with pytest.raises(InvalidJob, match=r"\['k\\x00'\].*NUL|NUL"):
        ensure_json_object({"k\x00": 1})
