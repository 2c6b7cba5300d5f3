"""Security properties of the package itself.

- Nothing in `anole_jobs` can turn stored data into code: no pickle/marshal/shelve, no
  `eval`/`exec`/`compile`/`__import__` (but for one reviewed `exec` that builds a record's
  `__init__` from its own field names at import, as `dataclasses` does), and every dynamic
  import (`import_string`, `import_module`) is one of a short list, each importing a name
  from settings or a constant — never from a job's payload. A new one fails this test until
  it is reviewed and listed.
- A stored job whose kind names `os.system` is an unknown kind: it waits, and runs nothing.
- Redis keys of two `KEY_PREFIX`es never collide, even when one prefix starts with the other.
"""

from __future__ import annotations

import ast
import sys
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from anole_jobs.core import ListFilter
from anole_jobs.stores.base import NewJob

PACKAGE = Path(__file__).resolve().parents[2] / "anole_jobs"
FORBIDDEN_MODULES = {"pickle", "cPickle", "_pickle", "marshal", "shelve", "dill", "cloudpickle"}
FORBIDDEN_CALLS = {"eval", "exec", "compile", "__import__"}
DYNAMIC_IMPORTS = {"import_string", "import_module"}
#: Every reviewed dynamic import: file -> why what it imports never comes from a payload.
REVIEWED_IMPORTS = {
    "__init__.py": "lazy public names: a module path from a constant table",
    "conf.py": "CLOCK and ADMIN_PERMISSION: dotted paths from settings",
    "maintenance/cron.py": "a CRON entry's job class: a dotted path from settings",
    "schedules.py": "a CRON entry's job class: a dotted path from settings",
    "operations/permissions.py": "ADMIN_PERMISSION: a dotted path from settings",
    "apps.py": "anole_jobs.tasks.calls, a constant, when TASKS names the backend",
    "tasks/calls.py": (
        "a django.tasks job's module path comes from its payload, as the tasks API requires: "
        "only modules of installed apps (or already imported) are imported, and only a Task "
        "whose module_path is that path runs (tests/contract/test_tasks_backend.py)"
    ),
    "stores/redis/__init__.py": "the CACHES entry's BACKEND: a dotted path from settings",
    "tasks/compat.py": "django.tasks or its backport: module names from constants",
    "reporting.py": "ERROR_REPORTER: a dotted path from settings",
}


#: Every reviewed `exec`: file -> why its source never holds anything from a payload.
REVIEWED_EXEC = {
    "leaninit.py": (
        "a frozen record's __init__, its source made at import from the dataclass's own field "
        "names (as dataclasses itself makes it); nothing stored or received reaches it"
    ),
}


def python_files() -> list[Path]:
    return sorted(p for p in PACKAGE.rglob("*.py") if "migrations" not in p.parts)


def _called_name(node: ast.Call) -> str | None:
    if isinstance(node.func, ast.Name):
        return node.func.id
    if isinstance(node.func, ast.Attribute):
        return node.func.attr
    return None


