"""The settings of encryption at rest and offload are checked (docs/encryption.md,
docs/offload.md): ENCRYPTION_KEYS holds Fernet keys (E051); a kind declared with encrypt=True
needs keys and cryptography (E052); OFFLOAD names a storage of STORAGES (E053)."""

from __future__ import annotations

import pytest

from anole_jobs import checks, conf
from tests.sampleapp import secret_jobs

KEY = "fmpqPpb3oO1hZqBNSEi7NYkq8f-MEyR7qYVL23dEvDc="


def ids(settings, **extra) -> list[str]:
    settings.ANOLE_JOBS = {**settings.ANOLE_JOBS, **extra}
    return [p.id.removeprefix("anole_jobs.") for p in conf.problems()]


def test_encryption_keys_must_be_fernet_keys(settings):
    assert ids(settings, ENCRYPTION_KEYS=[KEY]) == []
    assert ids(settings, ENCRYPTION_KEYS=["not a key"]) == ["E051"]
    assert ids(settings, ENCRYPTION_KEYS=KEY) == ["E051"]  # a str, not a list


def test_offload_names_a_configured_storage(settings):
    assert ids(settings, OFFLOAD={"storage": "default", "over": 10}) == []
    assert ids(settings, OFFLOAD={"storage": "nowhere"}) == ["E053"]
    assert ids(settings, OFFLOAD={"storage": "default", "over": 0}) == ["E053"]
    assert ids(settings, OFFLOAD={"store": "default"}) == ["E053"]


def test_an_encrypted_kind_without_keys_fails_the_system_checks(settings):
    settings.ANOLE_JOBS = {**settings.ANOLE_JOBS, "STORE": "memory"}
    secret_jobs.declare()
    try:
        found = [m.id for m in checks.check_settings()]
        assert "anole_jobs.E052" in found
        settings.ANOLE_JOBS = {**settings.ANOLE_JOBS, "ENCRYPTION_KEYS": [KEY]}
        pytest.importorskip("cryptography")
        assert "anole_jobs.E052" not in [m.id for m in checks.check_settings()]
    finally:
        secret_jobs.forget()
