"""``python -m tests.chaos [--long] [PYTEST ARGS...]``: run the chaos scenarios.

Without ``--long`` it runs the short scenarios CI runs. With ``--long`` every scenario scales
up (>= 200 kills over >= 20,000 jobs, 30 minutes of load with 4 processes, more faults): plan
on an hour or more. ``--jobs N`` and ``--kills N`` set the kill run's size instead (to fit a
long run into a time box). Extra arguments go to pytest, e.g. ``-k postgres`` for one store.
The reconciliation and load figures are printed (pytest ``-s``).
"""

from __future__ import annotations

import os
import sys

import pytest


def main(argv: list[str]) -> int:
    args = list(argv)
    if "--long" in args:
        args.remove("--long")
        os.environ["ANOLE_CHAOS_LONG"] = "1"
    for option in ("--jobs", "--kills"):
        if option in args:
            at = args.index(option)
            os.environ[f"ANOLE_CHAOS_{option[2:].upper()}"] = str(int(args[at + 1]))
            del args[at : at + 2]
    os.environ.setdefault("ANOLE_TEST_REQUIRE", "postgres,redis")
    here = os.path.dirname(os.path.abspath(__file__))
    return int(pytest.main([here, "-m", "chaos", "-s", "-p", "no:cacheprovider", *args]))


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
