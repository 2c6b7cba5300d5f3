"""The job's timeline on every store: `job.progress`, the job's log (what any logger emits in
the handler's thread during an attempt, INFO and above, the newest `JOB_LOG_LINES`) and
`JobRecord.attempts` (worker, start, end and outcome of each attempt, the running one too)."""

from __future__ import annotations

import logging
from datetime import datetime, timedelta

import pytest

from anole_jobs import timeline
from anole_jobs.stores.base import Finish, RunRef
from anole_jobs.testing.contract.support import claim
from tests.sampleapp.jobs import HOOKS, AsyncWork, Work

log = logging.getLogger("tests.timeline")


def log_lines(now, attempt, *messages):
    """`messages` as the JSON text of job's-log lines of `attempt`, logged at `now`."""
    return timeline.encode(
        [
            {
                "attempt": attempt,
                "at": now.isoformat(),
                "level": "INFO",
                "logger": "x",
                "message": text,
            }
            for text in messages
        ]
    )


def test_a_job_that_reports_nothing_has_an_empty_timeline_until_it_runs(env):
    job = env.jobs.enqueue(Work())
    record = env.jobs.get(job.id)
    assert (record.progress, record.logs, record.attempts) == (None, [], [])


def test_the_last_progress_of_an_attempt_is_stored_with_its_end(env):
    def report(job, args):
        job.progress(1, 10, "first")
        job.progress(7, 10, "seventh")

    HOOKS["report"] = report
    job = env.jobs.enqueue(Work(action="report"))
    env.jobs.step()
    progress = env.jobs.get(job.id).progress
    assert {k: progress[k] for k in ("done", "total", "message")} == {
        "done": 7,
        "total": 10,
        "message": "seventh",
    }
    assert progress["at"] == env.clock()


def test_progress_is_stored_while_the_job_runs_at_most_about_once_a_second(env):
    seen = []

    def report(job, args):
        job.progress(3)
        seen.append(env.jobs.get(job.id).progress)
        job.progress(4, message="soon")  # within the second: kept for the run's end
        seen.append(env.jobs.get(job.id).progress)

    HOOKS["report"] = report
    job = env.jobs.enqueue(Work(action="report"))
    env.jobs.step()
    assert [(p["done"], p["total"], p["message"]) for p in seen] == [(3, None, None)] * 2
    final = env.jobs.get(job.id).progress
    assert (final["done"], final["message"]) == (4, "soon")


def test_progress_refuses_values_that_are_not_numbers_and_bounds_its_message(env):
    def bad(job, args):
        with pytest.raises(TypeError):
            job.progress("half")
        with pytest.raises(TypeError):
            job.progress(1, total=True)
        with pytest.raises(TypeError):
            job.progress(1, message=5)
        job.progress(0.5, 1.0, "x" * 10_000)

    HOOKS["bad"] = bad
    job = env.jobs.enqueue(Work(action="bad"))
    assert env.jobs.step().outcomes() == {job.id: "completed"}
    message = env.jobs.get(job.id).progress["message"]
    assert len(message) == timeline.MESSAGE_CHARS and message.endswith("…")


def test_the_job_log_keeps_info_and_above_from_any_logger_of_the_handlers_thread(env):
    def chatty(job, args):
        log.debug("not kept")
        log.info("fetching %s", "page 1")
        logging.getLogger("somewhere.else").warning("slow answer")
        try:
            raise KeyError("k")
        except KeyError:
            log.exception("lookup failed")

    HOOKS["chatty"] = chatty
    job = env.jobs.enqueue(Work(action="chatty"))
    env.jobs.step()
    logs = env.jobs.get(job.id).logs
    assert [(line["level"], line["logger"], line["message"]) for line in logs] == [
        ("INFO", "tests.timeline", "fetching page 1"),
        ("WARNING", "somewhere.else", "slow answer"),
        ("ERROR", "tests.timeline", "lookup failed\nKeyError: 'k'"),
    ]
    assert {line["attempt"] for line in logs} == {1}
    assert all(isinstance(line["at"], datetime) for line in logs)


