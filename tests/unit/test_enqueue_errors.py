"""The errors a user meets when enqueueing wrongly: each says what was passed and what to do,
in the words of the call they wrote (no internal names)."""

from __future__ import annotations

import asyncio
import inspect
from dataclasses import dataclass

import pytest

from anole_jobs import InvalidJob
from anole_jobs.api import jobs
from tests.sampleapp.jobs import Work


@pytest.fixture
def memory(settings, clock):
    settings.ANOLE_JOBS = {"STORE": "memory", "RUN": "manual", "CLOCK": clock}
    yield jobs
    jobs.reset()


def test_the_class_instead_of_an_instance_says_pass_an_instance(memory):
    with pytest.raises(InvalidJob) as caught:
        memory.enqueue(Work)
    assert str(caught.value) == (
        "enqueue() takes a job, not its class: pass an instance, e.g. Work(...)"
    )
    with pytest.raises(InvalidJob, match=r"pass an instance, e\.g\. Work\(\.\.\.\)"):
        memory.enqueue_many([Work(), Work])
    assert memory.counts() == {}


def test_a_class_that_is_no_kind_says_so(memory):
    @dataclass
    class Plain:
        n: int = 1

    with pytest.raises(InvalidJob, match="Plain is not a job kind: decorate its dataclass"):
        memory.enqueue(Plain)


@pytest.mark.parametrize(
    ("call", "what"),
    [
        (lambda: jobs.enqueue(Work(), delai=5), "enqueue"),
        (lambda: jobs.enqueue_many([Work()], delai=5), "enqueue_many"),
        (lambda: jobs.enqueue_in(Work(), using="default", delai=5), "enqueue_in"),
        (lambda: asyncio.run(jobs.aenqueue(Work(), delai=5)), "aenqueue"),
    ],
)
def test_a_misspelled_option_names_what_was_passed_and_the_closest_option(memory, call, what):
    with pytest.raises(TypeError) as caught:
        call()
    assert str(caught.value) == f"{what}() got an unknown option delai=5; did you mean 'delay'?"
    assert memory.counts() == {}


def test_an_option_like_no_other_lists_them_all(memory):
    with pytest.raises(TypeError) as caught:
        memory.enqueue(Work(), colour="red")  # type: ignore[call-arg]
    assert str(caught.value) == (
        "enqueue() got an unknown option colour='red'; the options are delay, run_at, "
        "priority, queue, unique, debounce, meta, request, on_commit"
    )


@pytest.mark.parametrize(("delay", "shown"), [(-5, "-5 seconds"), (-0.5, "-0.5 seconds")])
def test_a_negative_delay_is_shown_in_seconds(memory, delay, shown):
    with pytest.raises(InvalidJob) as caught:
        memory.enqueue(Work(), delay=delay)
    assert str(caught.value) == f"enqueue('test.work'): delay must not be negative, got {shown}"
    assert "day" not in str(caught.value)


OPTIONS = ["delay", "run_at", "priority", "queue", "unique", "debounce", "meta", "request"]


@pytest.mark.parametrize(
    ("call", "parameters"),
    [
        (jobs.enqueue, ["args", *OPTIONS, "on_commit"]),
        (jobs.aenqueue, ["args", *OPTIONS, "on_commit"]),
        (jobs.enqueue_many, ["iterable", *OPTIONS, "on_commit"]),
        (jobs.enqueue_in, ["args", "using", *OPTIONS]),
    ],
    ids=["enqueue", "aenqueue", "enqueue_many", "enqueue_in"],
)
def test_each_enqueue_call_shows_its_options_as_keyword_only_parameters(call, parameters):
    """help() and editors that read the runtime signature see every option by name, with
    None (the kind's default) as its default, not an opaque ``**options``."""
    signature = inspect.signature(call)
    assert list(signature.parameters) == parameters
    assert all(
        signature.parameters[name].kind is inspect.Parameter.KEYWORD_ONLY
        and signature.parameters[name].default is None
        for name in OPTIONS
    )
