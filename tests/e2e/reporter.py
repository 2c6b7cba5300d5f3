"""The error reporter the end-to-end tests name in ``ANOLE_E2E_ERROR_REPORTER``: one JSON line
per call, appended to the file ``ANOLE_E2E_REPORTS`` names (read by the test afterwards)."""

from __future__ import annotations

import json
import os
import threading

from anole_jobs.reporting import FailureContext

_lock = threading.Lock()


def to_file(error: BaseException, context: FailureContext) -> None:
    line = json.dumps(
        {
            "type": type(error).__name__,
            "message": str(error),
            "thread": threading.current_thread().name,
            **context.as_dict(),
        }
    )
    with _lock, open(os.environ["ANOLE_E2E_REPORTS"], "a", encoding="utf-8") as file:
        file.write(line + "\n")
