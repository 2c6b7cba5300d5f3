"""Helpers shared by the Redis store tests (`test_redis_store.py`, `test_redis_model.py`)."""

from __future__ import annotations

import functools
from datetime import UTC, datetime, timedelta
from typing import Any

import redis
from django.conf import settings as django_settings

from anole_jobs.stores.redis.keys import Keys
from anole_jobs.testing.contract import new_job as contract_new_job

URL = django_settings.REDIS_TEST_URL
URL_DB1 = URL.rsplit("/", 1)[0] + "/1"
T0 = datetime(2030, 1, 1, tzinfo=UTC)
LEASE = timedelta(seconds=30)
WAIT = 5.0  # seconds a test waits for another thread before failing


#: The Redis tests' jobs: kind "k" in queue "q" (the suite's builder, other defaults).
new_job = functools.partial(contract_new_job, kind="k", queue="q", args={"n": 1})


def claim(
    store: Any, queue: str = "q", *, kinds: Any = None, limit: int = 100, now: datetime = T0
) -> Any:
    return store.claim(
        queue, kinds=kinds, limit=limit, now=now, lease_until=now + LEASE, worker="w"
    )


def delete_keys(*prefixes: str, urls: tuple[str, ...] = (URL, URL_DB1)) -> None:
    """Delete every key under `prefixes` in the test databases."""
    for url in urls:
        client = redis.Redis.from_url(url)
        for prefix in prefixes:
            doomed = list(client.scan_iter(match=Keys(prefix).pattern(), count=1000))
            for start in range(0, len(doomed), 500):
                client.delete(*doomed[start : start + 500])
