"""Runs every ```python block of one Markdown page, so a documented sample can never be wrong.

    python -m tests.docs.harness docs/quickstart.md [README.md ...]

Each page runs in a process of its own (tests/docs/test_docs.py starts one per page), so the
kinds a page declares never meet the test suite's kinds or another page's: the kind registry
is process-wide. Inside that process the page gets a small Django project of its own, in a
temporary directory, and its blocks run **in document order**. A block is one of three sorts,
told apart by its first line:

1. **A module block** starts with a comment naming a file inside an app, e.g.
   ``# myapp/jobs.py`` or ``# shop/tests/test_receipts.py``. Before Django starts, every module
   block of the page is written to that path in the page's project, and its top-level package
   (``myapp``, ``shop``) is added to ``INSTALLED_APPS``. So a page can define its own models
   (``# myapp/models.py``: tables are created with ``migrate --run-syncdb``), kinds and handlers
   (``# myapp/jobs.py``: found by anole_jobs' autodiscovery, as in a real project) and
   services. When the block's turn comes its module is imported. Modules whose file name
   starts with ``test`` are **run with pytest** (pytest-django, the page's settings) in one
   subprocess after the page's last block: every test must pass, and there must be one.
   Two blocks with the same path: the later one replaces the earlier.
2. **A settings block** starts with ``# settings.py`` (or ``# <dir>/settings.py``), or
   assigns ``ANOLE_JOBS``, ``DATABASES``, ``CACHES`` or ``INSTALLED_APPS`` at top level. It
   runs in a fresh namespace (``BASE_DIR`` is defined, as in a ``startproject`` settings
   file). Every ``ANOLE_JOBS`` it defines is then put through the system checks that
   ``manage.py check`` runs, with the block's own ``CACHES`` (and ``DATABASES``) in effect:
   any ``anole_jobs.E…`` error fails the page, so a misspelt key or a bad value in the docs
   is caught. Settings blocks are checked, not applied.
3. **Any other block** runs in the page's namespace, one dict shared by the page's blocks, so
   a block may use what an earlier block of the same page defined.

The page's project has the settings of a test run: ``ANOLE_JOBS = {"STORE": "memory",
"RUN": "manual", "CLOCK": <a FakeClock>, "QUEUES": default, mail, reports}``, the SQLite file
database as ``default`` (``django.contrib.auth`` and ``contenttypes`` installed), and the
locmem email backend. A page that needs the database store says so anywhere in its Markdown
with an HTML comment (invisible on the site)::

    <!-- docs-harness: store=database -->

After the page's last block the harness **runs the page's jobs to their end** (``drain``:
retries and delays included, the clock moving to each) and fails the page when one is left
waiting or died. A page that shows a failure on purpose names the kind in
``<!-- docs-harness: dead=kind,kind -->``; one whose kinds have no handler on purpose (it
shows enqueueing only) in ``<!-- docs-harness: waiting=kind,kind -->``.

Blocks fenced as ``python``, ``py`` or ``python3`` all run. Shell commands belong in
```console blocks, other files in ```ini, ```yaml, ```sql, ```text blocks: those never run.
"""

from __future__ import annotations

import ast
import dataclasses
import importlib
import os
import re
import subprocess
import sys
import tempfile
import textwrap
import traceback
import types
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
PYTHON_FENCES = ("python", "py", "python3")
FENCE = re.compile(r"^(?P<indent>[ \t]*)(?P<fence>`{3,}|~{3,})[ \t]*\{?\.?(?P<lang>[\w+-]*)")
MODULE_HEADER = re.compile(r"^#\s*(?P<path>(?:[A-Za-z_]\w*/)+[A-Za-z_]\w*\.py)\b")
SETTINGS_HEADER = re.compile(r"^#\s*(?:[A-Za-z_]\w*/)*settings\.py\b")
SETTINGS_NAMES = ("ANOLE_JOBS", "DATABASES", "CACHES", "INSTALLED_APPS")
#: Steps `drain` may take after the page's blocks: a job that retries all its attempts takes
#: one step per attempt.
MAX_DRAIN_STEPS = 500
LIST_PAGE = 1000
DIRECTIVE = re.compile(r"<!--\s*docs-harness:\s*(?P<body>.*?)\s*-->")


@dataclasses.dataclass(frozen=True)
class Block:
    page: Path
    line: int  # 1-based line of the block's first code line
    code: str

    @property
    def where(self) -> str:
        return f"{self.page.name}:{self.line}"

    @property
    def module_path(self) -> str | None:
        match = MODULE_HEADER.match(self.code)
        return match["path"] if match and not SETTINGS_HEADER.match(self.code) else None

    @property
    def is_settings(self) -> bool:
        if SETTINGS_HEADER.match(self.code):
            return True
        try:
            tree = ast.parse(self.code)
        except SyntaxError:
            return False
        return any(
            isinstance(node, ast.Assign)
            and any(isinstance(t, ast.Name) and t.id in SETTINGS_NAMES for t in node.targets)
            for node in tree.body
        )


class DocsError(AssertionError):
    """A block that failed; the message names the page, the line and what went wrong."""


