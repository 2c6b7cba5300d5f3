"""The store conformance suite lives in the package (`anole_jobs.testing.contract`) for stores
written elsewhere, yet normal use never imports it, nor pytest or Hypothesis with it."""

from __future__ import annotations

import subprocess
import sys

from anole_jobs.stores.base import Store
from anole_jobs.testing.contract import StoreContract

PROBE = """
import sys
import django
from django.conf import settings
settings.configure(INSTALLED_APPS=["anole_jobs"], ANOLE_JOBS={"STORE": "memory", "RUN": "manual"})
django.setup()
import anole_jobs, anole_jobs.testing, anole_jobs.api, anole_jobs.worker.runner
from anole_jobs import jobs
jobs.step()
suite = ("pytest", "hypothesis", "anole_jobs.testing.contract")
loaded = sorted(name for name in suite if name in sys.modules)
print(",".join(loaded))
"""


def test_normal_use_never_imports_the_suite_or_pytest():
    result = subprocess.run(
        [sys.executable, "-c", PROBE], capture_output=True, text=True, timeout=120, check=True
    )
    assert result.stdout.strip() == ""


def test_the_suite_is_a_class_pytest_collects_only_in_subclasses():
    assert not StoreContract.__name__.startswith("Test")
    with_tests = [name for name in vars(StoreContract) if name.startswith("test_")]
    assert len(with_tests) >= 20


def test_a_store_missing_a_contract_method_cannot_be_built():
    """Every method of the contract is one each store must write: none is left to raise
    NotImplementedError at the first call."""

    class Partial(Store):
        def insert(self, jobs):  # type: ignore[no-untyped-def]
            return []

    import inspect

    from anole_jobs.stores import base

    assert "NotImplementedError" not in inspect.getsource(base)
    abstract = Partial.__abstractmethods__
    assert {"update_meta", "insert_workflow", "stats", "claim_limited", "held_count"} <= abstract
    try:
        Partial()  # type: ignore[abstract]
    except TypeError as exc:
        assert "abstract" in str(exc)
    else:
        raise AssertionError("a store without the whole contract was built")