def test_a_record_made_for_the_job_log_only_reaches_no_other_handler(env, caplog):
    # The root logger stays at WARNING: an INFO record of a logger without a level is kept in
    # the job's log, and no other handler of the process sees it.
    def quiet(job, args):
        log.info("for the job only")

    HOOKS["quiet"] = quiet
    caplog.set_level(logging.WARNING)
    job = env.jobs.enqueue(Work(action="quiet"))
    env.jobs.step()
    assert [line["message"] for line in env.jobs.get(job.id).logs] == ["for the job only"]
    assert "for the job only" not in caplog.text
    log.info("outside any job")  # no capture outside an attempt
    assert "outside any job" not in caplog.text


def test_each_attempt_adds_its_lines_and_the_newest_job_log_lines_are_kept(env):
    env.configure(JOB_LOG_LINES=3)

    def twice(job, args):
        log.info("a%d", job.attempt)
        log.info("b%d", job.attempt)
        if job.attempt == 1:
            raise ValueError("again")

    HOOKS["twice"] = twice
    job = env.jobs.enqueue(Work(action="twice"))
    env.jobs.step()
    env.clock.advance(timedelta(hours=1))
    env.jobs.step()
    logs = env.jobs.get(job.id).logs
    assert [(line["attempt"], line["message"]) for line in logs] == [
        (1, "b1"),
        (2, "a2"),
        (2, "b2"),
    ]


def test_a_job_log_of_zero_lines_keeps_none(env):
    env.configure(JOB_LOG_LINES=0)
    HOOKS["talk"] = lambda job, args: log.warning("unkept")
    job = env.jobs.enqueue(Work(action="talk"))
    env.jobs.step()
    assert env.jobs.get(job.id).logs == []


def test_an_async_handler_has_its_attempts_log_and_progress(env):
    from tests.sampleapp.timeline_jobs import AsyncTimeline

    assert env.jobs.get(env.jobs.enqueue(AsyncWork()).id)  # a plain async job beside it
    job = env.jobs.enqueue(AsyncTimeline(reports=3))
    env.jobs.step()
    record = env.jobs.get(job.id)
    assert record.state == "completed"
    assert [(a["attempt"], a["outcome"]) for a in record.attempts] == [(1, "completed")]
    assert [(line["level"], line["message"]) for line in record.logs] == [
        ("INFO", "async attempt 1"),
        ("WARNING", "from a task the handler started"),
    ]
    assert (record.progress["done"], record.progress["total"]) == (3, 3)


def test_attempts_keep_worker_start_end_and_outcome(env):
    job = env.jobs.enqueue(Work(action="fail"))
    env.jobs.step()
    env.clock.advance(timedelta(hours=1))
    env.jobs.step()
    env.clock.advance(timedelta(hours=1))
    env.jobs.step()
    record = env.jobs.get(job.id)
    assert record.state == "dead"
    assert [(a["attempt"], a["outcome"]) for a in record.attempts] == [
        (1, "failed"),
        (2, "failed"),
        (3, "dead"),
    ]
    for entry in record.attempts:
        assert isinstance(entry["worker"], str) and entry["worker"]
        assert entry["started_at"] <= entry["finished_at"]
    assert record.attempts[1]["started_at"] - record.attempts[0]["started_at"] == timedelta(hours=1)


def test_a_completed_and_a_snoozed_attempt(env):
    job = env.jobs.enqueue(Work(action="snooze", seconds=60))
    env.jobs.step()
    record = env.jobs.get(job.id)
    assert [(a["attempt"], a["outcome"]) for a in record.attempts] == [(1, "snoozed")]
    done = env.jobs.enqueue(Work())
    env.jobs.step()
    (entry,) = env.jobs.get(done.id).attempts
    assert entry["outcome"] == "completed"
    assert entry["finished_at"] == env.clock()


def test_the_running_attempt_shows_with_no_end_and_no_outcome(env):
    seen = []
    HOOKS["look"] = lambda job, args: seen.append(env.jobs.get(job.id).attempts)
    job = env.jobs.enqueue(Work(action="look"))
    env.jobs.step()
    (running,) = seen[0]
    assert running["attempt"] == 1
    assert running["finished_at"] is None and running["outcome"] is None
    assert isinstance(running["worker"], str) and running["worker"]
    assert running["started_at"] == env.clock()
    (ended,) = env.jobs.get(job.id).attempts
    assert ended["worker"] == running["worker"]


