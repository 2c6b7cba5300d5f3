"""Worker controls and the operators' audit log on every store: a quiet or stop request is
kept on a listed worker's record (a stop over a later quiet), goes with the record, and is
refused for a worker that is not listed; audit entries are numbered, listed newest first,
filtered by action, paged, and pruned by age. Time moves only with the fake clock."""

from __future__ import annotations

from datetime import timedelta

from anole_jobs.stores.audit import AUDIT_KEEP, AuditEntry
from anole_jobs.stores.workers import WorkerControl
from tests.contract.test_workers import worker


def control(env, action, by="ops"):
    return WorkerControl(action=action, by=by, at=env.clock(), surface="dashboard")


def test_a_control_is_kept_on_a_listed_worker_and_a_stop_outlasts_a_later_quiet(env):
    store = env.store
    record = worker(env)
    store.record_worker(record)
    assert store.worker_control(record.id) is None
    quiet = control(env, "quiet")
    assert store.request_worker_control(record.id, quiet, now=env.clock()) is True
    assert store.worker_control(record.id) == quiet
    # The worker's own heartbeat never clears it.
    store.record_worker(record)
    (listed,) = store.workers(now=env.clock())
    assert listed.control == quiet and listed.as_json()["control"]["action"] == "quiet"
    env.clock.advance(1)
    stop = control(env, "stop", by="alice")
    assert store.request_worker_control(record.id, stop, now=env.clock()) is True
    assert store.worker_control(record.id) == stop
    env.clock.advance(1)
    assert store.request_worker_control(record.id, control(env, "quiet"), now=env.clock())
    assert store.worker_control(record.id) == stop


def test_a_control_for_an_unlisted_worker_is_refused_and_goes_with_the_record(env):
    store = env.store
    assert store.request_worker_control("nobody", control(env, "stop"), now=env.clock()) is False
    assert store.worker_control("nobody") is None
    record = worker(env)
    store.record_worker(record)
    assert store.request_worker_control(record.id, control(env, "stop"), now=env.clock())
    assert store.remove_worker(record.id)
    assert store.worker_control(record.id) is None
    # A record past its expiry takes no request, and the prune takes its request with it.
    store.record_worker(record)
    assert store.request_worker_control(record.id, control(env, "quiet"), now=env.clock())
    assert not store.request_worker_control(record.id, control(env, "stop"), now=record.expires_at)
    assert store.prune_workers(now=record.expires_at) == 1
    assert store.worker_control(record.id) is None


def entry(env, action, target="job 1", surface="route"):
    return AuditEntry(at=env.clock(), actor="ops", action=action, target=target, surface=surface)


def test_audit_entries_are_numbered_newest_first_filtered_and_paged(env):
    store = env.store
    assert store.audit_entries() == []
    for n, action in enumerate(["retry", "delete", "retry", "pause"]):
        store.record_audit(entry(env, action, target=f"job {n}", surface="cli"))
        env.clock.advance(1)
    listed = store.audit_entries()
    assert [e.target for e in listed] == ["job 3", "job 2", "job 1", "job 0"]
    assert [e.action for e in listed] == ["pause", "retry", "delete", "retry"]
    ids = [e.id for e in listed]
    assert ids == sorted(ids, reverse=True) and len(set(ids)) == 4
    first = listed[-1]
    assert (first.actor, first.surface, first.detail) == ("ops", "cli", "")
    assert first.at == env.clock() - timedelta(seconds=4)
    assert [e.target for e in store.audit_entries(action="retry")] == ["job 2", "job 0"]
    assert [e.target for e in store.audit_entries(limit=2)] == ["job 3", "job 2"]
    assert [e.target for e in store.audit_entries(before=ids[1])] == ["job 1", "job 0"]
    assert store.audit_entries(action="signal") == []


def test_the_prune_deletes_audit_entries_older_than_its_horizon(env):
    store = env.store
    store.record_audit(entry(env, "retry", "job 1"))
    env.clock.advance(3600)
    cut = env.clock()
    store.record_audit(entry(env, "cancel", "job 2"))
    assert store.prune_audit(before=cut) == 1
    assert [e.target for e in store.audit_entries()] == ["job 2"]
    assert store.prune_audit(before=cut) == 0


def test_the_leaders_prune_keeps_audit_entries_for_30_days(env):
    store = env.store
    store.record_audit(entry(env, "retry", "job 1"))
    env.clock.advance(AUDIT_KEEP - timedelta(hours=1))
    store.record_audit(entry(env, "cancel", "job 2"))
    env.jobs.step()  # leader phase: prune
    assert [e.target for e in store.audit_entries()] == ["job 2", "job 1"]
    env.clock.advance(timedelta(hours=2))
    env.jobs.step()
    assert [e.target for e in store.audit_entries()] == ["job 2"]
