"""A job that is not there is one answer everywhere: the facade's calls that act on one job
and answer it raise `JobNotFound` (a `LookupError`, as `jobs.result` always did), and every
surface answers not found; `jobs.get` answers None and `jobs.delete` False. On every store."""

from __future__ import annotations

from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from anole_jobs import JobNotFound
from anole_jobs.operations import actions
from anole_jobs.operations.problems import NotFound, problem_of
from tests.admin.support import MOUNT
from tests.sampleapp.jobs import Work

pytestmark = pytest.mark.django_db(databases=["default"])


def gone(env) -> int:
    """The id of a job that was enqueued, then deleted."""
    job_id = env.jobs.enqueue(Work()).id
    assert env.jobs.delete(job_id) is True
    return job_id


def test_the_facade_raises_job_not_found_for_a_job_that_is_not_there(env):
    job_id = gone(env)
    for call in (env.jobs.retry, env.jobs.cancel, env.jobs.result):
        with pytest.raises(JobNotFound, match=f"no job with id {job_id} ") as raised:
            call(job_id)
        assert isinstance(raised.value, LookupError)
        assert raised.value.job_id == job_id
    assert env.jobs.get(job_id) is None
    assert env.jobs.delete(job_id) is False


def test_every_surface_answers_a_job_that_is_not_there_as_not_found(env, staff):
    job_id = gone(env)
    for method, suffix in (("GET", ""), ("DELETE", ""), ("POST", "/retry"), ("POST", "/cancel")):
        response = staff.generic(method, f"{MOUNT}jobs/{job_id}{suffix}")
        assert response.status_code == 404, (method, suffix, response.content)
        assert response.json() == {"error": "not_found", "message": f"no job with id {job_id}"}
    for action in ("retry", "cancel", "delete"):
        page = staff.post(f"{MOUNT}dashboard/jobs/{job_id}/{action}")
        assert page.status_code == 404, (action, page.content)
        err = StringIO()
        with pytest.raises(SystemExit) as exited:
            call_command("jobs", action, str(job_id), stdout=StringIO(), stderr=err)
        assert exited.value.code == 1
        assert err.getvalue().strip() == f"no job with id {job_id}"
    with pytest.raises(CommandError, match=f"no job with id {job_id}"):
        call_command("jobs", "show", str(job_id), stdout=StringIO())


def test_a_job_deleted_between_an_actions_read_and_its_write_is_not_found(env, monkeypatch):
    """`actions.retry` and `cancel` read the job, then act: one deleted in between is not
    found (not a crash on a missing record)."""
    for act in (actions.retry, actions.cancel):
        job_id = env.jobs.enqueue(Work()).id
        read = env.jobs.get(job_id)
        monkeypatch.setattr(actions.jobs, "get", lambda _id, read=read: read)
        env.jobs.delete(job_id)
        with pytest.raises(NotFound, match=f"no job with id {job_id}"):
            act(job_id)
        monkeypatch.undo()


def test_the_error_map_answers_job_not_found_as_404():
    problem = problem_of(JobNotFound(7))
    assert problem is not None
    assert (problem.status, problem.code, problem.message) == (404, "not_found", "no job with id 7")
