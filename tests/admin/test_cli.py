"""`manage.py jobs`, the command-line admin, on every store: ``--json`` prints exactly what
the matching route answers, tables for people, and the exit codes (1 for an unknown id or
name, 2 for bad arguments, never a traceback)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command
from django.test import Client

from tests.admin.support import MOUNT, configure_admin
from tests.sampleapp.jobs import Work
from tests.support.clients import staff_client

pytestmark = pytest.mark.django_db(databases=["default"])
ROOT = Path(__file__).resolve().parents[2]


def cli(*args: str) -> tuple[str, str]:
    out, err = StringIO(), StringIO()
    call_command("jobs", *args, stdout=out, stderr=err)
    return out.getvalue(), err.getvalue()


def cli_json(*args: str) -> list[object]:
    out, _ = cli(*args, "--json")
    return [json.loads(line) for line in out.splitlines() if line.strip()]


@pytest.fixture
def staff(env, users) -> Client:
    configure_admin(env)
    return staff_client(users["staff"])


def test_json_output_equals_the_routes_answer(env, staff):
    ids = [r.id for r in env.jobs.enqueue_many([Work(tag=str(i)) for i in range(3)])]
    failing = env.jobs.enqueue(Work(action="fail"), queue="mail").id
    env.jobs.step()
    env.jobs.pause("mail")
    pairs = [
        (("list",), ("GET", "jobs")),
        (("list", "--queue", "default", "--limit", "2"), ("GET", "jobs?queue=default&limit=2")),
        (("list", "--state", "retrying"), ("GET", "jobs?state=retrying")),
        (("list", "--after", str(ids[1])), ("GET", f"jobs?after={ids[1]}")),
        (("show", str(failing)), ("GET", f"jobs/{failing}")),
        (("counts",), ("GET", "counts")),
        (("queues",), ("GET", "queues")),
        (("cron",), ("GET", "cron")),
    ]
    for args, (method, url) in pairs:
        (printed,) = cli_json(*args)
        assert printed == staff.generic(method, MOUNT + url).json(), args
    # Writes: compare each with the route's answer for the same change on a twin job.
    for verb in ("cancel", "retry"):
        (printed,) = cli_json(verb, str(ids[0]))
        answered = staff.post(f"{MOUNT}jobs/{ids[0]}/{verb}").json()
        assert printed == answered, verb
    assert cli_json("pause", "default") == [staff.post(f"{MOUNT}queues/default/pause").json()]
    assert cli_json("resume", "default") == [staff.post(f"{MOUNT}queues/default/resume").json()]
    (triggered,) = cli_json("cron-trigger", "nightly")
    assert set(triggered) == {"id", "inserted"} and triggered["inserted"] is True
    assert cli_json("delete", str(ids[2])) == []  # the route answers 204, no body
    assert env.jobs.get(ids[2]) is None


def test_tables_for_people(env, staff):
    env.jobs.enqueue(Work(), delay=90)
    failing = env.jobs.enqueue(Work(action="fail"), queue="mail").id
    env.jobs.step()
    out, _ = cli("list")
    header, *rows = out.splitlines()
    assert header.split() == [
        "ID",
        "KIND",
        "QUEUE",
        "STATE",
        "ATTEMPT",
        "SCHEDULED",
        "FINISHED",
        "LAST",
        "ERROR",
    ]
    assert header.index("KIND") == rows[0].index("test.work")  # aligned columns
    assert "in 1m" in out  # relative times
    assert "ValueError: failed on attempt 1" in out
    shown, _ = cli("show", str(failing))
    assert "ValueError: failed on attempt 1" in shown and "attempt       1 of 3" in shown
    assert "mail" in cli("queues")[0] and "AVAILABLE" not in cli("counts")[0].splitlines()[1]
    assert cli("pause", "mail")[0].startswith("queue mail: paused")
    assert "nightly" in cli("cron")[0]


def test_long_errors_are_shortened_in_tables(env, staff):
    from tests.sampleapp import jobs as sample

    def long_failure(job, args):
        raise RuntimeError("x" * 500)

    sample.HOOKS["long"] = long_failure
    env.jobs.enqueue(Work(action="long"))
    env.jobs.step()
    out, _ = cli("list")
    assert "RuntimeError: xxx" in out and "x" * 100 not in out and "…" in out


def test_unknown_ids_and_names_exit_1_with_one_line(env, staff):
    known = env.jobs.enqueue(Work()).id
    with pytest.raises(CommandError, match="no job with id 999") as raised:
        cli("show", "999")
    assert raised.value.returncode == 1
    err = StringIO()
    with pytest.raises(SystemExit) as exited:
        call_command("jobs", "cancel", str(known), "998", "999", stdout=StringIO(), stderr=err)
    assert exited.value.code == 1
    assert err.getvalue().splitlines() == ["no job with id 998", "no job with id 999"]
    assert env.jobs.get(known).state == "cancelled"  # the known one was still cancelled
    with pytest.raises(CommandError, match="no cron entry named 'nope'") as raised:
        cli("cron-trigger", "nope")
    assert raised.value.returncode == 1


@pytest.mark.parametrize(
    "args",
    [
        ("show", "abc"),
        ("show", "0"),
        ("retry",),
        ("list", "--state", "finished"),
        ("list", "--limit", "-3"),
        ("frobnicate",),
        ("pause",),
    ],
)
def test_bad_arguments_exit_2_without_a_traceback(args):
    env = {**os.environ, "PYTHONPATH": str(ROOT), "DJANGO_SETTINGS_MODULE": "tests.settings"}
    done = subprocess.run(
        [sys.executable, "-m", "django", "jobs", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        cwd=ROOT,
    )
    assert done.returncode == 2, (args, done.stderr)
    assert "Traceback" not in done.stderr and done.stderr.strip()


def test_an_unknown_id_in_a_real_process_exits_1_with_one_line():
    env = {**os.environ, "PYTHONPATH": str(ROOT), "DJANGO_SETTINGS_MODULE": "tests.settings"}
    done = subprocess.run(
        [sys.executable, "-m", "django", "jobs", "show", "12345"],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        cwd=ROOT,
    )
    assert done.returncode == 1
    assert done.stderr.strip().splitlines() == ["CommandError: no job with id 12345"]


@pytest.mark.parametrize(
    "args",
    [
        ("list", "--settings", "tests.settings", "--json"),
        ("counts", "--settings=tests.settings", "--pythonpath", ".", "-v", "2", "--traceback"),
        ("--settings", "tests.settings", "queues", "--no-color", "--json"),
    ],
    ids=["list", "counts", "before-the-subcommand"],
)
def test_djangos_common_options_work_after_the_subcommand_too(args):
    # No DJANGO_SETTINGS_MODULE: the settings come from the option alone.
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    env.pop("DJANGO_SETTINGS_MODULE", None)
    done = subprocess.run(
        [sys.executable, "-m", "django", "jobs", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        cwd=ROOT,
    )
    assert done.returncode == 0, done.stderr
    assert "unrecognized arguments" not in done.stderr
