"""The jobs table in the Django admin (docs/admin.md): shown for the database stores only,
read-only, filters and search, readable errors and JSON, and actions that go through the facade.

Runs on every store: on memory and Redis the page is hidden and refused.
"""

from __future__ import annotations

import os
import subprocess
import sys
from datetime import timedelta
from pathlib import Path

import pytest
from django.contrib.messages import get_messages
from django.test import Client

from anole_jobs.stores.base import Finish
from tests.admin.support import configure_admin
from tests.sampleapp.jobs import Work
from tests.support.clients import logged_in, staff_client

pytestmark = pytest.mark.django_db(databases=["default"])

CHANGELIST = "/admin/anole_jobs/job/"
ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def admin_client(env, users) -> Client:
    configure_admin(env)
    return staff_client(users["staff"])


def sql_only(env):
    if env.alias is None:
        pytest.skip("the Django admin shows the database store's table")


def act(client, action, ids):
    return client.post(
        CHANGELIST, {"action": action, "_selected_action": [str(i) for i in ids]}, follow=True
    )


def notes(response) -> list[str]:
    return [str(m) for m in get_messages(response.wsgi_request)]


def test_the_table_is_hidden_without_a_database_store(env, admin_client):
    if env.alias is not None:
        assert admin_client.get("/admin/").content.count(b"/admin/anole_jobs/job/") >= 1
        return
    assert b"/admin/anole_jobs/job/" not in admin_client.get("/admin/").content
    assert admin_client.get(CHANGELIST).status_code == 403


def test_the_changelist_filters_and_searches(env, admin_client):
    sql_only(env)
    first = env.jobs.enqueue(Work(tag="a")).id
    mail = env.jobs.enqueue(Work(tag="b"), queue="mail").id
    page = admin_client.get(CHANGELIST)
    assert page.status_code == 200
    assert [row.pk for row in page.context["cl"].result_list] == [mail, first]
    for query, expected in (
        ({"queue": "mail"}, [mail]),
        ({"state": "available"}, [mail, first]),
        ({"state": "dead"}, []),
        ({"kind": "test.work"}, [mail, first]),
        ({"q": str(first)}, [first]),
        ({"q": "work"}, [mail, first]),
        ({"q": "nothing-like-it"}, []),
    ):
        response = admin_client.get(CHANGELIST, query)
        assert response.status_code == 200, query
        assert [row.pk for row in response.context["cl"].result_list] == expected, query


def test_the_change_page_shows_errors_and_json_read_only(env, admin_client):
    sql_only(env)
    job = env.jobs.enqueue(Work(action="fail", tag="<b>x</b>"), meta={"origin": "admin test"})
    env.jobs.step()
    page = admin_client.get(f"{CHANGELIST}{job.id}/change/")
    assert page.status_code == 200
    html = page.content.decode()
    assert "ValueError" in html and "failed on attempt 1" in html
    assert "Traceback" in html or "raise ValueError" in html
    assert "&quot;origin&quot;: &quot;admin test&quot;" in html  # meta, indented JSON
    assert "&lt;b&gt;x&lt;/b&gt;" in html and "<b>x</b>" not in html  # escaped
    assert 'name="_save"' not in html  # nothing to save: read-only
    assert (
        admin_client.post(f"{CHANGELIST}{job.id}/change/", {"state": "completed"}).status_code
        == 403
    )
    assert admin_client.get(f"{CHANGELIST}add/").status_code == 403
    assert env.jobs.get(job.id).state == "retrying"


def test_the_actions_go_through_the_facade_and_say_how_many_changed(env, admin_client):
    sql_only(env)
    running = env.jobs.enqueue(Work()).id
    waiting = env.jobs.enqueue(Work()).id
    done = env.jobs.enqueue(Work(), queue="mail").id
    (claimed,) = env.store.claim(
        "default",
        kinds=None,
        limit=1,
        now=env.clock(),
        lease_until=env.clock() + timedelta(seconds=30),
        worker="w",
    )
    assert claimed.record.id == running
    env.jobs.cancel(done)

    response = act(admin_client, "cancel_jobs", [running, waiting, done])
    assert response.status_code == 200
    assert notes(response) == ["Cancelled 2 jobs; 1 left as it was (already finished)."]
    # Fenced: the worker that held the job can no longer complete it.
    assert env.store.finish([Finish(run=claimed.run, state="completed", at=env.clock())]) == [False]

    response = act(admin_client, "retry_jobs", [running, done])
    assert notes(response) == ["Retried 2 jobs."]
    assert {env.jobs.get(i).state for i in (running, done)} == {"available"}

    response = act(admin_client, "delete_jobs", [waiting])
    assert notes(response) == ["Deleted 1 job."]
    assert env.jobs.get(waiting) is None
    assert "delete_selected" not in str(admin_client.get(CHANGELIST).content)


def test_a_user_without_permission_sees_nothing(env, users):
    sql_only(env)
    configure_admin(env)
    users["plain"].is_staff = True  # staff, but ADMIN_PERMISSION says no and no model perms
    users["plain"].save()
    env.configure(ADMIN_PERMISSION="tests.admin.support.token_permission")
    client = logged_in(users["plain"])
    assert client.get(CHANGELIST).status_code == 403


def test_no_registration_and_no_import_error_without_django_admin(tmp_path):
    (tmp_path / "noadmin_settings.py").write_text(
        "SECRET_KEY = 'x'\nUSE_TZ = True\n"
        "INSTALLED_APPS = ['django.contrib.contenttypes', 'django.contrib.auth', 'anole_jobs']\n"
        "DATABASES = {'default': {'ENGINE': 'django.db.backends.sqlite3', 'NAME': ':memory:'}}\n"
        "ROOT_URLCONF = 'anole_jobs.urls'\n"
    )
    env = {
        **os.environ,
        "PYTHONPATH": f"{tmp_path}{os.pathsep}{ROOT}",
        "DJANGO_SETTINGS_MODULE": "noadmin_settings",
    }
    script = (
        "import django; django.setup()\n"
        "import anole_jobs.admin as a\n"
        "assert not hasattr(a, 'JobAdmin'), 'registered without django.contrib.admin'\n"
        "from django.core.management import call_command\n"
        "call_command('check')\n"
        "print('ok')\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().endswith("ok")
