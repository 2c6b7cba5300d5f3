"""Chaos tests: real `runjobs` processes killed, cut off from their store, drained and fed bad
input, each scenario ending in an exact reconciliation of what ran against what was enqueued.

The scenarios with `runjobs` processes carry the marker `chaos`: their short forms run in the
normal test run (CI runs them with one Python/Django pair), the long run is
``python -m tests.chaos --long`` (see `__main__.py`). The in-process tests here (bad input,
security) are ordinary tests and run everywhere.
"""