def python_blocks(page: Path) -> list[Block]:
    """Every python-fenced block of `page`, dedented, with the line it starts on."""
    blocks: list[Block] = []
    lines = page.read_text(encoding="utf-8").splitlines()
    i = 0
    while i < len(lines):
        match = FENCE.match(lines[i])
        if not match:
            i += 1
            continue
        fence, indent = match["fence"], match["indent"]
        body: list[str] = []
        j = i + 1
        while j < len(lines) and not lines[j].strip().startswith(fence):
            body.append(lines[j][len(indent) :] if lines[j].startswith(indent) else lines[j])
            j += 1
        if match["lang"] in PYTHON_FENCES:
            blocks.append(Block(page, i + 2, textwrap.dedent("\n".join(body)) + "\n"))
        i = j + 1
    return blocks


def directives(page: Path) -> dict[str, str]:
    found: dict[str, str] = {}
    for match in DIRECTIVE.finditer(page.read_text(encoding="utf-8")):
        for item in match["body"].split():
            key, _, value = item.partition("=")
            found[key] = value
    if found.get("store", "memory") not in ("memory", "database"):
        raise DocsError(f"{page.name}: docs-harness store= must be memory or database")
    return found


SETTINGS_TEMPLATE = """\
from pathlib import Path

BASE_DIR = Path(__file__).resolve().parent
SECRET_KEY = "docs-harness"
USE_TZ = True
TIME_ZONE = "UTC"
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"
INSTALLED_APPS = [
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "anole_jobs",
    *{apps!r},
]
DATABASES = {{
    "default": {{"ENGINE": "django.db.backends.sqlite3", "NAME": str(BASE_DIR / "db.sqlite3")}}
}}
EMAIL_BACKEND = "django.core.mail.backends.locmem.EmailBackend"
ANOLE_JOBS = {{
    "STORE": {store!r},
    "RUN": "manual",
    "CLOCK": "docs_clock.CLOCK",
    "QUEUES": {{"default": {{}}, "mail": {{}}, "reports": {{}}}},
}}
# Django's tasks framework on anole_jobs (docs/tasks.md), with the queues the pages use.
TASKS = {{
    "default": {{
        "BACKEND": "anole_jobs.tasks.AnoleBackend",
        "QUEUES": ["default", "mail", "reports"],
    }}
}}
import django

if django.VERSION < (6,):
    INSTALLED_APPS.append("django_tasks")  # the backport is an app of its own
"""


class PageProject:
    """The temporary Django project one page runs in."""

    def __init__(self, page: Path, root: Path) -> None:
        self.page = page
        self.root = root
        self.blocks = python_blocks(page)
        self.options = directives(page)

    def write(self) -> None:
        apps: list[str] = []
        for block in self.blocks:
            path = block.module_path
            if path is None:
                continue
            target = self.root / path
            for parent in reversed(target.relative_to(self.root).parents[:-1]):
                package = self.root / parent
                package.mkdir(exist_ok=True)
                (package / "__init__.py").touch()
            target.write_text(block.code, encoding="utf-8")
            app = path.split("/")[0]
            if app not in apps:
                apps.append(app)
        store = {"database": "default"} if self.options.get("store") == "database" else "memory"
        (self.root / "docs_settings.py").write_text(
            SETTINGS_TEMPLATE.format(apps=apps, store=store), encoding="utf-8"
        )
        (self.root / "docs_clock.py").write_text(
            "from anole_jobs.testing import FakeClock\n\nCLOCK = FakeClock()\n", encoding="utf-8"
        )
        (self.root / "pytest.ini").write_text(
            "[pytest]\nDJANGO_SETTINGS_MODULE = docs_settings\naddopts = -p no:cacheprovider\n",
            encoding="utf-8",
        )

    def start_django(self) -> None:
        sys.path.insert(0, str(self.root))
        os.environ["DJANGO_SETTINGS_MODULE"] = "docs_settings"
        import django
        from django.core.management import call_command

        django.setup()
        call_command("migrate", run_syncdb=True, verbosity=0, interactive=False)

    def run(self) -> int:
        # A real module, so that dataclasses and type hints defined by the page resolve.
        module = types.ModuleType("docs_page")
        sys.modules["docs_page"] = module
        namespace = module.__dict__
        test_modules: list[Block] = []
        for block in self.blocks:
            try:
                if block.module_path is not None:
                    self.run_module(block)
                    if Path(block.module_path).name.startswith("test"):
                        test_modules.append(block)
                elif block.is_settings:
                    check_settings_block(block, self.root)
                else:
                    exec(compile(block.code, block.where, "exec"), namespace)
            except DocsError:
                raise
            except BaseException as exc:
                raise DocsError(
                    f"{block.where}: the block raised {type(exc).__name__}: {exc}\n"
                    + numbered(block.code)
                    + "".join(traceback.format_exception(exc))
                ) from exc
        self.run_jobs_to_the_end()
        if test_modules:
            run_pytest(test_modules, self.root)
        return len(self.blocks)

    def run_jobs_to_the_end(self) -> None:
        """Run every job the page's samples left, as workers would (retries and delays
        included: the clock moves to each), and fail the page when one could not finish —
        still waiting, or dead from a failure the page did not say to expect (its kind
        named in ``<!-- docs-harness: dead=kind,kind -->``). A sample that only enqueues is
        thereby run to its end, too; a page whose kinds have no handler on purpose (it shows
        enqueueing only) names them in ``<!-- docs-harness: waiting=kind,kind -->``."""
        from anole_jobs import jobs
        from anole_jobs.core import FINAL_STATES
        from anole_jobs.testing import drain

        try:
            drain(max_steps=MAX_DRAIN_STEPS)
        except AssertionError as exc:
            raise DocsError(f"{self.page.name}: the page's jobs never finished: {exc}") from exc
        expected_dead = {kind for kind in self.options.get("dead", "").split(",") if kind}
        may_wait = {kind for kind in self.options.get("waiting", "").split(",") if kind}
        problems = []
        for record in all_jobs(jobs):
            if record.state not in FINAL_STATES and record.kind not in may_wait:
                problems.append(f"job {record.id} ({record.kind}) still {record.state}")
            elif record.state == "dead" and record.kind not in expected_dead:
                last = record.errors[-1] if record.errors else {}
                problems.append(
                    f"job {record.id} ({record.kind}) dead after {record.attempt} attempt(s): "
                    f"{last.get('type')}: {last.get('message')}"
                )
        if problems:
            raise DocsError(
                f"{self.page.name}: run to the end, the page's samples leave jobs that did not "
                "finish (a kind expected to die goes in <!-- docs-harness: dead=KIND -->, one "
                "without a handler on purpose in <!-- docs-harness: waiting=KIND -->):\n"
                + "".join(f"  {problem}\n" for problem in problems)
            )

    def run_module(self, block: Block) -> None:
        path = block.module_path
        assert path is not None
        name = path.removesuffix(".py").replace("/", ".")
        importlib.import_module(name)


