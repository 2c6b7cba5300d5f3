"""Read by mypy only (tests/unit/test_typing.py), never imported: each line marked "error"
must be refused by mypy, and the rest accepted."""

from __future__ import annotations

from dataclasses import dataclass

from anole_jobs import Job, jobs, kind


@kind("typing.charge")
@dataclass
class Charge:
    amount: int


@dataclass
class Refund:
    amount: int


@jobs.handler(Charge)
def charge(job: Job, args: Charge) -> None:
    print(args.amount)


@jobs.handler(Charge)
async def charge_async(job: Job, args: Charge) -> None:
    print(args.amount)


@jobs.handler(Charge)  # error: the handler takes a Refund
def refund(job: Job, args: Refund) -> None:
    print(args.amount)


jobs.enqueue(Charge(amount=1), delay=5, queue="billing", on_commit=True)
jobs.enqueue(Charge(amount=1), delai=5)  # error: misspelled option
jobs.enqueue(Charge(amount=1), priority="high")  # error: priority is an int
jobs.enqueue_many([Charge(amount=1)], delay=5, run_at=None, meta={"a": 1})
jobs.enqueue_many([Charge(amount=1)], delai=5)  # error: misspelled option
jobs.enqueue_in(Charge(amount=1), using="default", unique=None, request=None)
jobs.enqueue_in(Charge(amount=1), using="default", on_commit=True)  # error: not an option here


async def enqueue_later() -> None:
    await jobs.aenqueue(Charge(amount=1), queue="billing", on_commit=True)
    await jobs.aenqueue(Charge(amount=1), queue=3)  # error: queue is a str
