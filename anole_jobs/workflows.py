"""Workflows: jobs that wait for other jobs (docs/workflows.md).

`Workflow` is the builder a user fills with `add` (and the `chain`, `group` and `chord`
shortcuts); `WorkflowEnqueued` is what `jobs.enqueue_workflow` returns and `WorkflowRecord`
what `jobs.workflow` returns. Building checks what it can without settings (names, the graph,
the number of steps, unique kinds); the arguments and options of each step are checked when the
workflow is enqueued, as for `jobs.enqueue`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal

from anole_jobs.bounds import check_name, text_problem
from anole_jobs.core import FINAL_STATES, STATES, JobRecord, WorkflowRow
from anole_jobs.durations import Duration
from anole_jobs.errors import InvalidJob
from anole_jobs.kinds import spec_of

#: The most steps one workflow may have.
MAX_STEPS = 10_000

WorkflowState = Literal["running", "completed", "failed", "cancelled"]


@dataclass(frozen=True, kw_only=True)
class StepSpec:
    """One step as added: its job's arguments and options, and what it waits for."""

    name: str
    args: object
    after: tuple[str, ...]
    ignore_failed: bool
    queue: str | None
    priority: int | None
    delay: Duration | None
    run_at: datetime | None
    meta: Mapping[str, Any] | None


class Workflow:
    """A graph of jobs: each step runs once the steps it is added `after` have completed.

    ``name`` is a label shown on every surface (not unique). See docs/workflows.md."""

    def __init__(self, name: str = "workflow") -> None:
        if not isinstance(name, str) or not name:
            raise InvalidJob(f"a workflow's name is a non-empty string, got {name!r}")
        problem = text_problem(name)
        if problem is not None:  # a label, of any length: only what no store can hold
            raise InvalidJob(f"a workflow's name {problem}, got {name!r}")
        self.name = name
        self._steps: dict[str, StepSpec] = {}

    def __repr__(self) -> str:
        return f"<Workflow {self.name!r}: {len(self._steps)} steps>"

    def __len__(self) -> int:
        return len(self._steps)

    @property
    def steps(self) -> dict[str, StepSpec]:
        """The steps added so far, by name, in the order they were added."""
        return dict(self._steps)

    def add(
        self,
        args: object,
        *,
        after: Iterable[str] = (),
        name: str | None = None,
        ignore_failed: bool = False,
        queue: str | None = None,
        priority: int | None = None,
        delay: Duration | None = None,
        run_at: datetime | None = None,
        meta: Mapping[str, Any] | None = None,
    ) -> str:
        """Add a step that runs `args` (a job kind's instance) once every step named in
        `after` has completed; return its name (`name`, or ``"step-N"``). With
        `ignore_failed` it runs once they have all ended, however they ended. `delay` counts
        from the moment the step is ready; `run_at` is absolute."""
        if len(self._steps) >= MAX_STEPS:
            raise InvalidJob(f"a workflow has at most {MAX_STEPS} steps")
        if isinstance(args, type):
            raise InvalidJob("add() takes a job, not its class: pass an instance")
        spec = spec_of(type(args))
        if spec.unique is not None:
            raise InvalidJob(
                f"kind {spec.name!r} declares unique=..., which a workflow step cannot have: a "
                "step that another job's key turned away would leave its dependents waiting"
            )
        if spec.debounce is not None:
            raise InvalidJob(
                f"kind {spec.name!r} declares debounce=..., which a workflow step cannot have: "
                "a step folded into another job would leave its dependents waiting"
            )
        if name is None:
            name = f"step-{len(self._steps) + 1}"
            while name in self._steps:
                name += "'"
        else:
            name = check_name(name, what="a step's name", where=f"workflow {self.name!r}")
        if name in self._steps:
            raise InvalidJob(f"workflow {self.name!r} already has a step named {name!r}")
        if isinstance(after, str):
            after = (after,)  # one name, not its characters
        deps = tuple(after)
        for dep in deps:
            if not isinstance(dep, str):
                raise InvalidJob(f"after= takes step names (str), got {dep!r}")
        if len(set(deps)) != len(deps):
            raise InvalidJob(f"step {name!r} names a dependency twice in after={list(deps)}")
        if not isinstance(ignore_failed, bool):
            raise InvalidJob(f"ignore_failed must be True or False, got {ignore_failed!r}")
        self._steps[name] = StepSpec(
            name=name,
            args=args,
            after=deps,
            ignore_failed=ignore_failed,
            queue=queue,
            priority=priority,
            delay=delay,
            run_at=run_at,
            meta=meta,
        )
        return name

    # -- shortcuts: Celery's canvas as steps ---------------------------------------------------
    def chain(self, *args: object, after: Iterable[str] = ()) -> list[str]:
        """Add `args` as steps that run one after the other (after `after`); their names."""
        names: list[str] = []
        previous = tuple(after)
        for item in args:
            names.append(self.add(item, after=previous))
            previous = (names[-1],)
        return names

    def group(self, *args: object, after: Iterable[str] = ()) -> list[str]:
        """Add `args` as steps that run side by side (after `after`); their names."""
        deps = tuple(after)
        return [self.add(item, after=deps) for item in args]

    def chord(self, header: Sequence[object], body: object, *, after: Iterable[str] = ()) -> str:
        """Add the `header` steps side by side and `body` after all of them; body's name."""
        return self.add(body, after=self.group(*header, after=after))

    # -- checks ------------------------------------------------------------------------------
    def order(self) -> list[str]:
        """The step names with every step after its dependencies; `InvalidJob` for an empty
        workflow, a dependency that names no step, or a cycle."""
        if not self._steps:
            raise InvalidJob(f"workflow {self.name!r} has no steps: add() some first")
        for step in self._steps.values():
            for dep in step.after:
                if dep not in self._steps:
                    known = ", ".join(repr(n) for n in self._steps)
                    raise InvalidJob(
                        f"step {step.name!r} runs after {dep!r}, which is not a step of "
                        f"workflow {self.name!r} (steps: {known})"
                    )
        placed: dict[str, None] = {}
        visiting: list[str] = []
        for start in self._steps:
            stack: list[tuple[str, int]] = [(start, 0)]
            while stack:
                name, i = stack.pop()
                if i == 0:
                    if name in placed:
                        continue
                    if name in visiting:
                        cycle = [*visiting[visiting.index(name) :], name]
                        raise InvalidJob(
                            f"workflow {self.name!r} has a cycle: {' -> '.join(cycle)}"
                        )
                    visiting.append(name)
                deps = self._steps[name].after
                if i < len(deps):
                    stack.append((name, i + 1))
                    stack.append((deps[i], 0))
                else:
                    visiting.pop()
                    placed[name] = None
        return list(placed)


