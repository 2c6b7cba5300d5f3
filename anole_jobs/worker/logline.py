"""The per-job log line, made for less: it runs once per job (`outcomes`), so what logging
would work out again for every line is worked out once.

`make_record` builds the `LogRecord` that `logger.makeRecord` would, from a template made
once per level (by logging's own record factory: the source file, module, process and the
like are the same for every line) and the run's fields merged in one update: only the time,
the thread and the text change from line to line. A custom record factory
(`logging.setLogRecordFactory`) or a logger class with its own `makeRecord` is honoured: such
records are made the ordinary way.

`LineFormatter` is `logging.Formatter` with the text of ``%(asctime)s`` kept for the second
it shows (what `manage.py runjobs` formats its own lines with, when the project configures
no handler): the same text, one `strftime` per second rather than per line.
"""

from __future__ import annotations

import logging
import os
import sys
import threading
import time
from typing import Any

from anole_jobs.clock import log_record_ns

_TEMPLATES: dict[tuple[object, ...], dict[str, Any]] = {}
if hasattr(os, "register_at_fork"):  # a forked child has its own process id and name
    os.register_at_fork(after_in_child=_TEMPLATES.clear)
_NANOSECONDS = isinstance(logging._startTime, int)  # type: ignore[attr-defined]


def _times() -> tuple[float, float, float]:
    """`created`, `msecs` and `relativeCreated` as this Python's `LogRecord` computes them."""
    start = logging._startTime  # type: ignore[attr-defined]
    ns = log_record_ns()
    if _NANOSECONDS:  # Python 3.13 and later
        created = ns / 1e9
        msecs = (ns % 1_000_000_000) // 1_000_000 + 0.0
        if msecs == 999.0 and int(created) != ns // 1_000_000_000:
            msecs = 0.0
        return created, msecs, (ns - start) / 1e6
    ct = ns / 1e9  # what `time.time()` reads, from the same clock
    return ct, int((ct - int(ct)) * 1000) + 0.0, (ct - start) * 1000


def _task_name() -> str | None:
    asyncio = sys.modules.get("asyncio")
    if asyncio is None:
        return None
    try:
        task = asyncio.current_task()
    except Exception:  # noqa: BLE001 - as logging: no running loop
        return None
    return task.get_name() if task is not None else None


def make_record(
    logger: logging.Logger, level: int, text: str, pathname: str, fields: dict[str, Any]
) -> logging.LogRecord:
    """The record `logger.makeRecord(name, level, pathname, 0, text, (), None, "record",
    extra=fields)` makes, for less (see the module docstring)."""
    factory = logging.getLogRecordFactory()
    if factory is not logging.LogRecord or type(logger).makeRecord is not logging.Logger.makeRecord:
        record = logger.makeRecord(logger.name, level, pathname, 0, text, (), None, "record")
        record.__dict__.update(fields)
        return record
    key = (
        logger.name,
        level,
        pathname,
        logging.logThreads,
        logging.logProcesses,
        logging.logMultiprocessing,
    )
    template = _TEMPLATES.get(key)
    if template is None:
        made = logging.LogRecord(logger.name, level, pathname, 0, "", (), None, "record")
        template = _TEMPLATES[key] = dict(made.__dict__)
    values = {**template, **fields}
    values["created"], values["msecs"], values["relativeCreated"] = _times()
    if logging.logThreads:
        values["thread"] = threading.get_ident()
        values["threadName"] = threading.current_thread().name
    if "taskName" in values and getattr(logging, "logAsyncioTasks", False):
        values["taskName"] = _task_name()
    values["msg"] = text
    record = logging.LogRecord.__new__(logging.LogRecord)
    record.__dict__ = values
    return record


class LineFormatter(logging.Formatter):
    """`logging.Formatter`, with the text of ``%(asctime)s`` made once per second."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._second: tuple[int, str] | None = None

    def formatTime(self, record: logging.LogRecord, datefmt: str | None = None) -> str:  # noqa: N802 - logging's name
        if datefmt is not None or not self.default_msec_format:
            return super().formatTime(record, datefmt)
        second = int(record.created)
        cached = self._second
        if cached is None or cached[0] != second:
            text = time.strftime(self.default_time_format, self.converter(record.created))
            cached = self._second = (second, text)
        return self.default_msec_format % (cached[1], record.msecs)
