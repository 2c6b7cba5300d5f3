"""Maintenance duties, one class each with `run_once(now)` returning what it did.

`jobs.step()` calls them in a fixed order (leader, cron, stage, rescue, prune, the queued
gauge); the runtime calls them on intervals. No SQL here: each duty is one or two store calls.
"""
