"""The public API's types catch mistakes before anything runs: mypy on a small sample."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SAMPLE = ROOT / "tests" / "typing_samples" / "bad_handler.py"


def test_mypy_refuses_a_handler_for_another_type_and_a_misspelled_option():
    result = subprocess.run(
        [sys.executable, "-m", "mypy", "--no-error-summary", str(SAMPLE.relative_to(ROOT))],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )
    errors = {}
    for line in result.stdout.splitlines():
        match = re.match(r".*bad_handler\.py:(\d+): error: (.*)", line)
        if match:
            errors[int(match.group(1))] = match.group(2)
    lines = SAMPLE.read_text().splitlines()
    expected = {n for n, text in enumerate(lines, start=1) if "# error:" in text}
    assert set(errors) == expected, result.stdout + result.stderr
    refund = errors[min(expected)]
    assert '"Callable[[Job, Refund], None]"; expected "Callable[[Job, Charge], None]"' in refund
    assert any('"delai"' in message for message in errors.values())