def test_a_rescued_attempt_says_so(env):
    job = env.jobs.enqueue(Work())
    now = env.clock()
    claim(env.store, now, worker="host-a:123")
    env.store.rescue(now=now + timedelta(minutes=5))
    record = env.jobs.get(job.id)
    assert record.state == "available"
    assert record.attempts == [
        {
            "attempt": 1,
            "worker": "host-a:123",
            "started_at": now,
            "finished_at": now + timedelta(minutes=5),
            "outcome": "rescued",
        }
    ]


def test_a_job_cancelled_while_it_runs_ends_its_attempt_cancelled(env):
    job = env.jobs.enqueue(Work())
    now = env.clock()
    claim(env.store, now, worker="host-b:9")
    env.clock.advance(timedelta(seconds=3))
    env.jobs.cancel(job.id)
    (entry,) = env.jobs.get(job.id).attempts
    assert (entry["worker"], entry["outcome"]) == ("host-b:9", "cancelled")
    assert entry["finished_at"] - entry["started_at"] == timedelta(seconds=3)


def test_record_progress_and_the_timeline_of_a_finish_are_fenced(env):
    job = env.jobs.enqueue(Work())
    now = env.clock()
    (claimed,) = claim(env.store, now)
    progress = timeline.encode(timeline.progress_entry(1, 2, "m", now))
    assert env.store.record_progress(claimed.run, progress) is True
    env.jobs.retry(job.id)  # an admin retry: the claim above is stale now
    assert env.store.record_progress(claimed.run, progress.replace('"m"', '"n"')) is False
    stale = Finish(
        run=claimed.run,
        state="completed",
        at=now,
        outcome="completed",
        progress=progress,
        logs=timeline.encode([{"attempt": 1, "at": now.isoformat(), "level": "INFO"}]),
    )
    assert env.store.finish([stale]) == [False]
    record = env.jobs.get(job.id)
    assert record.progress["message"] == "m"
    assert record.logs == []
    assert [a["outcome"] for a in record.attempts] == ["restarted"]


def test_a_finish_keeps_the_newest_logs_kept_lines(env):
    job = env.jobs.enqueue(Work())
    now = env.clock()

    def lines(attempt, *messages):
        return log_lines(now, attempt, *messages)

    (first,) = claim(env.store, now)
    retrying = Finish(
        run=first.run,
        state="available",
        at=now,
        scheduled_at=now,
        outcome="failed",
        logs=lines(1, "a", "b", "c"),
        logs_kept=4,
    )
    assert env.store.finish([retrying]) == [True]
    (second,) = claim(env.store, now)
    done = Finish(
        run=second.run,
        state="completed",
        at=now,
        outcome="completed",
        logs=lines(2, "d", "e"),
        logs_kept=4,
    )
    assert env.store.finish([done]) == [True]
    record = env.jobs.get(job.id)
    assert [(line["attempt"], line["message"]) for line in record.logs] == [
        (1, "b"),
        (1, "c"),
        (2, "d"),
        (2, "e"),
    ]
    assert [a["outcome"] for a in record.attempts] == ["failed", "completed"]