def all_jobs(jobs: Any) -> Iterator[Any]:
    after = None
    while True:
        page = jobs.list(limit=LIST_PAGE, after=after)
        yield from page
        if len(page) < LIST_PAGE:
            return
        after = page[-1].id


def numbered(code: str) -> str:
    return "".join(f"{n:4} | {line}\n" for n, line in enumerate(code.splitlines(), 1))


def check_settings_block(block: Block, root: Path) -> None:
    """Run the block as a settings file and put its ANOLE_JOBS through the system checks."""
    from django.core import checks
    from django.test import override_settings

    namespace: dict[str, object] = {"__name__": "settings", "BASE_DIR": root}
    exec(compile(block.code, block.where, "exec"), namespace)
    if "ANOLE_JOBS" not in namespace:
        return
    overrides = {"ANOLE_JOBS": namespace["ANOLE_JOBS"]}
    if "CACHES" in namespace:
        overrides["CACHES"] = namespace["CACHES"]
    if "DATABASES" in namespace:
        overrides["DATABASES"] = namespace["DATABASES"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # "overriding DATABASES can lead to unexpected behavior"
        with override_settings(**overrides):
            found = [
                message
                for message in checks.run_checks(tags=["anole_jobs"])
                if message.id and message.id.startswith("anole_jobs.") and message.is_serious()
            ]
    if found:
        raise DocsError(
            f"{block.where}: manage.py check rejects this ANOLE_JOBS:\n"
            + "".join(f"  {message}\n" for message in found)
            + numbered(block.code)
        )


def run_pytest(blocks: list[Block], root: Path) -> None:
    """One pytest run over every test module of the page (one Django start-up, not several)."""
    paths = [block.module_path or "" for block in blocks]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(root), str(REPO)])}
    env.pop("PYTEST_ADDOPTS", None)
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-rN", *paths],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    if result.returncode != 0 or " passed" not in result.stdout:
        where = ", ".join(f"{path} ({block.where})" for path, block in zip(paths, blocks))
        raise DocsError(
            f"pytest on the page's test modules {where} exited {result.returncode} "
            "(every test must pass, and there must be at least one):\n"
            + result.stdout[-6000:]
            + result.stderr[-3000:]
        )


def run_page(page: Path) -> int:
    """Run `page`'s blocks in a fresh temporary project; returns how many blocks ran."""
    project_root = Path(tempfile.mkdtemp(prefix=f"anole-docs-{page.stem}-"))
    project = PageProject(page, project_root)
    if not project.blocks:
        return 0
    project.write()
    os.chdir(project_root)
    try:
        project.start_django()
    except Exception as exc:
        raise DocsError(
            f"{page.name}: Django did not start with the page's modules "
            f"({', '.join(b.module_path or '' for b in project.blocks if b.module_path)}): "
            f"{type(exc).__name__}: {exc}\n" + "".join(traceback.format_exception(exc))
        ) from exc
    return project.run()


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print("usage: python -m tests.docs.harness PAGE.md", file=sys.stderr)
        return 2
    page = Path(argv[0]).resolve()
    try:
        count = run_page(page)
    except DocsError as exc:
        print(exc, file=sys.stderr)
        return 1
    print(f"{page.name}: {count} python block(s) ran")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
