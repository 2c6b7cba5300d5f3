"""Job ids from text: the one rule every surface uses.

An id is written in plain ASCII digits (no sign, no spaces, no exponent, no other script's
digits such as ``²``) and lies in 1 .. 2**63-1, the range every store can hold. Any other
text names no job: `parse_job_id` raises `NotFound`, which surfaces answer as "no such job".
"""

from __future__ import annotations

import re

from anole_jobs.core import MAX_JOB_ID
from anole_jobs.operations.problems import NotFound

MAX_ID = MAX_JOB_ID
_DIGITS = re.compile(r"[0-9]{1,19}")


def job_id_or_none(text: str) -> int | None:
    """`text` as a job id, or None when no job can have it."""
    if not isinstance(text, str) or not _DIGITS.fullmatch(text):
        return None
    value = int(text)
    return value if 1 <= value <= MAX_ID else None


def parse_job_id(text: str) -> int:
    """`text` as a job id; `NotFound` when no job can have it."""
    value = job_id_or_none(text)
    if value is None:
        raise NotFound(f"no job with id {text!r} (ids are whole numbers from 1 to {MAX_ID})")
    return value