def test_record_logs_appends_a_running_attempts_lines_keeps_the_newest_and_is_fenced(env):
    job = env.jobs.enqueue(Work())
    now = env.clock()

    def lines(*messages):
        return log_lines(now, 1, *messages)

    (claimed,) = claim(env.store, now)
    assert env.store.record_logs(claimed.run, lines("a", "b"), 3) is True
    assert [line["message"] for line in env.jobs.get(job.id).logs] == ["a", "b"]
    assert env.store.record_logs(claimed.run, lines("c", "d"), 3) is True
    assert [line["message"] for line in env.jobs.get(job.id).logs] == ["b", "c", "d"]
    # The attempt's end carries the lines not stored yet, appended after those.
    done = Finish(
        run=claimed.run,
        state="completed",
        at=now,
        outcome="completed",
        logs=lines("e"),
        logs_kept=3,
    )
    assert env.store.finish([done]) == [True]
    record = env.jobs.get(job.id)
    assert [line["message"] for line in record.logs] == ["c", "d", "e"]
    assert record.logs[0] == {
        "attempt": 1,
        "at": now,
        "level": "INFO",
        "logger": "x",
        "message": "c",
    }
    # The run is over: nothing more is written for it.
    assert env.store.record_logs(claimed.run, lines("late"), 3) is False
    assert [line["message"] for line in env.jobs.get(job.id).logs] == ["c", "d", "e"]


def test_record_logs_takes_the_last_lines_of_a_run_a_cancel_ended_and_no_others(env):
    """A cancel ends a running job at once, so the run's own end is refused; the lines it
    logged while winding down still come through `record_logs`, for that run only."""
    job = env.jobs.enqueue(Work())
    now = env.clock()

    def lines(*messages):
        return log_lines(now, 1, *messages)

    (claimed,) = claim(env.store, now)
    run = claimed.run
    assert env.store.record_logs(run, lines("working"), 10) is True
    env.jobs.cancel(job.id)
    assert env.store.finish([Finish(run=run, state="completed", at=now)]) == [False]
    other_token = RunRef(id=run.id, attempt=run.attempt, token=run.token + 1)
    assert env.store.record_logs(other_token, lines("not this run's"), 10) is False
    other_attempt = RunRef(id=run.id, attempt=run.attempt + 1, token=run.token)
    assert env.store.record_logs(other_attempt, lines("not this attempt's"), 10) is False
    assert env.store.record_logs(run, lines("winding down"), 10) is True
    record = env.jobs.get(job.id)
    assert record.state == "cancelled"
    assert [line["message"] for line in record.logs] == ["working", "winding down"]
    # Retried, the job has moved on: the old run's lines are refused, before and after its
    # next claim.
    env.jobs.retry(job.id)
    assert env.store.record_logs(run, lines("late"), 10) is False
    (again,) = claim(env.store, now)
    assert again.run.token != run.token
    assert env.store.record_logs(run, lines("late"), 10) is False
    assert [line["message"] for line in env.jobs.get(job.id).logs] == ["working", "winding down"]


def test_retry_keeps_the_timeline(env):
    job = env.jobs.enqueue(Work(action="discard"))
    env.jobs.step()
    assert env.jobs.get(job.id).state == "dead"
    env.jobs.retry(job.id)
    record = env.jobs.get(job.id)
    assert [a["outcome"] for a in record.attempts] == ["dead"]


def test_cancelling_a_workflow_ends_its_running_steps_attempt_cancelled(env):
    from anole_jobs import Workflow
    from tests.sampleapp.workflow_jobs import Step

    wf = Workflow("one")
    wf.add(Step("a", "ok"), name="a")
    created = env.jobs.enqueue_workflow(wf)
    now = env.clock()
    claim(env.store, now, worker="host-c:7")
    env.jobs.cancel_workflow(created.id)
    (entry,) = env.jobs.get(created.jobs["a"]).attempts
    assert (entry["worker"], entry["outcome"]) == ("host-c:7", "cancelled")


def _completed(env, worker: str) -> tuple[int, datetime]:
    """A job claimed by `worker`, whose handler started a second after the claim and that
    completed two seconds after it; with the claim's time."""
    job = env.jobs.enqueue(Work())
    now = env.clock()
    (claimed,) = claim(env.store, now, worker=worker)
    done = Finish(
        run=claimed.run,
        state="completed",
        at=now + timedelta(seconds=2),
        started_at=now + timedelta(seconds=1),
        outcome="completed",
    )
    assert env.store.finish([done]) == [True]
    return job.id, now


def test_a_completed_attempt_keeps_its_worker_start_end_and_outcome(env):
    job_id, now = _completed(env, "host-e:5")
    assert env.jobs.get(job_id).attempts == [
        {
            "attempt": 1,
            "worker": "host-e:5",
            "started_at": now + timedelta(seconds=1),
            "finished_at": now + timedelta(seconds=2),
            "outcome": "completed",
        }
    ]


