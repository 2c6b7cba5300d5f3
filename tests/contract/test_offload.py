"""Offload of large args and results to a Django storage on every store (docs/offload.md):
over `over` bytes they are kept in the storage and the job holds a reference; handlers,
`jobs.get`, `jobs.result` and `jobs.list` see the values as if stored inline; the file goes
with its job (delete, bulk delete, prune)."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.core.files.storage import storages

from anole_jobs import conf, offload
from tests.sampleapp.result_jobs import Returns

STORAGE = "jobs_payloads"
BIG = "x" * 5000


@pytest.fixture
def offloading(env, settings):
    settings.STORAGES = {
        **settings.STORAGES,
        STORAGE: {"BACKEND": "django.core.files.storage.InMemoryStorage"},
    }
    env.configure(OFFLOAD={"storage": STORAGE, "over": 1000})
    return storages[STORAGE]


def files(storage) -> list[str]:
    try:
        return storage.listdir(offload.FOLDER)[1]
    except FileNotFoundError:
        return []


def test_large_args_and_results_are_offloaded_and_read_back_as_if_inline(env, offloading):
    value = f'{{"big": "{BIG}"}}'
    job_id = env.jobs.enqueue(Returns(value=value)).id
    small = env.jobs.enqueue(Returns(value="1")).id
    raw = env.store.get(job_id)
    assert offload.is_ref(raw.args) and BIG not in repr(raw.args)
    assert not offload.is_ref(env.store.get(small).args)
    assert len(files(offloading)) == 1
    assert env.jobs.get(job_id).args == {"value": value, "hook": ""}
    assert env.jobs.step().outcomes() == {job_id: "completed", small: "completed"}
    assert offload.is_ref(env.store.get(job_id).result)
    assert len(files(offloading)) == 2
    assert env.jobs.result(job_id) == {"big": BIG}
    assert env.jobs.get(job_id).result == {"big": BIG}
    (listed,) = [r for r in env.jobs.list(state="completed") if r.id == job_id]
    assert listed.args["value"] == value and listed.result == {"big": BIG}
    assert env.jobs.result(small) == 1


def test_the_files_are_deleted_with_the_job(env, offloading):
    value = f'{{"big": "{BIG}"}}'
    deleted = env.jobs.enqueue(Returns(value=value)).id
    bulk = env.jobs.enqueue(Returns(value=value), delay=60).id
    pruned = env.jobs.enqueue(Returns(value=value)).id
    assert len(files(offloading)) == 3
    assert env.jobs.delete(deleted)
    assert len(files(offloading)) == 2
    assert env.jobs.act("delete", [bulk]) == 1
    assert len(files(offloading)) == 1
    env.jobs.step()  # runs `pruned`: its result is offloaded too
    assert len(files(offloading)) == 2
    env.clock.advance(timedelta(days=2))
    env.jobs.step()  # the leader prunes completed jobs after a day
    assert env.jobs.get(pruned) is None
    assert files(offloading) == []


def test_max_payload_bytes_may_reach_100_mib_only_with_offload(settings):
    settings.ANOLE_JOBS = {**settings.ANOLE_JOBS, "MAX_PAYLOAD_BYTES": 32 * 1024 * 1024}
    assert any("MAX_PAYLOAD_BYTES" in p.message for p in conf.problems())
    settings.ANOLE_JOBS = {**settings.ANOLE_JOBS, "OFFLOAD": {"storage": "default"}}
    assert conf.problems() == []
    settings.ANOLE_JOBS = {**settings.ANOLE_JOBS, "MAX_PAYLOAD_BYTES": 101 * 1024 * 1024}
    assert any("MAX_PAYLOAD_BYTES" in p.message for p in conf.problems())
