"""The garbage collector of a `runjobs` worker process: the start-up's objects frozen, and a
larger young generation.

A worker makes and drops a few dozen container objects for every job it runs (the job's
record, its claim, its run, its attempt, its finish). CPython's cyclic collector walks the
young generation every 700 such allocations net of frees (2,000 from Python 3.13), the middle
one every tenth of those, and the oldest generation, which in a Django process holds every
module, model, URL pattern and setting, whenever it has grown by a quarter. For a worker of
short jobs those walks are a large share of its time: on a no-op job, a tenth of the worker's
CPU (docs/performance.md).

`tune` runs once in a worker process, when its runtime is up:

- everything alive then (the start-up's objects) moves to a permanent generation that no
  collection walks again (`gc.freeze`). Those objects are still freed when their last
  reference goes; only a cycle among them would never be collected, and start-up objects
  live as long as the process anyway;
- the young generation's threshold is raised to `threshold` allocations (a project that set
  a higher one keeps it). The collector stays on: a handler's cyclic garbage is collected as
  before, a few thousand allocations later.

Only `runjobs` does this, in the worker processes it runs: `jobs.start()` in another process
(a web server's) leaves that process's collector alone. `runjobs --gc-threshold 0` leaves it
alone too.
"""

from __future__ import annotations

import gc
import logging
from dataclasses import dataclass

logger = logging.getLogger("anole_jobs.worker")

#: The young generation's threshold in a worker process: about one collection per few hundred
#: no-op jobs instead of one per twenty.
DEFAULT_THRESHOLD = 20_000


@dataclass(frozen=True)
class Tuned:
    """What `tune` changed, so that `undo` can put it back (tests run in one process)."""

    thresholds: tuple[int, int, int]
    frozen: int


def tune(threshold: int) -> Tuned | None:
    """Freeze the objects alive now and raise the young generation's threshold to
    `threshold`; None (nothing changed) when `threshold` is 0 or the collector is off."""
    if threshold <= 0 or not gc.isenabled():
        return None
    before = gc.get_threshold()
    young, middle, old = before
    gc.collect()  # what start-up left as garbage goes now, not into the frozen generation
    gc.freeze()
    if threshold > young:
        gc.set_threshold(threshold, middle, old)
    tuned = Tuned(thresholds=before, frozen=gc.get_freeze_count())
    logger.debug(
        "runjobs: %d start-up objects frozen; the young generation is collected every %d "
        "allocations (was %d)",
        tuned.frozen,
        gc.get_threshold()[0],
        young,
    )
    return tuned


def undo(tuned: Tuned | None) -> None:
    """Put back what `tune` changed: the thresholds, and every frozen object back in the
    oldest generation. (Python 3.12 freezes a few hundred of its own objects at start; those
    are unfrozen too, which only gives a full collection a few hundred more to walk.)"""
    if tuned is None:
        return
    gc.set_threshold(*tuned.thresholds)
    gc.unfreeze()
