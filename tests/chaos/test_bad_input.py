"""Bad input at enqueue, on every store: Hypothesis feeds `enqueue` and `enqueue_many` values
JSON cannot hold (NaN, infinities, sets, bytes, objects, lone surrogates, NUL), huge and deeply
nested payloads and odd kind and queue names. Each is refused with a clear `InvalidJob`, and
nothing is stored, not even the valid jobs of the same `enqueue_many` call.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from anole_jobs import InvalidJob, NewQueue, kind
from anole_jobs.bounds import NAME_MAX

FUZZ = settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)


@kind("chaos.fuzz", attempts=1)
@dataclass
class FuzzArgs:
    value: Any = None


class Opaque:
    def __repr__(self) -> str:
        return "Opaque()"


def nested(depth: int) -> Any:
    value: Any = 1
    for _ in range(depth):
        value = [value]
    return value


not_json_leaves = st.one_of(
    st.just(math.nan),
    st.just(math.inf),
    st.just(-math.inf),
    st.sets(st.integers(), max_size=2),
    st.binary(max_size=4),
    st.builds(Opaque),
    st.complex_numbers(allow_nan=False, allow_infinity=False),
    st.characters(categories=["Cs"]).map(lambda c: f"text {c} text"),
    st.text(max_size=3).map(lambda t: t + "\x00"),
)
json_leaves = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.text(
        alphabet=st.characters(exclude_characters="\x00", exclude_categories=("Cs",)), max_size=8
    )
)


def with_bad_leaf(bad: Any) -> st.SearchStrategy[Any]:
    """A JSON structure with `bad` somewhere inside it (a value, or a dict key)."""
    return st.recursive(
        st.just(bad),
        lambda inner: (
            st.tuples(st.lists(json_leaves, max_size=2), inner).map(lambda p: [*p[0], p[1]])
            | st.tuples(st.text(max_size=3), inner).map(lambda p: {p[0] or "k": p[1]})
        ),
        max_leaves=4,
    )


bad_values = not_json_leaves.flatmap(with_bad_leaf) | st.one_of(
    st.just({1: "int key"}),
    st.just({("tuple", "key"): 1}),
    st.just({"\ud800": "surrogate key"}),
    st.just(nested(5000)),
)


def stored_count(env: Any) -> int:
    return sum(sum(states.values()) for states in env.jobs.counts().values())


def test_values_json_cannot_hold_are_refused_and_nothing_is_stored(env: Any) -> None:
    @FUZZ
    @given(bad=bad_values, where=st.sampled_from(["args", "meta", "many"]))
    def check(bad: Any, where: str) -> None:
        before = stored_count(env)
        with pytest.raises(InvalidJob) as refused:
            if where == "args":
                env.jobs.enqueue(FuzzArgs(value=bad))
            elif where == "meta":
                env.jobs.enqueue(FuzzArgs(value=1), meta={"bad": bad})
            else:
                good = [FuzzArgs(value=n) for n in range(3)]
                env.jobs.enqueue_many([*good, FuzzArgs(value=bad), *good])
        message = str(refused.value)
        assert message and "Traceback" not in message
        assert stored_count(env) == before, "a refused enqueue stored something"

    check()


def test_a_bad_job_in_a_later_batch_of_enqueue_many_stores_nothing(env: Any) -> None:
    from anole_jobs import service

    good = [FuzzArgs(value=n) for n in range(service.BATCH_SIZE + 5)]
    with pytest.raises(InvalidJob, match="NaN"):
        env.jobs.enqueue_many([*good, FuzzArgs(value=math.nan)])
    assert stored_count(env) == 0


def test_valid_json_round_trips_exactly(env: Any) -> None:
    json_values = st.recursive(
        # PostgreSQL's jsonb keeps numbers as decimals: a float beyond 2**53 comes back as
        # the integer its shortest repr spells (docs/reliability.md says so).
        json_leaves | st.floats(allow_nan=False, min_value=-(2.0**53), max_value=2.0**53),
        lambda children: (
            st.lists(children, max_size=3)
            | st.dictionaries(st.text(max_size=4).filter(lambda t: "\x00" not in t), children)
        ),
        max_leaves=10,
    ).filter(lambda v: "\ud800" not in repr(v))

    @FUZZ
    @given(value=json_values)
    def check(value: Any) -> None:
        job_id = env.jobs.enqueue(FuzzArgs(value=value)).id
        assert env.jobs.get(job_id).args == {"value": value}
        env.jobs.delete(job_id)

    check()


# -- the payload limit ---------------------------------------------------------------------------
def test_the_payload_limit_is_enforced_on_every_store(env: Any) -> None:
    env.configure(MAX_PAYLOAD_BYTES=1000)
    accepted = env.jobs.enqueue(FuzzArgs(value="x" * 900))
    assert env.jobs.get(accepted.id) is not None
    with pytest.raises(InvalidJob, match=r"MAX_PAYLOAD_BYTES") as refused:
        env.jobs.enqueue(FuzzArgs(value="x" * 1000))
    assert "1000 bytes" in str(refused.value)
    # Meta counts too, and UTF-8 bytes, not characters.
    with pytest.raises(InvalidJob, match=r"MAX_PAYLOAD_BYTES"):
        env.jobs.enqueue(FuzzArgs(value=1), meta={"note": "é" * 500})
    with pytest.raises(InvalidJob, match=r"MAX_PAYLOAD_BYTES"):
        env.jobs.enqueue_many([FuzzArgs(value=1), FuzzArgs(value="y" * 2000)])
    assert stored_count(env) == 1


def test_the_default_payload_limit_is_one_mebibyte(env: Any) -> None:
    almost = "z" * (1024 * 1024 - 100)
    assert env.jobs.enqueue(FuzzArgs(value=almost)).inserted
    with pytest.raises(InvalidJob, match="1048576 bytes"):
        env.jobs.enqueue(FuzzArgs(value=almost + "z" * 200))


@pytest.mark.parametrize("value", [0, -1, 1.5, "1MB", True, None])
def test_a_bad_payload_limit_is_a_configuration_error(value: Any) -> None:
    from anole_jobs import conf

    found = conf.problems({"STORE": "memory", "MAX_PAYLOAD_BYTES": value})
    assert [p.id for p in found] == ["anole_jobs.E007"]
    assert "MAX_PAYLOAD_BYTES" in found[0].message


# -- odd names -----------------------------------------------------------------------------------
odd_names = st.one_of(
    st.just(""),
    st.just("tab\there"),
    st.just("nul\x00"),
    st.just("line\nbreak"),
    st.just("sur\udc00rogate"),
    st.just(None),
    st.just(42),
    st.text(min_size=1, max_size=5).map(lambda t: t + "\x07"),
)


@FUZZ
@given(name=odd_names)
def test_odd_kind_names_are_refused_at_declaration(name: Any) -> None:
    with pytest.raises(InvalidJob, match="kind"):
        kind(name)(dataclass(type("Odd", (), {})))


def test_odd_queue_names_are_refused_at_enqueue(env: Any) -> None:
    @FUZZ
    @given(name=odd_names.filter(lambda name: name is not None))  # None: the kind's queue
    def check(name: Any) -> None:
        with pytest.raises(InvalidJob, match="queue"):
            env.jobs.enqueue(FuzzArgs(value=1), queue=name)
        assert stored_count(env) == 0

    check()


def test_unusual_but_printable_names_work(env: Any) -> None:
    for name in ("emails.send", "é-☃/queue:1", "x" * NAME_MAX, "os.system"):
        job_id = env.jobs.enqueue(FuzzArgs(value=1), queue=NewQueue(name)).id
        assert env.jobs.get(job_id).queue == name


def test_a_name_longer_than_every_store_holds_is_refused_before_the_store(env: Any) -> None:
    """A name of 201 characters and more is refused with the limit named: PostgreSQL would
    refuse a long one in an index row, and call that an outage."""
    for name in ("x" * (NAME_MAX + 1), "q" * 10_000):
        with pytest.raises(InvalidJob, match=f"at most {NAME_MAX} characters"):
            env.jobs.enqueue(FuzzArgs(value=1), queue=NewQueue(name))
        with pytest.raises(InvalidJob, match=f"at most {NAME_MAX} characters"):
            env.jobs.pause(name)
        with pytest.raises(InvalidJob, match=f"at most {NAME_MAX} characters"):
            kind(name)
    assert stored_count(env) == 0
    assert env.store.paused_queues() == {}
