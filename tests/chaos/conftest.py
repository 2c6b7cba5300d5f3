"""Chaos fixtures: the end-to-end `backend` (a store per test) and a `cluster` over it.

PostgreSQL scenarios use a database of their own, ``anole_chaos_<run id>``, so they never share
one with the end-to-end tests of the same session.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.chaos.harness import Cluster
from tests.conftest import require
from tests.e2e import conftest as e2e
from tests.e2e.conftest import RUN_ID, store_reader
from tests.support.redis_server import RedisServer, require_redis_server

# The end-to-end fixtures, shared by name (a `pg_database` of our own is below).
backend = e2e.backend
pg_backend = e2e.pg_backend
sqlite_backend = e2e.sqlite_backend
sqlite_template = e2e.sqlite_template
e2e_tmp = e2e.e2e_tmp


@pytest.fixture(scope="session")
def pg_database(e2e_tmp: Path) -> Iterator[str]:
    with e2e.migrated_pg_database(f"anole_chaos_{RUN_ID}", e2e_tmp) as name:
        yield name


@pytest.fixture
def cluster(backend: Any) -> Cluster:
    return Cluster(backend)


@pytest.fixture
def owned_redis(tmp_path: Path) -> Iterator[RedisServer]:
    """A `redis-server` of the test's own with an append-only file (`appendfsync always`)."""
    require("redis")
    require_redis_server()
    server = RedisServer(tmp_path / "redis-data")
    server.start()
    yield server
    server.kill()


@pytest.fixture
def redis_cluster(request: Any, owned_redis: RedisServer, tmp_path: Path) -> Iterator[Cluster]:
    import redis

    from anole_jobs.stores.redis.store import RedisStore

    backend = request.getfixturevalue("backend_redis_owned")
    backend.env["ANOLE_E2E_REDIS"] = owned_redis.url
    store = RedisStore(
        redis.Redis.from_url(owned_redis.url), key_prefix=backend.env["ANOLE_E2E_KEY_PREFIX"]
    )
    backend.reader = store_reader(store)
    yield Cluster(backend)
    store.close()


@pytest.fixture
def backend_redis_owned(request: Any, tmp_path: Path) -> Iterator[Any]:
    from tests.e2e import conftest as e2e

    yield from e2e._backend(request, "redis", tmp_path)
