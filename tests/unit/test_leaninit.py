"""`lean_init`: the cheaper __init__ of the frozen records behaves as the generated one."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

import pytest

from anole_jobs.leaninit import lean_init


@lean_init
@dataclass(frozen=True)
class Point:
    x: int
    y: int = 2
    tags: list[str] = field(default_factory=list)
    label: str = field(default="p", kw_only=True)


def test_parameters_defaults_and_factories_are_the_generated_ones():
    assert Point(1) == Point(1, 2, [], label="p")
    assert Point(1, 3, ["a"], label="q") == Point(x=1, y=3, tags=["a"], label="q")
    first, second = Point(1), Point(1)
    assert first.tags is not second.tags  # a new list each time, as the factory makes
    with pytest.raises(TypeError):
        Point(1, 2, [], "q")  # type: ignore[misc]  # label is keyword-only
    with pytest.raises(TypeError):
        Point()  # type: ignore[call-arg]


def test_it_stays_frozen_and_replaceable():
    point = Point(1, label="a")
    with pytest.raises(dataclasses.FrozenInstanceError):
        point.x = 5  # type: ignore[misc]
    assert dataclasses.replace(point, y=9) == Point(1, 9, label="a")
    assert repr(point) == "Point(x=1, y=2, tags=[], label='a')"


def test_a_class_it_cannot_serve_exactly_is_refused():
    @dataclass
    class Mutable:
        x: int

    @dataclass(frozen=True)
    class Checked:
        x: int

        def __post_init__(self) -> None:
            pass

    for cls in (Mutable, Checked):
        with pytest.raises(TypeError):
            lean_init(cls)
