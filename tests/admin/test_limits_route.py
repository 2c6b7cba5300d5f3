"""`POST /queues/<name>/limits` and the limits and held jobs `GET /queues` shows, on every
store (docs/limits.md)."""

from __future__ import annotations

import pytest

from tests.admin.support import MOUNT
from tests.sampleapp.jobs import Work

pytestmark = pytest.mark.django_db(databases=["default"])

JSON = "application/json"


def post_limits(staff, name, body):
    return staff.post(f"{MOUNT}queues/{name}/limits", data=body, content_type=JSON)


def default_queue(staff):
    (found,) = [q for q in staff.get(f"{MOUNT}queues").json()["queues"] if q["name"] == "default"]
    return found


def test_limits_set_at_runtime_show_with_what_they_hold(env, staff):
    env.jobs.enqueue_many([Work() for _ in range(5)])
    answer = post_limits(staff, "default", {"global_concurrency": 2, "rate_limit": "10/m"})
    assert answer.status_code == 200
    assert answer.json()["limits"] == {
        "global_concurrency": 2,
        "rate_limit": "10/m",
        "partition": None,
        "source": "runtime",
    }
    assert answer.json()["held"] == 3
    assert len(env.jobs.step().runs) == 2
    # Omitted fields stay; null returns one to the settings.
    changed = post_limits(staff, "default", {"rate_limit": None}).json()["limits"]
    assert changed["global_concurrency"] == 2 and changed["rate_limit"] is None
    cleared = post_limits(staff, "default", {"clear": True}).json()
    assert cleared["limits"]["source"] == "settings" and cleared["held"] == 0
    assert len(env.jobs.step().runs) == 3
    assert default_queue(staff)["limits"]["global_concurrency"] is None


def test_limits_from_the_settings_show_with_their_partition(env, staff):
    env.configure(QUEUES={"default": {"global_concurrency": 1, "partition": "tag"}, "mail": {}})
    env.jobs.enqueue_many([Work(tag="a"), Work(tag="a"), Work(tag="b")])
    queue = default_queue(staff)
    assert queue["limits"] == {
        "global_concurrency": 1,
        "rate_limit": None,
        "partition": ["tag"],
        "source": "settings",
    }
    assert queue["held"] == 1
    assert len(env.jobs.step().runs) == 2


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"global_concurrency": 0}, "global_concurrency"),
        ({"global_concurrency": "5"}, "global_concurrency"),
        ({"rate_limit": "5/d"}, "rate_limit"),
        ({"rate_limit": [0, 1]}, "rate_limit"),
        ({"speed": 1}, "speed"),
        ({"clear": "yes"}, "clear"),
        ([1], "JSON object"),
    ],
)
def test_bad_limits_are_refused_with_400(env, staff, body, field):
    answer = post_limits(staff, "default", body)
    assert answer.status_code == 400 and field in answer.json()["message"]


def test_an_unknown_queue_is_refused_unless_created(env, staff):
    missing = post_limits(staff, "defualt", {"global_concurrency": 1})
    assert missing.status_code == 404 and "default" in missing.json()["message"]
    made = post_limits(staff, "new", {"global_concurrency": 1, "create": True})
    assert made.status_code == 200 and made.json()["limits"]["source"] == "runtime"


def cli(*args):
    from io import StringIO

    from django.core.management import call_command

    out = StringIO()
    call_command("jobs", *args, stdout=out, stderr=StringIO())
    return out.getvalue().strip()


def test_the_cli_shows_sets_and_clears_a_queues_limits(env):
    env.jobs.enqueue_many([Work() for _ in range(3)])
    assert cli("limits", "default") == (
        "queue default: global_concurrency none, rate_limit none (from the settings); 0 job(s) held"
    )
    assert cli("limits", "default", "--concurrency", "1", "--rate", "30/m") == (
        "queue default: global_concurrency 1, rate_limit 30/m (from the runtime); 2 job(s) held"
    )
    assert cli("limits", "default", "--concurrency", "1").endswith("; nothing changed")
    assert env.jobs.service.store.runtime_limits()["default"].global_concurrency == 1
    assert "(from the settings); 0 job(s) held" in cli("limits", "default", "--clear")


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("--concurrency", "0"), "positive int"),
        (("--rate", "3/d"), '"N/s", "N/m" or "N/h"'),
        (("--clear", "--rate", "3/s"), "give it alone"),
    ],
)
def test_the_cli_refuses_bad_limits_in_one_line(env, args, message):
    from django.core.management import CommandError

    with pytest.raises(CommandError, match=message.replace("/", "/")):
        cli("limits", "default", *args)
