"""Benchmarks for anole_jobs: `python -m bench`, `python -m bench.compare` (see bench/README.md)."""
