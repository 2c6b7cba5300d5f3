"""Bulk actions on every store: `Store.act` on a batch of ids (retry, cancel, delete; only
jobs still in the given state; running jobs as the rule says), the counts kept right, and the
operations layer's loop over every job a filter matches, in batches."""

from __future__ import annotations

from datetime import timedelta

import pytest

from anole_jobs import Unique
from anole_jobs.errors import InvalidJob
from anole_jobs.operations import bulk
from anole_jobs.operations.listing import parse_listing
from anole_jobs.operations.problems import BadInput
from anole_jobs.stores.search import BULK_BATCH_MAX
from anole_jobs.testing.contract.jobs_machine import recount
from tests.sampleapp.jobs import Validated, Work


def _dead(env, n, **args):
    """`n` dead jobs (discarded by their handler), oldest first."""
    ids = [env.jobs.enqueue(Work(action="discard", **args)).id for _ in range(n)]
    env.jobs.step()
    assert {env.jobs.get(i).state for i in ids} == {"dead"}
    return ids


def test_retry_makes_the_batch_available_and_counts_what_changed(env):
    dead = _dead(env, 3)
    waiting = env.jobs.enqueue(Work(), delay=60).id
    available = env.jobs.enqueue(Work()).id
    done = env.jobs.act("retry", [*dead, waiting, available, 10**9])
    assert done == 4  # the available job was due already; the unknown id is skipped
    assert {env.jobs.get(i).state for i in [*dead, waiting, available]} == {"available"}
    assert env.jobs.counts() == recount(env.store)


def test_retry_leaves_running_jobs_with_their_worker(env):
    env.jobs.enqueue(Work())
    claimed = env.store.claim(
        "default",
        kinds=None,
        limit=1,
        now=env.clock(),
        lease_until=env.clock() + timedelta(seconds=60),
        worker="w",
    )
    job_id = claimed[0].record.id
    assert env.jobs.act("retry", [job_id]) == 0
    assert env.jobs.get(job_id).state == "running"


def test_the_state_given_is_checked_again_by_the_store(env):
    dead = _dead(env, 2)
    env.jobs.retry(dead[0])  # it moved since it was listed
    assert env.jobs.act("delete", dead, state="dead") == 1
    assert env.jobs.get(dead[0]).state == "available"
    assert env.jobs.get(dead[1]) is None
    assert env.jobs.counts() == recount(env.store)


def test_cancel_cancels_waiting_and_running_jobs_and_leaves_finished_ones(env):
    dead = _dead(env, 1)
    waiting = env.jobs.enqueue(Work(), delay=60).id
    env.jobs.enqueue(Work())
    running = env.store.claim(
        "default",
        kinds=None,
        limit=1,
        now=env.clock(),
        lease_until=env.clock() + timedelta(seconds=60),
        worker="w",
    )[0]
    assert env.jobs.act("cancel", [*dead, waiting, running.record.id]) == 2
    assert env.jobs.get(dead[0]).state == "dead"
    assert env.jobs.get(waiting).state == "cancelled"
    assert env.jobs.get(running.record.id).state == "cancelled"
    # The worker lost it: its heartbeat no longer holds the run.
    assert (
        env.store.heartbeat([running.run], lease_until=env.clock() + timedelta(seconds=60)) == set()
    )
    assert env.jobs.counts() == recount(env.store)


def test_cancel_releases_live_unique_keys(env):
    first = env.jobs.enqueue(Work(tag="u"), unique=Unique(), delay=60)
    assert env.jobs.act("cancel", [first.id]) == 1
    again = env.jobs.enqueue(Work(tag="u"), unique=Unique(), delay=60)
    assert again.inserted