def findings(path: Path) -> tuple[list[str], list[str]]:
    """(forbidden uses, dynamic imports) in one file, as ``file:line what``."""
    tree = ast.parse(path.read_text(), filename=str(path))
    where = path.relative_to(PACKAGE).as_posix()
    forbidden, dynamic = [], []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names = [alias.name.split(".")[0] for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            names = [(node.module or "").split(".")[0]]
        else:
            names = []
        forbidden += [f"{where}:{node.lineno} imports {n}" for n in names if n in FORBIDDEN_MODULES]
        if isinstance(node, ast.Call):
            name = _called_name(node)
            builtin = isinstance(node.func, ast.Name) or name != "compile"  # not re.compile
            if name in FORBIDDEN_CALLS and builtin:
                forbidden.append(f"{where}:{node.lineno} calls {name}()")
            if name in DYNAMIC_IMPORTS:
                dynamic.append(f"{where}:{node.lineno} calls {name}()")
    return forbidden, dynamic


def test_the_package_never_unpickles_evaluates_or_imports_from_payloads() -> None:
    forbidden: list[str] = []
    unreviewed: list[str] = []
    for path in python_files():
        bad, dynamic = findings(path)
        forbidden += [
            b for b in bad if not (b.endswith(" calls exec()") and b.split(":")[0] in REVIEWED_EXEC)
        ]
        unreviewed += [d for d in dynamic if d.split(":")[0] not in REVIEWED_IMPORTS]
    assert not forbidden, "code that can run stored data:\n" + "\n".join(forbidden)
    assert not unreviewed, (
        "dynamic imports not reviewed (list them in REVIEWED_IMPORTS with why their name "
        "never comes from a job's payload):\n" + "\n".join(unreviewed)
    )


def test_the_scan_finds_what_it_looks_for(tmp_path: Path, monkeypatch: Any) -> None:
    sample = tmp_path / "sample.py"
    sample.write_text(
        "import pickle\nfrom marshal import loads\n"
        "from django.utils.module_loading import import_string\n"
        "def run(row):\n    eval(row['code'])\n    return import_string(row['kind'])\n"
    )
    monkeypatch.setattr(sys.modules[__name__], "PACKAGE", tmp_path)
    bad, dynamic = findings(sample)
    assert bad == [
        "sample.py:1 imports pickle",
        "sample.py:2 imports marshal",
        "sample.py:5 calls eval()",
    ]
    assert dynamic == ["sample.py:6 calls import_string()"]


def test_a_stored_kind_naming_os_system_is_an_unknown_kind(env: Any, tmp_path: Path) -> None:
    target = tmp_path / "pwned"
    now = env.clock()
    (inserted,) = env.store.insert(
        [
            NewJob(
                kind="os.system",
                queue="default",
                args={"command": f"touch {target}"},
                meta={},
                priority=0,
                max_attempts=3,
                state="available",
                scheduled_at=now,
                created_at=now,
            )
        ]
    )
    for _ in range(3):
        report = env.jobs.step()
        assert inserted.id not in report.outcomes()
        env.clock.advance(timedelta(minutes=1))
    record = env.jobs.get(inserted.id)
    assert (record.state, record.attempt) == ("available", 0)
    assert not target.exists()


@pytest.mark.needs("redis")
@pytest.mark.parametrize(
    "first,second",
    [("app:", "app:x:"), ("a", "ab"), ("jobs:", "jobs:jobs:"), ("anole:", "anole:1:")],
)
def test_redis_keys_never_collide_across_key_prefixes(first: str, second: str) -> None:
    """Two apps on one Redis, one prefix a prefix of the other: neither sees the other's
    jobs, claims them, counts them or deletes them."""
    import uuid

    import redis
    from django.conf import settings as django_settings

    from anole_jobs.stores.redis.store import RedisStore
    from tests.contract.redis_support import T0, claim, delete_keys, new_job

    base = f"anole-test:{uuid.uuid4().hex[:8]}:"
    client = redis.Redis.from_url(django_settings.REDIS_TEST_URL)
    one = RedisStore(client, key_prefix=base + first)
    two = RedisStore(client, key_prefix=base + second)
    try:
        one_ids = [r.id for r in one.insert([new_job(kind="k", queue="q") for _ in range(3)])]
        two_ids = [r.id for r in two.insert([new_job(kind="k", queue="q") for _ in range(2)])]
        assert one.counts() == {"q": {"available": 3}}
        assert two.counts() == {"q": {"available": 2}}
        claimed = claim(two, "q", limit=10)
        assert sorted(c.record.id for c in claimed) == sorted(two_ids)
        assert one.counts() == {"q": {"available": 3}}
        assert len(one.list(ListFilter())) == 3
        assert one.prune(now=T0 + timedelta(days=365), horizons={"completed": timedelta(0)}) == 0
        for job_id in two_ids:
            two.delete(job_id)
        assert [one.get(job_id) is not None for job_id in one_ids] == [True] * 3
        assert [c.record.id for c in claim(one, "q", limit=10)] == one_ids
    finally:
        one.close()
        two.close()
        delete_keys(base)
