"""Jobs that a drain gives back deploy after deploy: a count in the job's meta, and one warning.

A job that runs longer than its queue's `drain_timeout` is given back at every drain (its
attempt not counted) and starts over in the next process. Deployed more often than it takes,
it never finishes, and nothing fails to tell anyone. So each give-back of a running job by a
drain adds one to ``meta["drain_give_backs"]``, written fenced (only while this run still
holds the job) just before the give-back itself; a run that ends any other way (completed,
failed, snoozed, discarded) removes the key. When the count goes past `WARN_AFTER`, one
WARNING names the kind and its queue's `drain_timeout`.

The count lives in the meta because every store keeps it across processes (each give-back
happens in a different deploy). It is written just before the give-back, not in the same
write: if the give-back then fails (the store stops answering), the count is one ahead, and
the job goes back when its lease lapses, its attempt counted.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from anole_jobs.service import JobService
from anole_jobs.stores.base import ClaimedJob

logger = logging.getLogger("anole_jobs.worker")

#: The meta key that counts the drains in a row that gave the job back.
KEY = "drain_give_backs"
#: Given back more often than this in a row, a job is logged at WARNING (once).
WARN_AFTER = 3


def count_give_back(
    service: JobService, claimed: ClaimedJob, meta: Mapping[str, Any] | None = None
) -> int | None:
    """Add one to the job's count before a drain gives it back; the new count, or None if
    it could not be written (the job moved on, or the store did not answer). `meta` is the
    job's meta as the run last wrote it; None reads it from the store."""
    store = service.store
    record = claimed.record
    try:
        if meta is None:
            current = store.get(record.id)
            if current is None or current.state != "running":
                return None
            meta = current.meta
        count = _count(meta) + 1
        if not store.update_meta(claimed.run, {**meta, KEY: count}):
            return None
    except Exception:  # noqa: BLE001 - the give-back matters more than its count
        logger.debug("job %s: could not count its give-back", record.id, exc_info=True)
        return None
    if count == WARN_AFTER + 1:
        drain = service.settings.queues.get(record.queue)
        timeout = f"{drain.drain_timeout.total_seconds():g} s" if drain else "its drain_timeout"
        logger.warning(
            "job %s (%s) was given back by a drain %d times in a row: it runs longer than "
            "queue %s's drain_timeout (%s), so every deploy or restart interrupts it and it may "
            "never finish. Raise QUEUES[%r]['drain_timeout'] (and the stop timeout of your "
            "service manager) above its run time, or split the job",
            record.id,
            record.kind,
            count,
            record.queue,
            timeout,
            record.queue,
            extra={"job_id": record.id, "kind": record.kind, "queue": record.queue, KEY: count},
        )
    return count


def clear_give_backs(service: JobService, claimed: ClaimedJob, meta: Mapping[str, Any]) -> None:
    """The run ended by itself: remove the count (before the run's own write, fenced)."""
    if KEY not in meta:
        return
    try:
        service.store.update_meta(
            claimed.run, {key: value for key, value in meta.items() if key != KEY}
        )
    except Exception:  # noqa: BLE001 - the outcome's write matters more; the count stays
        logger.debug("job %s: could not reset its give-back count", claimed.record.id)


def _count(meta: Mapping[str, Any]) -> int:
    value = meta.get(KEY, 0)
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 0
