"""A kind stored encrypted (docs/encryption.md), declared only while a test needs it: a kind
with ``encrypt=True`` makes the system checks ask for ENCRYPTION_KEYS, which the rest of the
suite does not set. `declare()` registers it (idempotent) and returns its args type;
`forget()` removes it again."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from anole_jobs import Job, jobs, kind
from anole_jobs.kinds import registry

SECRET_KIND = "test.secret"
SECRET_SEEN: list[dict[str, Any]] = []


def declare() -> type:
    @kind(SECRET_KIND, encrypt=True, attempts=2)
    @dataclass
    class Secret:
        ssn: str
        note: str = ""

    @jobs.handler(Secret)
    def secret(job: Job, args: Secret) -> Any:
        SECRET_SEEN.append(asdict(args))
        if args.note == "steps":
            # A durable step of an encrypted kind: its record is sealed too. The first attempt
            # fails after it, so the second reads it back from the store.
            looked_up = job.step("lookup", lambda: {"ssn": args.ssn})
            if job.attempt == 1:
                raise RuntimeError("the first attempt fails after its step")
            return {"echo": looked_up["ssn"], "replayed": True}
        return {"echo": args.ssn}

    return Secret


def forget() -> None:
    registry.remove_kind(SECRET_KIND)
    SECRET_SEEN.clear()
