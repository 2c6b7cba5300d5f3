"""Job ids from text: the one rule every surface uses.

An id is written in plain ASCII digits (no sign, no spaces, no exponent, no other script's
digits such as ``²``) and lies in 1 .. 2**63-1, the range every store can hold. Any other
text names no job: `parse_job_id` raises `NotFound`, which surfaces answer as "no such job".
"""

from __future__ import annotations

import re

from anole_jobs.core import MAX_JOB_ID
from anole_jobs.operations.problems import NotFound

#: At most as many digits as the largest id has (longer text cannot be an id).
_DIGITS = re.compile(rf"[0-9]{{1,{len(str(MAX_JOB_ID))}}}")


def job_id_or_none(text: str) -> int | None:
    """`text` as a job id, or None when no job can have it."""
    if not isinstance(text, str) or not _DIGITS.fullmatch(text):
        return None
    value = int(text)
    return value if 1 <= value <= MAX_JOB_ID else None


def parse_job_id(text: str) -> int:
    """`text` as a job id; `NotFound` when no job can have it."""
    value = job_id_or_none(text)
    if value is None:
        raise NotFound(f"no job with id {text!r} (ids are whole numbers from 1 to {MAX_JOB_ID})")
    return value
