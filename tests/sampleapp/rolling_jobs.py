"""A kind in two releases, for the rolling-deploy test of versions
(tests/e2e/test_rolling_versions.py): with ``ANOLE_E2E_OLD_CODE`` set, this process runs the
previous release, where ``e2e.rolling.invoice`` is at version 1 (whole euros); otherwise the
current one, at version 2 (cents), with the upcaster from version 1.

The handler touches ``<id>.<attempt>.<release>`` in its `marker` directory (as the e2e kinds
do), so the test sees which release ran each job.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from anole_jobs import Job, jobs, kind, upcaster

OLD_CODE = bool(os.environ.get("ANOLE_E2E_OLD_CODE"))
RELEASE = "old" if OLD_CODE else "new"


def _touch(marker: str, job: Job) -> None:
    if marker:
        Path(marker, f"{job.id}.{job.attempt}.{RELEASE}").touch()


if OLD_CODE:

    @kind("e2e.rolling.invoice", attempts=3)
    @dataclass
    class Invoice:
        euros: int
        marker: str = ""

    @jobs.handler(Invoice)
    def invoice(job: Job, args: Invoice) -> Any:
        _touch(args.marker, job)
        return {"cents": args.euros * 100}

else:

    @kind("e2e.rolling.invoice", attempts=3, version=2)  # type: ignore[no-redef]
    @dataclass
    class Invoice:
        cents: int
        marker: str = ""

    @upcaster("e2e.rolling.invoice", from_version=1)
    def invoice_from_v1(args: dict[str, Any]) -> dict[str, Any]:
        return {"cents": args.pop("euros") * 100, **args}

    @jobs.handler(Invoice)
    def invoice(job: Job, args: Invoice) -> Any:  # type: ignore[no-redef]
        _touch(args.marker, job)
        return {"cents": args.cents}
