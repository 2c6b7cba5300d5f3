"""Regenerate the dashboard's screenshots in docs/screenshots/: ``python -m tools.screenshots``
(or ``make screenshots``).

It builds a throwaway site (`tools.screenshots_site`: SQLite in a temporary folder), writes an
hour of finished runs through the store (``screenshots_history``: what the statistics page
charts), starts a real ``runjobs`` process and ``runserver``, seeds jobs that complete, fail,
retry and run long and a small workflow, then photographs every page of `PAGES` with Chromium
(Playwright) at a desktop and a phone width: ``<name>.png`` and ``<name>-phone.png``. The
worker reports the fixed host label ``worker-1`` (``ANOLE_JOBS_HOST``), so no name of this
machine and no temporary path shows.

To add a page, add a `Page` to `PAGES`: its file name, its path under the dashboard (``{name}``
fields are filled from what the seed command prints: ``failed``, ``completed``, ``running``,
``workflow``),
and a text the page shows once it is ready. The browser test of every page
(tests/dashboard/test_every_page_browser.py) visits the same list.

Options: ``--out DIR`` (default docs/screenshots), ``--chromium PATH`` (default
/usr/bin/chromium, or ANOLE_TEST_CHROMIUM).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_OUT = ROOT / "docs" / "screenshots"
CHROMIUM = os.environ.get("ANOLE_TEST_CHROMIUM", "/usr/bin/chromium")
CHROMIUM_FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
DASHBOARD = "/ops/jobs/dashboard/"
HOST_LABEL = "worker-1"
DESKTOP = {"width": 1280, "height": 800}
PHONE = {"width": 390, "height": 844}


@dataclass(frozen=True)
class Page:
    """One dashboard page to photograph: `name` is the file name (without ``.png``), `path`
    its path under the dashboard, `ready` a text it shows once loaded."""

    name: str
    path: str
    ready: str


PAGES: tuple[Page, ...] = (
    Page("queues", "", "Jobs by state"),
    Page("jobs", "jobs/?state=dead", "billing.charge"),
    Page("job-failed", "jobs/{failed}/", "card declined for invoice 1042"),
    Page("job-completed", "jobs/{completed}/", "entries_synced"),
    Page("jobs-search", "jobs/?kind_prefix=billing.&error=declined", "Searched jobs"),
    Page("bulk-retry", "bulk/retry?state=dead&kind_prefix=billing.", "matching jobs?"),
    Page("workflow", "workflows/{workflow}/", "import feed 42"),
    Page("cron", "cron/", "nightly-report"),
    Page("stats", "stats/", "Run time"),
    Page("stats-month", "stats/?period=month&queue=reports", "the last 30 days:"),
    Page("workers", "workers/", "media.transcode"),
    Page("errors", "errors/", "card declined for invoice N"),
    Page("kinds", "kinds/", "media.transcode"),
    Page("queue", "queues/mail/", "Change the limits"),
    Page("workflows", "workflows/", "import feed 42"),
    Page("confirm-delete", "jobs/{failed}/delete", "cannot be undone"),
    Page("audit", "audit/", "queue reports"),
)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclass
class Site:
    """The running site: its base URL, the staff session and the seeded ids."""

    url: str
    session: str
    ids: dict[str, Any]

    def page_url(self, page: Page) -> str:
        return self.url + DASHBOARD + page.path.format(**self.ids)


def _env(folder: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("DJANGO_")}
    env.update(
        DJANGO_SETTINGS_MODULE="tools.screenshots_site.settings",
        ANOLE_SCREENSHOTS_DB=str(folder / "site.sqlite3"),
        ANOLE_JOBS_HOST=HOST_LABEL,
        PYTHONPATH=os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")]).rstrip(os.pathsep),
        PYTHONUNBUFFERED="1",
    )
    return env


def _django(env: dict[str, str], *args: str) -> str:
    done = subprocess.run(
        [sys.executable, "-m", "django", *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )
    if done.returncode != 0:
        raise RuntimeError(f"django {' '.join(args)} failed:\n{done.stdout}\n{done.stderr}")
    return done.stdout


def _wait_http(url: str, process: subprocess.Popen[bytes], timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while True:
        if process.poll() is not None:
            raise RuntimeError(f"the server exited ({process.returncode}) before answering")
        try:
            urllib.request.urlopen(url, timeout=2)  # noqa: S310 - our own local server
            return
        except urllib.error.HTTPError:
            return  # it answers (a redirect to log in, say)
        except OSError:
            if time.monotonic() > deadline:
                raise RuntimeError(f"{url} did not answer within {timeout:g} s") from None
            time.sleep(0.2)


def _stop(process: subprocess.Popen[bytes]) -> None:
    if process.poll() is None:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=15)


@contextlib.contextmanager
def running_site() -> Iterator[Site]:
    """Migrate a fresh site, start a worker and a server, seed it; yield it; stop both."""
    with tempfile.TemporaryDirectory(prefix="anole-screenshots-") as tmp:
        folder = Path(tmp)
        env = _env(folder)
        _django(env, "migrate", "--noinput", "-v0")
        _django(env, "screenshots_history")  # before the worker: it claims what it writes
        logs = open(folder / "processes.log", "wb")  # noqa: SIM115 - closed below
        worker = subprocess.Popen(
            [sys.executable, "-m", "django", "runjobs", "--queue", "default", "--queue", "mail"],
            cwd=ROOT,
            env=env,
            stdout=logs,
            stderr=subprocess.STDOUT,
        )
        port = free_port()
        server = subprocess.Popen(
            [sys.executable, "-m", "django", "runserver", f"127.0.0.1:{port}", "--noreload"],
            cwd=ROOT,
            env=env,
            stdout=logs,
            stderr=subprocess.STDOUT,
        )
        try:
            seeded = json.loads(_django(env, "screenshots_seed"))
            url = f"http://127.0.0.1:{port}"
            _wait_http(url + DASHBOARD, server)
            session = seeded.pop("session")
            yield Site(url=url, session=session, ids=seeded)
        except BaseException:
            logs.flush()
            sys.stderr.write((folder / "processes.log").read_text(errors="replace"))
            raise
        finally:
            _stop(server)
            _stop(worker)
            logs.close()


def launch(playwright: Any, chromium: str = CHROMIUM) -> Any:
    return playwright.chromium.launch(executable_path=chromium, args=CHROMIUM_FLAGS)


def new_page(browser: Any, site: Site, *, phone: bool) -> Any:
    """A browser page logged in as the seeded staff user, at a desktop or a phone width."""
    options: dict[str, Any] = {"viewport": PHONE if phone else DESKTOP}
    if phone:
        options.update(is_mobile=True, has_touch=True, device_scale_factor=2)
    context = browser.new_context(**options)
    context.add_cookies([{"name": "sessionid", "value": site.session, "url": site.url}])
    return context.new_page()


def visit(page: Any, site: Site, entry: Page) -> None:
    page.goto(site.page_url(entry))
    page.get_by_text(entry.ready).first.wait_for()
    # The live pages' status line says "Updates every 5 s." once their script ran.
    page.wait_for_load_state("networkidle")


def capture(out: Path, chromium: str = CHROMIUM, pages: tuple[Page, ...] = PAGES) -> list[Path]:
    """Photograph `pages` at both widths into `out`; the files written."""
    from playwright.sync_api import sync_playwright

    out.mkdir(parents=True, exist_ok=True)
    written = []
    with running_site() as site, sync_playwright() as playwright:
        browser = launch(playwright, chromium)
        try:
            for phone in (False, True):
                page = new_page(browser, site, phone=phone)
                for entry in pages:
                    visit(page, site, entry)
                    path = out / f"{entry.name}{'-phone' if phone else ''}.png"
                    page.screenshot(path=str(path), full_page=True)
                    written.append(path)
                page.context.close()
        finally:
            browser.close()
    return written


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tools.screenshots", description=__doc__)
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    parser.add_argument("--chromium", default=CHROMIUM)
    options = parser.parse_args(argv)
    for path in capture(options.out, options.chromium):
        print(path.relative_to(ROOT) if path.is_relative_to(ROOT) else path)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
