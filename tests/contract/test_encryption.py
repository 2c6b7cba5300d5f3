"""Encryption at rest on every store (docs/encryption.md): a kind declared with
``encrypt=True`` keeps no plaintext in the store's rows (read raw: SQL rows, Redis hashes, the
memory store's internals), runs and returns decrypted, runs when sealed with an older key, and
`jobs reencrypt` seals every stored one with the newest key."""

from __future__ import annotations

import io
import json

import pytest
from django.core.management import call_command

from anole_jobs import encryption
from tests.sampleapp import secret_jobs

pytest.importorskip("cryptography")
from cryptography.fernet import Fernet  # noqa: E402

OLD_KEY = Fernet.generate_key().decode()
NEW_KEY = Fernet.generate_key().decode()
PLAIN = "078-05-1120"


@pytest.fixture
def Secret():
    yield secret_jobs.declare()
    secret_jobs.forget()


def raw_payloads(env, job_id: int) -> str:
    """Everything the store keeps for the job, as text, read behind the store's back."""
    store = env.store
    if env.alias is not None:
        from django.db import connections

        with connections[env.alias].cursor() as cursor:
            cursor.execute(f"SELECT * FROM {store.job_table} WHERE id = %s", [job_id])
            return repr(cursor.fetchone())
    if env.name.startswith("redis"):
        keys = store.keys
        if env.name == "redis_cluster":
            keys = store.base_keys.for_job(job_id)
        return repr(store.client.hgetall(keys.job(job_id)))
    return repr(vars(store._rows[job_id]))


def test_no_plaintext_in_the_store_and_the_handler_and_result_see_it_decrypted(env, Secret):
    env.configure(ENCRYPTION_KEYS=[NEW_KEY])
    job_id = env.jobs.enqueue(Secret(ssn=PLAIN, note="x")).id
    before = raw_payloads(env, job_id)
    assert PLAIN not in before and '"encrypted"' in before.replace("'", '"')
    assert env.jobs.get(job_id).args == {"ssn": PLAIN, "note": "x"}
    assert env.jobs.get(job_id).encrypted is True
    assert env.jobs.step().outcomes() == {job_id: "completed"}
    assert secret_jobs.SECRET_SEEN == [{"ssn": PLAIN, "note": "x"}]
    assert PLAIN not in raw_payloads(env, job_id)
    assert env.jobs.result(job_id) == {"echo": PLAIN}
    assert env.jobs.get(job_id).result == {"echo": PLAIN}
    (listed,) = [r for r in env.jobs.list(kind=secret_jobs.SECRET_KIND)]
    assert listed.args == {"ssn": PLAIN, "note": "x"}


def test_the_steps_of_an_encrypted_kind_are_stored_encrypted(env, Secret):
    from anole_jobs.operations.display import for_operators

    env.configure(ENCRYPTION_KEYS=[NEW_KEY])
    job_id = env.jobs.enqueue(Secret(ssn=PLAIN, note="steps")).id
    assert env.jobs.step().outcomes() == {job_id: "retried"}
    assert PLAIN not in raw_payloads(env, job_id)  # the step's record is sealed
    record = env.jobs.get(job_id)
    assert record.steps["lookup"]["result"] == {"ssn": PLAIN}  # opened with the keys
    shown = for_operators(env.store.get(job_id))
    assert shown.steps["lookup"]["result"] == {"encrypted": True}
    env.clock.advance(3600)
    assert env.jobs.step().outcomes() == {job_id: "completed"}
    # The second attempt got the step back (decrypted) instead of running it again.
    assert env.jobs.result(job_id) == {"echo": PLAIN, "replayed": True}
    assert PLAIN not in raw_payloads(env, job_id)


def test_the_args_search_does_not_match_encrypted_args(env, Secret):
    env.configure(ENCRYPTION_KEYS=[NEW_KEY])
    env.jobs.enqueue(Secret(ssn=PLAIN))
    assert env.jobs.list(args={"ssn": PLAIN}) == []


def old_sealed(env, args: dict) -> int:
    """A job stored encrypted with `OLD_KEY` (before the rotation); its id."""
    from anole_jobs.stores.base import NewJob

    now = env.clock()
    job = NewJob(
        kind=secret_jobs.SECRET_KIND,
        queue="default",
        args=encryption.seal(args, [OLD_KEY]),
        meta={},
        priority=0,
        max_attempts=2,
        state="available",
        scheduled_at=now,
        created_at=now,
    )
    return env.jobs.service.store.insert([job])[0].id


