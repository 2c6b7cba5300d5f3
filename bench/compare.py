"""`python -m bench.compare`: anole_jobs on each store and the Python job queues that run here,
measured the same way (`bench/peers/harness.py`) in the same run, in one table of ratios.

    python -m bench.compare [--quick] [--rounds N] [--only NAME[:STORE],...] [--json FILE]
                            [--peers-venv DIR]

The peers are installed by this script into their own virtualenv (default
``~/.cache/anole_jobs_bench/peers-py3.X``, rebuilt when the pinned list below changes), never
into the project's: Procrastinate, django-tasks-db (with the django-tasks backport), Huey,
Dramatiq, RQ and Celery. Every system runs in its own interpreter, one after another, and the
whole list is run `--rounds` times (default 2), interleaved, so that the noise of a shared
machine spreads over all of them; the table gives each figure's range over the rounds and the
ratio of anole_jobs on the same store to it (medians).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.common import ROOT, log, machine_info
from bench.report import fmt_range, table

#: The peers' pinned versions (what docs/performance.md reports).
PEER_REQUIREMENTS = (
    "procrastinate==3.10.0",
    "django-tasks==0.12.0",
    "django-tasks-db==0.13.0",
    "huey==3.5.4",
    "dramatiq[redis]==2.2.1",
    "rq==2.12.0",
    "celery[redis]==5.7.0",
    "psycopg[binary]>=3.2",
    "redis>=5",
    "Django>=5.2,<6",
)

#: (module, store, runs in the peers' virtualenv)
SYSTEMS = (
    ("anole", "sqlite", False),
    ("anole", "postgres", False),
    ("anole", "redis", False),
    ("procrastinate_peer", "postgres", True),
    ("django_tasks_peer", "postgres", True),
    ("django_tasks_peer", "sqlite", True),
    ("huey_peer", "redis", True),
    ("dramatiq_peer", "redis", True),
    ("rq_peer", "redis", True),
    ("celery_peer", "redis", True),
)

FULL = {"single": 1_000, "many": 10_000, "work": 10_000, "work_seconds": 30.0}
QUICK = {"single": 100, "many": 1_000, "work": 500, "work_seconds": 10.0}

#: Issue 12's targets against peers: (anole store, peer name, figure, at least).
TARGETS = (
    ("postgres", "Procrastinate", "enqueue_many", 5.0),
    ("postgres", "Procrastinate", "work", 80.0),
    ("redis", "Huey", "work", 3.5),
    ("redis", "Huey", "enqueue_one", 1.0),
)


def peers_python(venv: Path) -> Path:
    """The peers' virtualenv's interpreter, (re)built when the pinned list changed."""
    python = venv / "bin" / "python"
    marker = venv / ".anole-peers"
    wanted = "\n".join(PEER_REQUIREMENTS)
    if python.exists() and marker.exists() and marker.read_text() == wanted:
        return python
    log(f"installing the peers into {venv} (a few minutes, once)")
    subprocess.run([sys.executable, "-m", "venv", "--clear", str(venv)], check=True)
    subprocess.run(
        [str(python), "-m", "pip", "install", "-q", "--disable-pip-version-check"]
        + list(PEER_REQUIREMENTS),
        check=True,
    )
    marker.write_text(wanted)
    return python


def run_system(
    python: Path, module: str, store: str, sizes: dict[str, Any], tag: str, timeout: float
) -> dict[str, Any]:
    with tempfile.NamedTemporaryFile(prefix="anole_compare_", suffix=".json") as out:
        cmd = [
            str(python),
            "-m",
            f"bench.peers.{module}",
            "--out",
            out.name,
            "--tag",
            tag,
            "--store",
            store,
            "--single",
            str(sizes["single"]),
            "--many",
            str(sizes["many"]),
            "--work",
            str(sizes["work"]),
            "--work-seconds",
            str(sizes["work_seconds"]),
            "--repeat",
            "1",
        ]
        env = {**os.environ, "PYTHONPATH": str(ROOT)}
        try:
            proc = subprocess.run(
                cmd, env=env, cwd=str(ROOT), capture_output=True, text=True, timeout=timeout
            )
        except subprocess.TimeoutExpired:
            return {"error": f"timed out after {timeout:.0f} s"}
        try:
            result: dict[str, Any] = json.loads(Path(out.name).read_text() or "{}")
        except ValueError:
            result = {}
        if not result:
            result = {"error": f"exit {proc.returncode}: {proc.stderr[-1500:]}"}
        return result


def merge(rows: dict[tuple[str, str], dict[str, Any]], result: dict[str, Any], key: Any) -> None:
    row = rows.setdefault(key, {"enqueue_one": [], "enqueue_many": [], "work": [], "errors": []})
    if "error" in result:
        row["errors"].append(result["error"])
        return
    for field in ("name", "store", "version", "bulk_api", "concurrency"):
        row[field] = result[field]
    for field in ("enqueue_one", "enqueue_many", "work"):
        row[field].extend(v for v in result[field] if v is not None)


def median(values: list[float]) -> float | None:
    return statistics.median(values) if values else None


def render(info: dict[str, Any], rows: list[dict[str, Any]], sizes: dict[str, Any]) -> str:
    anole = {r["store"]: r for r in rows if r.get("name") == "anole_jobs"}
    header = (
        "system",
        "store",
        "enqueue one (jobs/s)",
        "anole ÷",
        "enqueue many (jobs/s)",
        "anole ÷",
        "work (jobs/s)",
        "anole ÷",
        "worker concurrency",
    )
    body = []
    for row in rows:
        if "name" not in row:
            continue
        ours = anole.get(row["store"], {})
        cells: list[str] = [f"{row['name']} {row['version']}", row["store"]]
        for field in ("enqueue_one", "enqueue_many", "work"):
            value = fmt_range(row[field])
            if field == "enqueue_many":
                value += f" ({row['bulk_api'] or 'a loop of one'})"
            cells.append(value)
            mine, theirs = median(ours.get(field, [])), median(row[field])
            is_us = row["name"] == "anole_jobs"
            cells.append("" if is_us or not mine or not theirs else f"{mine / theirs:,.1f}x")
        cells.append(row["concurrency"])
        body.append(tuple(cells))
    out = [
        "anole_jobs vs peers (python -m bench.compare)",
        "",
        f"machine: {info.get('nproc')} cores, load average "
        + ", ".join(f"{x:.2f}" for x in info.get("loadavg", ()))
        + f" at the start; {info.get('platform')}; python {info.get('python')}, "
        f"postgresql {info.get('postgresql')}, redis {info.get('redis')}, "
        f"commit {info.get('commit')}",
        f"sizes: enqueue one N={sizes['single']:,}, enqueue many N={sizes['many']:,}, work "
        f"N={sizes['work']:,} (capped at {sizes['work_seconds']:.0f} s per run)",
        "",
    ]
    out.extend(table([header, *body], right=(2, 3, 4, 5, 6, 7)))
    out.append("")
    for store, peer, field, bound in TARGETS:
        them = next((r for r in rows if r.get("name") == peer), None)
        mine, theirs = (
            median(anole.get(store, {}).get(field, [])),
            median((them or {}).get(field, [])),
        )
        if mine and theirs:
            ratio = mine / theirs
            verdict = "met" if ratio >= bound else "MISSED"
            out.append(f"target: {store} {field} >= {bound:g}x {peer}: {ratio:,.2f}x ({verdict})")
    for row in rows:
        for error in row.get("errors", []):
            out.append(f"- {row.get('name', row.get('key'))}: FAILED: {error.strip()[-300:]}")
    out.append("")
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.compare", description=__doc__)
    parser.add_argument("--quick", action="store_true", help="small N, one round")
    parser.add_argument("--rounds", type=int, help="rounds over every system (default 2)")
    parser.add_argument(
        "--only",
        default="",
        help="comma-separated module names to run, or module:store (e.g. anole:redis,huey_peer)",
    )
    parser.add_argument("--json", help="also write the rows as JSON to this file")
    parser.add_argument(
        "--peers-venv",
        default=str(
            Path.home() / ".cache" / "anole_jobs_bench" / f"peers-py{sys.version_info[0]}"
            f".{sys.version_info[1]}"
        ),
    )
    args = parser.parse_args(argv)
    sizes = QUICK if args.quick else FULL
    rounds = args.rounds or (1 if args.quick else 2)
    only = {x.strip() for x in args.only.split(",") if x.strip()}
    systems = [s for s in SYSTEMS if not only or s[0] in only or f"{s[0]}:{s[1]}" in only]
    python = peers_python(Path(args.peers_venv)) if any(s[2] for s in systems) else None
    info = machine_info()
    tag = str(os.getpid())
    rows: dict[tuple[str, str], dict[str, Any]] = {}
    timeout = 120 + 4 * sizes["work_seconds"] + sizes["single"] / 20 + sizes["many"] / 50
    for round_ in range(rounds):
        for module, store, is_peer in systems:
            began = time.perf_counter()
            interpreter = python if is_peer and python else Path(sys.executable)
            result = run_system(interpreter, module, store, sizes, tag, timeout)
            merge(rows, result, (module, store))
            rows[(module, store)]["key"] = module
            log(
                f"round {round_ + 1}/{rounds}: {module} on {store} in "
                f"{time.perf_counter() - began:.0f} s"
                + (f": FAILED {result['error'][-200:]}" if "error" in result else "")
            )
    ordered = list(rows.values())
    text = render(info, ordered, sizes)
    print(text, flush=True)
    if args.json:
        Path(args.json).write_text(json.dumps({"machine": info, "rows": ordered}, indent=2))
    return 1 if any(r["errors"] for r in ordered) else 0


if __name__ == "__main__":
    sys.exit(main())
