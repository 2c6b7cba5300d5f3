"""The Redis store against the memory store, the reference implementation: one random sequence
of operations runs on both at once, and every answer must be the same (records, runs, counts,
lists, leadership, cron), with small chunk sizes so the store's resumable loops are exercised.
"""

from __future__ import annotations

import random
import uuid
from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import pytest
import redis

from anole_jobs.core import AFTER_RUN_STATES, ErrorEntry, ListFilter
from anole_jobs.stores.base import Finish, NewJob, RunRef
from anole_jobs.stores.memory import MemoryStore
from anole_jobs.stores.redis import store as store_module
from anole_jobs.stores.redis.store import RedisStore
from tests.contract.redis_support import LEASE, T0, URL, delete_keys, new_job

pytestmark = pytest.mark.needs("redis")


@pytest.fixture
def store() -> Iterator[RedisStore]:
    prefix = f"anole-test:{uuid.uuid4().hex[:12]}:"
    store = RedisStore(redis.Redis.from_url(URL), key_prefix=prefix)
    yield store
    store.close()
    delete_keys(prefix, urls=(URL,))


class Model:
    """Runs one random operation sequence on the memory store and the Redis store at once and
    asserts every answer is the same."""

    def __init__(self, redis_store: RedisStore, seed: int) -> None:
        self.rng = random.Random(seed)
        self.stores = (MemoryStore(), redis_store)
        self.now = T0
        self.runs: list[RunRef] = []
        self.top_id = 0

    def both(self, method: str, *args: Any, **kwargs: Any) -> Any:
        expected, got = (getattr(s, method)(*args, **kwargs) for s in self.stores)
        if method == "rescue":
            expected, got = sorted(expected, key=lambda r: r.id), sorted(got, key=lambda r: r.id)
        assert got == expected, (method, args, kwargs)
        return got

    def job(self) -> NewJob:
        rng = self.rng
        delay = rng.choice([0, 0, 0, 5, 40])
        return new_job(
            kind=rng.choice("abc"),
            queue=rng.choice(["q1", "q2"]),
            args={"x": rng.randrange(1000), "s": "é\u2603"},
            meta={"m": rng.random()},
            priority=rng.choice([-1, 0, 0, 1]),
            max_attempts=rng.choice([1, 2, 3]),
            state="scheduled" if delay else "available",
            scheduled_at=self.now + timedelta(seconds=delay),
            created_at=self.now,
            unique_key=rng.choice([None, None, "u1", "u2"]),
            unique_scope=rng.choice(["live", "any"]),
        )

    def step(self) -> None:
        rng = self.rng
        op = rng.choice(
            ["insert"] * 4
            + ["claim"] * 3
            + ["finish"] * 3
            + ["heartbeat", "stage", "rescue"]
            + ["prune", "retry", "cancel", "delete", "advance", "lead", "cron"]
        )
        job_id = rng.randint(1, self.top_id + 1)
        if op == "insert":
            batch: list[NewJob] = []
            for _ in range(rng.randint(1, 3)):
                job = self.job()
                # The caller removes duplicates within a batch (Store.insert's docstring).
                if job.unique_key is None or job.unique_key not in {j.unique_key for j in batch}:
                    batch.append(job)
            self.top_id = max([self.top_id, *(r.id for r in self.both("insert", batch))])
        elif op == "claim":
            kinds = rng.choice([None, {"a"}, {"b", "c"}, set()])
            claimed = self.both(
                "claim",
                rng.choice(["q1", "q2"]),
                kinds=kinds,
                limit=rng.randint(1, 3),
                now=self.now,
                lease_until=self.now + LEASE,
                worker="w",
            )
            self.runs.extend(c.run for c in claimed)
        elif op == "finish" and self.runs:
            results = []
            for run in rng.sample(self.runs, min(len(self.runs), rng.randint(1, 3))):
                state = rng.choice(AFTER_RUN_STATES)
                error = ErrorEntry(at=self.now, attempt=run.attempt, type="E", message='m\n"x"')
                results.append(
                    Finish(
                        run=run,
                        state=state,
                        at=self.now,
                        scheduled_at=rng.choice([None, self.now + timedelta(seconds=3)]),
                        error=rng.choice([None, error]),
                        give_back_attempt=rng.random() < 0.2,
                    )
                )
            self.both("finish", results)
        elif op == "heartbeat" and self.runs:
            self.both("heartbeat", set(self.runs[-4:]), lease_until=self.now + LEASE)
        elif op in ("stage", "rescue"):
            self.both(op, now=self.now)
        elif op == "prune":
            horizons = {"completed": timedelta(seconds=30), "dead": timedelta(seconds=90)}
            self.both("prune", now=self.now, horizons=horizons)
        elif op in ("retry", "cancel"):
            self.both(op, job_id, now=self.now)
        elif op == "delete":
            self.both("delete", job_id)
        elif op == "advance":
            self.now += timedelta(seconds=rng.randint(0, 40), microseconds=rng.randrange(10**6))
        elif op == "lead":
            self.both("lead", instance=rng.choice("xy"), now=self.now, ttl=LEASE)
        elif op == "cron":
            tick = T0 + timedelta(minutes=rng.randint(0, 5))
            inserted = self.both(
                "cron_advance", name="n", tick=tick, job=rng.choice([None, self.job()])
            )
            if inserted is not None:
                self.top_id = max(self.top_id, inserted.id)

    def check_views(self) -> None:
        self.both("counts")
        self.both("waiting_kinds", ["q1", "q2", "q3"])
        self.both("cron_states", ["n", "m"])
        self.both("list", ListFilter(limit=1000))
        for filter in (
            ListFilter(state="available", limit=2),
            ListFilter(queue="q1", kind="a", after=self.top_id // 2),
            ListFilter(state="running", queue="q2"),
        ):
            self.both("list", filter)


@pytest.mark.parametrize("seed", range(4))
def test_behaves_like_the_memory_store(
    store: RedisStore, seed: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(store_module, "LIST_SCAN_BUDGET", 3)  # make `list` resume its scans
    monkeypatch.setattr(store_module, "SCRIPT_CHUNK", 2)  # and claim/stage/rescue/prune loop
    model = Model(store, seed)
    for i in range(400):
        model.step()
        if i % 20 == 0:
            model.check_views()
    model.check_views()
    assert model.top_id > 50  # the run did real work
