"""The docs harness runs a page's jobs to their end: a sample that enqueues work which can
never finish (a handler that always raises, a step whose dependency died) fails its page,
even when the sample itself only counts what it enqueued."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests.docs.harness import REPO

SAMPLE = """\
# Sample

{directive}

```python
from dataclasses import dataclass

from anole_jobs import Job, Workflow, jobs, kind


@kind("sample.parse")
@dataclass
class Parse:
    n: int


@jobs.handler(Parse)
def parse(job: Job, args: Parse) -> int:
    return job.dependency_results()["step-1"] + args.n  # only the chained step has one


wf = Workflow("sample")
wf.chain(Parse(1), Parse(2))
wf.group(Parse(3))
created = jobs.enqueue_workflow(wf)
assert len(created.jobs) == 3  # all the sample checks
```
"""


def run_harness(tmp_path: Path, directive: str = "") -> subprocess.CompletedProcess[str]:
    page = tmp_path / "sample.md"
    page.write_text(SAMPLE.format(directive=directive), encoding="utf-8")
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    env.pop("DJANGO_SETTINGS_MODULE", None)
    return subprocess.run(
        [sys.executable, "-m", "tests.docs.harness", str(page)],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_a_page_whose_jobs_cannot_finish_fails_naming_them(tmp_path):
    result = run_harness(tmp_path)
    assert result.returncode == 1, result.stdout + result.stderr
    assert "run to the end, the page's samples leave jobs that did not finish" in result.stderr
    # The first step finds no "step-1" among its (no) dependencies: it dies after its 20
    # attempts (the clock moved through every retry), and the step after it is cancelled.
    assert "(sample.parse) dead after 20 attempt(s): KeyError: 'step-1'" in result.stderr


def test_a_failure_the_page_expects_is_named_in_a_directive(tmp_path):
    result = run_harness(tmp_path, "<!-- docs-harness: dead=sample.parse -->")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "sample.md: 1 python block(s) ran" in result.stdout