def test_retry_of_a_job_whose_unique_key_another_holds_leaves_it(env):
    first = env.jobs.enqueue(Work(tag="u"), unique=Unique(), delay=60).id
    env.jobs.cancel(first)
    second = env.jobs.enqueue(Work(tag="u"), unique=Unique(), delay=60).id
    assert env.jobs.act("retry", [first, second]) == 1  # `second` is made due; `first` stays
    assert env.jobs.get(first).state == "cancelled"
    assert env.jobs.get(second).state == "available"


def test_retry_of_two_jobs_sharing_a_free_unique_key_revives_one(env):
    ids = []
    for _ in range(2):
        job_id = env.jobs.enqueue(Work(tag="u"), unique=Unique(), delay=60).id
        env.jobs.cancel(job_id)
        ids.append(job_id)
    assert env.jobs.act("retry", ids) == 1
    assert sorted(env.jobs.get(i).state for i in ids) == ["available", "cancelled"]
    assert env.jobs.counts() == recount(env.store)


def test_delete_deletes_whatever_the_state(env):
    dead = _dead(env, 1)
    live = env.jobs.enqueue(Work()).id
    assert env.jobs.act("delete", [*dead, live]) == 2
    assert env.jobs.get(live) is None and env.jobs.get(dead[0]) is None
    assert env.jobs.act("delete", [live]) == 0
    assert env.jobs.counts() == recount(env.store)


def test_the_facade_refuses_bad_batches(env):
    with pytest.raises(InvalidJob, match="unknown action"):
        env.jobs.act("requeue", [1])
    with pytest.raises(InvalidJob, match="unknown state"):
        env.jobs.act("retry", [1], state="gone")
    with pytest.raises(InvalidJob, match="at most 1000"):
        env.jobs.act("retry", range(1, BULK_BATCH_MAX + 2))
    with pytest.raises(InvalidJob, match="job id"):
        env.jobs.act("retry", [0])


def test_a_bulk_action_acts_on_every_match_in_batches(env, monkeypatch):
    monkeypatch.setattr(bulk, "BULK_BATCH_MAX", 3)
    dead = _dead(env, 7, tag="refund")
    other = _dead(env, 2, tag="other")
    calls = []
    real_act = env.jobs.act

    def counting(action, ids, *, state=None):
        calls.append(len(ids))
        return real_act(action, ids, state=state)

    monkeypatch.setattr(env.jobs, "act", counting)
    listing = parse_listing({"state": ["dead"], "args": ['{"tag": "refund"}']})
    assert bulk.preview(listing) == bulk.Preview(7, True)
    outcome = bulk.act("retry", listing)
    assert outcome == bulk.BulkOutcome("retry", 7, 7)
    assert max(calls) <= 3 and sum(calls) == 7
    assert {env.jobs.get(i).state for i in dead} == {"available"}
    assert {env.jobs.get(i).state for i in other} == {"dead"}
    assert bulk.preview(listing) == bulk.Preview(0, True)


def test_preview_counts_state_and_queue_from_the_counts(env):
    _dead(env, 2)
    env.jobs.enqueue(Validated(count=1))
    assert bulk.preview(parse_listing({"state": ["dead"]})) == bulk.Preview(2, True)
    assert bulk.preview(parse_listing({"queue": ["default"]})) == bulk.Preview(3, True)
    assert bulk.preview(parse_listing({"kind": ["test.validated"]})) == bulk.Preview(1, True)


def test_preview_stops_at_its_cap(env, monkeypatch):
    monkeypatch.setattr(bulk, "COUNT_CAP", 2)
    env.jobs.enqueue_many([Work() for _ in range(3)])
    assert bulk.preview(parse_listing({"kind": ["test.work"]})) == bulk.Preview(2, False)


def test_a_bulk_action_without_a_filter_is_refused(env):
    env.jobs.enqueue(Work())
    with pytest.raises(BadInput, match="at least one filter"):
        bulk.act("delete", parse_listing({}))
    with pytest.raises(BadInput, match="at least one filter"):
        bulk.preview(parse_listing({}))
    with pytest.raises(BadInput, match="unknown action"):
        bulk.parse_action("purge")