def test_a_completed_job_retried_keeps_its_completed_attempt_before_the_next(env):
    job_id, now = _completed(env, "host-f:6")
    env.clock.advance(timedelta(minutes=1))
    env.jobs.retry(job_id)
    first = {
        "attempt": 1,
        "worker": "host-f:6",
        "started_at": now + timedelta(seconds=1),
        "finished_at": now + timedelta(seconds=2),
        "outcome": "completed",
    }
    assert env.jobs.get(job_id).attempts == [first]
    assert env.jobs.step().outcomes() == {job_id: "completed"}
    record = env.jobs.get(job_id)
    assert record.attempts[0] == first
    assert [(a["attempt"], a["outcome"]) for a in record.attempts] == [
        (1, "completed"),
        (2, "completed"),
    ]
    assert record.attempts[1]["finished_at"] == record.finished_at


def _write_attempts(env, job_id: int, entries: list[dict]) -> None:
    """Set the job's stored attempts behind the store's back (as older code wrote them)."""
    text = timeline.encode(entries)
    store = env.store
    if env.alias is not None:
        from django.db import connections

        cast = "::jsonb" if store.vendor == "postgresql" else ""
        with connections[env.alias].cursor() as cursor:
            cursor.execute(
                f"UPDATE {store.job_table} SET attempts = %s{cast} WHERE id = %s", [text, job_id]
            )
    elif env.name.startswith("redis"):
        keys = store.keys
        if env.name == "redis_cluster":
            keys = store.base_keys.for_job(job_id)
        store.client.hset(keys.job(job_id), "attempts", text)
    else:
        store._rows[job_id].attempts = entries


def test_a_job_completed_by_older_code_shows_its_completed_attempt_once(env):
    # Older code appended the completing attempt to the job's attempts at the finish.
    job_id, now = _completed(env, "host-g:7")
    entry = {
        "attempt": 1,
        "worker": "host-g:7",
        "started_at": (now + timedelta(seconds=1)).isoformat(),
        "finished_at": (now + timedelta(seconds=2)).isoformat(),
        "outcome": "completed",
    }
    failed = {**entry, "attempt": 0, "outcome": "failed"}  # and an attempt before it
    _write_attempts(env, job_id, [failed, entry])
    expected = [
        {
            **failed,
            "started_at": now + timedelta(seconds=1),
            "finished_at": now + timedelta(seconds=2),
        },
        {
            **entry,
            "started_at": now + timedelta(seconds=1),
            "finished_at": now + timedelta(seconds=2),
        },
    ]
    assert env.jobs.get(job_id).attempts == expected
    env.jobs.retry(job_id)  # a retry keeps it once too
    assert env.jobs.get(job_id).attempts == expected


def test_text_no_store_can_hold_is_replaced_in_logs_progress_and_errors_not_lost(env):
    """A NUL (PostgreSQL refuses it) or a lone surrogate (not UTF-8) in what a handler logs,
    reports or raises is replaced by U+FFFD: before, the SQL stores refused the write that
    ends the attempt, so its outcome (and those of its batch) was never saved."""

    def hostile(job, args):
        log.info("nul \x00 and lone \ud800 in a line")
        job.progress(1, 2, "progress \x00 \udfff")
        if job.attempt == 1:
            raise ValueError("error \x00 \ud800")

    HOOKS["hostile"] = hostile
    job = env.jobs.enqueue(Work(action="hostile"))
    assert env.jobs.step().outcomes() == {job.id: "retried"}
    record = env.jobs.get(job.id)
    assert [e["message"] for e in record.errors] == ["error \ufffd \ufffd"]
    assert "\x00" not in record.errors[0]["traceback"]
    assert [line["message"] for line in record.logs] == ["nul \ufffd and lone \ufffd in a line"]
    assert record.progress["message"] == "progress \ufffd \ufffd"
    env.clock.advance(3600)
    assert env.jobs.step().outcomes() == {job.id: "completed"}