def test_a_job_sealed_with_an_older_key_still_runs_and_reencrypt_rotates(env, Secret):
    env.configure(ENCRYPTION_KEYS=[NEW_KEY, OLD_KEY])
    ran = old_sealed(env, {"ssn": "ran", "note": ""})
    assert env.jobs.step().outcomes() == {ran: "completed"}
    assert secret_jobs.SECRET_SEEN == [{"ssn": "ran", "note": ""}]
    waiting = old_sealed(env, {"ssn": PLAIN, "note": ""})
    fresh = env.jobs.enqueue(Secret(ssn="new")).id  # already sealed with the newest
    out = io.StringIO()
    call_command("jobs", "reencrypt", stdout=out)
    assert "3 jobs" in out.getvalue()
    store = env.jobs.service.store
    # Every stored value now opens with the newest key alone.
    for job_id in (ran, waiting, fresh):
        assert encryption.open_sealed(store.get(job_id).args, [NEW_KEY])["ssn"]
    assert encryption.open_sealed(store.get(ran).result, [NEW_KEY]) == {"echo": "ran"}
    assert PLAIN not in raw_payloads(env, waiting)
    assert env.jobs.get(waiting).args == {"ssn": PLAIN, "note": ""}
    assert env.jobs.result(ran) == {"echo": "ran"}


def test_without_keys_an_encrypted_kind_cannot_be_enqueued(env, Secret):
    from anole_jobs import InvalidJob

    with pytest.raises(InvalidJob, match="ENCRYPTION_KEYS"):
        env.jobs.enqueue(Secret(ssn=PLAIN))


def test_the_sealed_form(env, Secret):
    env.configure(ENCRYPTION_KEYS=[NEW_KEY])
    job_id = env.jobs.enqueue(Secret(ssn=PLAIN)).id
    stored = env.store.get(job_id).args
    assert encryption.is_sealed(stored)
    assert json.loads(json.dumps(stored))["encrypted"] is True


def test_reencrypt_seals_durable_step_results_again(env, Secret, monkeypatch):
    """A step recorded under the old key is sealed with the newest by `reencrypt`, so the job
    still replays it after the old key is removed."""
    from dataclasses import replace

    env.configure(ENCRYPTION_KEYS=[NEW_KEY, OLD_KEY])
    service = env.jobs.service
    rotated = service.settings
    # The first attempt runs in a process that knows only the old key.
    monkeypatch.setattr(service, "settings", replace(rotated, encryption_keys=(OLD_KEY,)))
    job_id = env.jobs.enqueue(Secret(ssn=PLAIN, note="steps")).id
    assert env.jobs.step().outcomes() == {job_id: "retried"}
    step = env.store.get(job_id).steps["lookup"]["result"]
    with pytest.raises(encryption.EncryptionError):
        encryption.open_sealed(step, [NEW_KEY])

    monkeypatch.setattr(service, "settings", rotated)
    out = io.StringIO()
    call_command("jobs", "reencrypt", stdout=out)
    assert "sealed 1 job again" in out.getvalue()
    record = env.store.get(job_id)
    assert encryption.open_sealed(record.steps["lookup"]["result"], [NEW_KEY]) == {"ssn": PLAIN}
    assert encryption.open_sealed(record.args, [NEW_KEY])["ssn"] == PLAIN
    assert PLAIN not in raw_payloads(env, job_id)

    # The old key is removed: the second attempt reads the step back and completes.
    monkeypatch.setattr(service, "settings", replace(rotated, encryption_keys=(NEW_KEY,)))
    env.clock.advance(3600)
    assert env.jobs.step().outcomes() == {job_id: "completed"}
    assert env.jobs.result(job_id) == {"echo": PLAIN, "replayed": True}


def test_reencrypt_after_the_old_key_was_removed_names_the_job_and_writes_nothing(env, Secret):
    env.configure(ENCRYPTION_KEYS=[NEW_KEY])
    lost = old_sealed(env, {"ssn": PLAIN, "note": ""})
    before = env.store.get(lost).args
    out = io.StringIO()
    with pytest.raises(Exception, match=f"job {lost}: none of ENCRYPTION_KEYS opens it"):
        call_command("jobs", "reencrypt", stdout=out)
    assert env.store.get(lost).args == before
