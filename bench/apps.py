"""The bench app: its `jobs` module declares the no-op kind; `ready()` installs the opt-in
diagnostics of `bench.diag` when ``ANOLE_BENCH_DIAG`` names an output file."""

from __future__ import annotations

import os

from django.apps import AppConfig


class BenchConfig(AppConfig):
    name = "bench"
    label = "bench"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        path = os.environ.get("ANOLE_BENCH_DIAG")
        if path:
            from bench.diag import install

            install(path)
