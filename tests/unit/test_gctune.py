"""`gctune`: what a worker process does to its garbage collector, and that it can be undone
(the tests run it in this process)."""

from __future__ import annotations

import gc
from collections.abc import Iterator

import pytest

from anole_jobs.worker import gctune


@pytest.fixture(autouse=True)
def collector_restored() -> Iterator[None]:
    thresholds, enabled = gc.get_threshold(), gc.isenabled()
    yield
    gc.set_threshold(*thresholds)
    gc.unfreeze()
    if enabled:
        gc.enable()


def test_tune_freezes_what_is_alive_and_raises_the_young_threshold() -> None:
    young, middle, old = gc.get_threshold()
    frozen_before = gc.get_freeze_count()  # Python 3.12 starts with a few hundred frozen
    tuned = gctune.tune(young + 1000)
    assert tuned is not None
    assert gc.get_threshold() == (young + 1000, middle, old)
    # (Not equal to `tuned.frozen`: a frozen object whose last reference goes is still freed.)
    assert tuned.frozen > frozen_before + 1000
    assert gc.get_freeze_count() > frozen_before + 1000
    gctune.undo(tuned)
    assert gc.get_threshold() == (young, middle, old)
    assert gc.get_freeze_count() == 0


def test_a_higher_threshold_a_project_set_is_kept() -> None:
    gc.set_threshold(50_000, 10, 10)
    frozen_before = gc.get_freeze_count()
    tuned = gctune.tune(20_000)
    assert tuned is not None
    assert gc.get_threshold() == (50_000, 10, 10)
    assert gc.get_freeze_count() > frozen_before + 1000  # the start-up is frozen all the same


def test_threshold_0_changes_nothing() -> None:
    before, frozen_before = gc.get_threshold(), gc.get_freeze_count()
    assert gctune.tune(0) is None
    assert gc.get_threshold() == before
    assert gc.get_freeze_count() == frozen_before
    gctune.undo(None)  # nothing to undo
    assert gc.get_threshold() == before


def test_a_collector_turned_off_is_left_off_and_untouched() -> None:
    before, frozen_before = gc.get_threshold(), gc.get_freeze_count()
    gc.disable()
    assert gctune.tune(20_000) is None
    assert not gc.isenabled()
    assert gc.get_threshold() == before
    assert gc.get_freeze_count() == frozen_before
