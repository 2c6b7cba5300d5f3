"""Chaos tests: real `runjobs` processes killed, cut off from their store, drained and fed bad
input, each scenario ending in an exact reconciliation of what ran against what was enqueued.

The short scenarios run in the normal test run (marker `chaos`); the long run is
``python -m tests.chaos --long`` (see `__main__.py`).
"""
