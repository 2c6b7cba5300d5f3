"""Kinds for the safe-deploy tests (docs/deploys.md): a renamed kind with an alias, and a kind
at version 3 whose args changed twice, with the upcasters from versions 1 and 2 (imported at
the end of `tests.sampleapp.jobs`, so `runjobs` processes have them too).

`DEPLOY_SEEN` records, per run, the kind the handler saw and its decoded args.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from anole_jobs import Job, jobs, kind, upcaster

DEPLOY_SEEN: list[tuple[str, int, dict[str, Any]]] = []


@kind("test.billing.charge", aliases=["test.payments.charge"], attempts=2)
@dataclass
class Charge:
    amount: int


@jobs.handler(Charge)
def charge(job: Job, args: Charge) -> Any:
    DEPLOY_SEEN.append((job.kind, job.id, asdict(args)))
    return {"charged": args.amount}


@kind("test.invoice", version=3, attempts=2)
@dataclass
class Invoice:
    cents: int
    currency: str


@upcaster("test.invoice", from_version=1)
def invoice_from_v1(args: dict[str, Any]) -> dict[str, Any]:
    # version 1: {"euros": 12}; version 2: {"cents": 1200}
    return {"cents": args["euros"] * 100}


@upcaster("test.invoice", from_version=2)
def invoice_from_v2(args: dict[str, Any]) -> dict[str, Any]:
    # version 3 adds the currency
    return {**args, "currency": "EUR"}


@jobs.handler(Invoice)
def invoice(job: Job, args: Invoice) -> Any:
    DEPLOY_SEEN.append((job.kind, job.id, asdict(args)))
    return asdict(args)
