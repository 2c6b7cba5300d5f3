"""The store conformance suite: the rules of the store contract (`anole_jobs.stores.base`) as
tests that any store can run, one written outside this package included (River's
``riverdrivertest`` is the model). Every store of this package runs it the same way
(tests/contract/test_conformance.py).

    from anole_jobs.testing.contract import StoreContract

    class TestMyStore(StoreContract):
        def make_store(self):
            return MyStore()

See docs/stores.md, "Writing a store". Importing this package imports pytest and Hypothesis:
nothing else in anole_jobs imports it. `support` holds the helpers the suite is written with
(`new_job`, `claim`, `race`), which a store's own tests may use too.
"""

from __future__ import annotations

from anole_jobs.testing.contract.suite import StoreContract
from anole_jobs.testing.contract.support import claim, new_job, race

__all__ = ["StoreContract", "claim", "new_job", "race"]
