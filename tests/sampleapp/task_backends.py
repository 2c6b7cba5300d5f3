"""A project's own subclass of `AnoleBackend`, under a path of its own (tests of the system
checks and the worker's task handler: both must find it, whatever the path)."""

from __future__ import annotations

from anole_jobs.tasks import AnoleBackend


class ProjectBackend(AnoleBackend):
    pass
