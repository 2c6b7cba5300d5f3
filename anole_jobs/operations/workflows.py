"""What a person does with a workflow: read it, cancel it (docs/workflows.md). An id that names
no workflow, or cannot be one, raises `NotFound` (404 on the routes and the dashboard, exit
status 1 in the CLI), like a job id."""

from __future__ import annotations

from anole_jobs.api import jobs
from anole_jobs.operations import audit
from anole_jobs.operations.actions import Outcome
from anole_jobs.operations.problems import NotFound
from anole_jobs.workflows import WorkflowRecord

#: The longest text taken as a workflow id (ids the store makes are 32 hex digits).
MAX_WORKFLOW_ID = 100


def workflow_id_or_none(text: object) -> str | None:
    """`text` if it can be a workflow id (1 to 100 characters, none of them NUL), else None."""
    if not isinstance(text, str) or not 1 <= len(text) <= MAX_WORKFLOW_ID or "\x00" in text:
        return None
    try:
        text.encode()
    except UnicodeEncodeError:
        return None
    return text


def _missing(text: object) -> NotFound:
    return NotFound(f"no workflow with id {text!r}")


def get(text: object) -> WorkflowRecord:
    workflow_id = workflow_id_or_none(text)
    record = jobs.workflow(workflow_id) if workflow_id is not None else None
    if record is None:
        raise _missing(text)
    return record


def cancel(text: object) -> Outcome[WorkflowRecord]:
    """Cancel every step not ended; unchanged when the workflow was cancelled already."""
    before = get(text)
    record = jobs.cancel_workflow(before.id)
    if record is None:
        raise _missing(text)
    audit.record("cancel_workflow", f"workflow {before.id}")
    return Outcome(record, before.state != "cancelled")
