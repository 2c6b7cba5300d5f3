"""Benchmarks for anole_jobs: `python bench/run.py` (see bench/README.md)."""