@dataclass(frozen=True)
class WorkflowEnqueued:
    """What `jobs.enqueue_workflow` returns: the workflow's id and each step's job id.

    With ``on_commit=True`` on a store that cannot join the transaction, `jobs` is empty
    until the commit writes the steps (the id is already the workflow's)."""

    id: str
    jobs: Mapping[str, int] = field(default_factory=dict)


@dataclass(frozen=True, kw_only=True)
class WorkflowRecord:
    """A workflow as stored: its steps (`JobRecord`s by step name), what each waits for, its
    steps counted by state, and its state: ``running`` until one of ``completed`` (every
    step completed), ``failed`` (every step ended, one of them dead) or ``cancelled``
    (`cancel_workflow` was called, or every step ended, some cancelled, none dead)."""

    id: str
    name: str
    created_at: datetime
    state: WorkflowState
    counts: Mapping[str, int]
    steps: Mapping[str, JobRecord]
    dependencies: Mapping[str, list[str]]


def workflow_record(row: WorkflowRow) -> WorkflowRecord:
    """The public record of a stored workflow (its state worked out from its steps)."""
    names = {record.id: record.step_name or str(record.id) for record in row.steps}
    counts: dict[str, int] = {}
    for record in row.steps:
        counts[record.state] = counts.get(record.state, 0) + 1
    return WorkflowRecord(
        id=row.id,
        name=row.name,
        created_at=row.created_at,
        state=workflow_state(row.cancelled, counts),
        counts={state: counts[state] for state in STATES if state in counts},
        steps={names[record.id]: record for record in row.steps},
        dependencies={
            names[job_id]: [names.get(dep, str(dep)) for dep in deps]
            for job_id, deps in row.dependencies.items()
            if job_id in names
        },
    )


def workflow_state(cancelled: bool, counts: Mapping[str, int]) -> WorkflowState:
    if cancelled:
        return "cancelled"
    total = sum(counts.values())
    ended = sum(counts.get(state, 0) for state in FINAL_STATES)
    if ended < total or total == 0:
        return "running"
    if counts.get("completed", 0) == total:
        return "completed"
    return "failed" if counts.get("dead") else "cancelled"
