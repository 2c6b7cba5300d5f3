"""Operators' requests to one worker process (the dashboard's workers page, ``POST
/workers/<id>/quiet`` and ``/stop``, ``manage.py jobs worker-quiet`` / ``worker-stop``).

The store keeps the request on the worker's record (`Store.request_worker_control`); this
thread reads it every `CONTROL_POLL` seconds (one small read), so a process honours it within
a second whatever its lease, and acts once:

- "quiet": claim nothing more; jobs claimed ahead but not started go back at once (the
  attempt not counted) for other workers; the running ones finish. The process stays up
  (and listed) until it is stopped.
- "stop": drain and exit, as a first SIGTERM does (`runjobs` exits 0 once drained). A runtime
  started in-process (not by `runjobs`) has no process to end: there it quiets.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from anole_jobs.background import BackgroundThread
from anole_jobs.service import JobService
from anole_jobs.stores.workers import WorkerControl

logger = logging.getLogger("anole_jobs")

#: Seconds between two reads of this worker's request.
CONTROL_POLL = 0.5


class ControlWatch(BackgroundThread):
    name = "anole-control"

    def __init__(
        self,
        service: JobService,
        worker_id: str,
        *,
        on_quiet: Callable[[], object],
        interval: float = CONTROL_POLL,
    ) -> None:
        super().__init__()
        self.service = service
        self.worker_id = worker_id
        self.on_quiet = on_quiet
        #: Called with a reason for "stop" (`runjobs` sets it to its drain); None: quiet.
        self.on_stop: Callable[[str], object] | None = None
        self.interval = interval
        self.quiet = False
        self.stopping_asked = False

    def run_once(self) -> float:
        control = self.service.store.worker_control(self.worker_id)
        if control is not None:
            self.apply(control)
        return self.interval

    def apply(self, control: WorkerControl) -> None:
        """Act on `control` (once per action)."""
        who = f"{control.by} ({control.surface})" if control.surface else control.by
        if control.action == "stop" and not self.stopping_asked:
            self.stopping_asked = True
            if self.on_stop is not None:
                self.on_stop(f"a stop request from {who}")
                return
        if control.action in ("quiet", "stop") and not self.quiet:
            self.quiet = True
            given = self.on_quiet()
            logger.info(
                "runjobs: quiet, asked by %s: claiming nothing more (%s job(s) claimed but not "
                "started given back); the running jobs finish",
                who,
                given,
            )
