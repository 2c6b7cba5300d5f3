"""The store conformance suite (`anole_jobs.testing.contract`) on every store of this package,
wired the way a store written elsewhere runs it: a subclass of `StoreContract` that says which
store to test. Here that is the `env` fixture's store (memory, SQLite, PostgreSQL, Redis and a
Redis Cluster); the `env` fixture takes the suite's fake clock (its `clock` fixture)."""

from __future__ import annotations

from typing import Any

import pytest

from anole_jobs.testing.contract import StoreContract
from tests.support.stats import clear_stats


class TestEveryStore(StoreContract):
    @pytest.fixture
    def store(self, env: Any) -> Any:
        # The SQL stores' statistics tables are no models, so the test database's flush leaves
        # other tests' counters there: the suite expects a new store's, none.
        clear_stats(env)
        return env.store  # the env fixture closes it (and empties it) after the test

    @pytest.fixture(autouse=True)
    def _fewer_examples_over_the_network(self, env: Any) -> None:
        # PostgreSQL answers each of the machines' many reads over the network: fewer runs
        # keep it in seconds.
        if env.name == "postgres":
            self.machine_examples = {"jobs": 40, "workflows": 10, "limits": 60, "durable": 15}
