"""Check that the installed anole_jobs (a wheel, not the source tree) holds every file of the
package that git tracks: templates, static files, migrations and their frozen SQL, Lua scripts.
CI runs it in a fresh virtualenv where only the built wheel is installed (.ci/run), so a file
that pyproject.toml's package-data leaves out fails CI instead of a user's deploy.

Usage: python tools/check_wheel.py [SOURCE_ROOT]   (exit 1 naming each missing file)
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path


def main() -> int:
    root = Path(sys.argv[1] if len(sys.argv) > 1 else Path(__file__).resolve().parent.parent)
    import anole_jobs

    installed = Path(anole_jobs.__file__).resolve().parent
    # The source package itself, not merely a path under the checkout: CI's fresh virtualenv
    # lives in the checkout too (.venv-ci-wheel), with the wheel in its site-packages.
    if installed == (root / "anole_jobs").resolve():
        print(f"anole_jobs is imported from the source tree ({installed}), not a wheel")
        return 1
    tracked = subprocess.run(
        ["git", "ls-files", "anole_jobs"], cwd=root, capture_output=True, text=True, check=True
    ).stdout.split()
    missing = [
        path for path in tracked if not (installed / Path(path).relative_to("anole_jobs")).is_file()
    ]
    for path in missing:
        print(f"missing from the installed package: {path}")
    print(f"{len(tracked) - len(missing)} of {len(tracked)} files of the package installed")
    return 1 if missing else 0


if __name__ == "__main__":
    sys.exit(main())
