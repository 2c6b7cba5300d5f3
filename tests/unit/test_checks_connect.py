"""System checks never connect to a server unless `check --database` asks for that."""

from __future__ import annotations

from io import StringIO

import pytest
from django.core.management import call_command

from anole_jobs import conf
from anole_jobs.checks import check_redis_eviction

CLOSED = "redis://127.0.0.1:1/0"  # nothing listens on port 1


@pytest.fixture
def redis_store_on_a_closed_port(settings):
    pytest.importorskip("django_redis")
    settings.CACHES = {
        **settings.CACHES,
        "closed": {"BACKEND": "django_redis.cache.RedisCache", "LOCATION": CLOSED},
    }
    settings.ANOLE_JOBS = {"STORE": {"redis": "closed"}, "RUN": "manual"}
    conf.reset()


@pytest.mark.django_db(databases=["default"])  # Django 6's check health-checks connections
def test_w002_neither_connects_nor_warns_without_database(
    redis_store_on_a_closed_port, monkeypatch
):
    def connect(alias):
        raise AssertionError(f"the check connected to cache {alias!r}")

    monkeypatch.setattr("anole_jobs.stores.redis._redis_client", connect)
    assert check_redis_eviction(databases=None) == []
    out, err = StringIO(), StringIO()
    # The whole `manage.py check`, as a user runs it: Django skips database-tagged checks
    # unless --database names an alias (with --tag it would run them, on every alias).
    call_command("check", stdout=out, stderr=err)
    assert "W002" not in out.getvalue() + err.getvalue()


def test_w002_runs_when_check_database_names_an_alias(redis_store_on_a_closed_port):
    (message,) = check_redis_eviction(databases=["default"])
    assert message.id == "anole_jobs.W002"
    assert message.msg.startswith("could not read Redis's maxmemory-policy for cache 'closed'")
