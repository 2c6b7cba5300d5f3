"""`python -m bench`: the parent runs one child process per store (each with its own Django
settings), each child runs the scenarios, the parent prints the report.

    python -m bench [--stores memory,sqlite,postgres,redis] [--scenarios a,b] [--quick]
                    [--repeat N] [--json FILE] [--profile DIR] [--diagnose]

Every wait has a deadline; a child over its time budget is stopped with its process group
(its runjobs included) and its PostgreSQL database / Redis keys removed. Exit status 1 when a
scenario failed or a store's child crashed; a store whose server does not answer is reported
and, unless --require names it, is not a failure.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
import traceback
from pathlib import Path
from typing import Any

from bench.common import FULL, QUICK, ROOT, STORES, Sizes, log, machine_info
from bench.report import merge, render

SCENARIO_NAMES = ("enqueue_one", "enqueue_many", "step", "runtime", "latency", "growth")
#: Named with --scenarios only: slow, and on a machine with few cores it measures the cores.
EXTRA_SCENARIOS = ("scaleout", "soak", "processes", "stats", "search", "workflows", "async_io")


def parse(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m bench", description=__doc__.split("\n\n")[0])
    parser.add_argument("--stores", default=",".join(STORES), help="comma-separated subset")
    parser.add_argument(
        "--scenarios", default=",".join(SCENARIO_NAMES), help="comma-separated subset, in order"
    )
    parser.add_argument("--quick", action="store_true", help="small N: a smoke run for CI")
    parser.add_argument("--repeat", type=int, help="runs of each scenario (default 3, --quick 1)")
    parser.add_argument("--json", help="also write every figure as JSON to this file")
    parser.add_argument("--profile", metavar="DIR", help="py-spy the runjobs process into DIR")
    parser.add_argument(
        "--diagnose", action="store_true", help="record each claim/finish call of runjobs"
    )
    parser.add_argument(
        "--poll-interval", type=float, default=0.02, help="jobs.counts() polling (seconds)"
    )
    parser.add_argument("--store-timeout", type=float, help="seconds per store's child")
    parser.add_argument(
        "--require",
        default="",
        help="stores whose server must answer (CI: postgres,redis); default: none",
    )
    parser.add_argument("--child", help=argparse.SUPPRESS)
    parser.add_argument("--tag", help=argparse.SUPPRESS)
    parser.add_argument("--out", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    args.store_list = [s.strip() for s in args.stores.split(",") if s.strip()]
    args.scenario_list = [s.strip() for s in args.scenarios.split(",") if s.strip()]
    for given, known, what in (
        (args.store_list, STORES, "store"),
        (args.scenario_list, SCENARIO_NAMES + EXTRA_SCENARIOS, "scenario"),
    ):
        unknown = [x for x in given if x not in known]
        if unknown:
            parser.error(f"unknown {what}(s) {', '.join(unknown)}; known: {', '.join(known)}")
    return args


def sizes_for(args: argparse.Namespace) -> Sizes:
    sizes = QUICK if args.quick else FULL
    if args.repeat:
        from dataclasses import replace

        sizes = replace(sizes, repeat=args.repeat)
    return sizes


# -- the child: one store --------------------------------------------------------------------


def child_main(args: argparse.Namespace) -> int:
    from bench.common import Options
    from bench.context import Bench
    from bench.scenarios import SCENARIOS

    def on_term(signum: int, frame: object) -> None:
        raise SystemExit(128 + signum)  # run the finally blocks: stop runjobs, clean up

    signal.signal(signal.SIGTERM, on_term)
    store = args.child
    sizes = sizes_for(args)
    options = Options(
        poll_interval=args.poll_interval, profile_dir=args.profile, diagnose=args.diagnose
    )
    bench = Bench(store, sizes, args.tag, options)
    result: dict[str, Any] = {"store": store, "figures": [], "errors": {}}
    runs: list[list[dict[str, Any]]] = []

    def save() -> None:
        result["figures"] = merge(runs)
        Path(args.out).write_text(json.dumps(result, default=str))

    try:
        bench.setup()
        result.update(bench.info)
        for name in args.scenario_list:
            repeat = 1 if name in ("latency", "growth") else sizes.repeat
            for attempt in range(repeat):
                began = time.perf_counter()
                try:
                    runs.append(SCENARIOS[name].run(bench))
                except Exception as exc:  # noqa: BLE001 - reported; go on with the next one
                    traceback.print_exc()
                    result["errors"][name] = "".join(
                        traceback.format_exception_only(type(exc), exc)
                    )[-2000:]
                    break
                finally:
                    save()
                log(
                    f"{store}: {name} {attempt + 1}/{repeat} in {time.perf_counter() - began:.1f} s"
                )
    except BaseException as exc:  # noqa: BLE001 - the parent reports it
        traceback.print_exc()
        result["fatal"] = "".join(traceback.format_exception_only(type(exc), exc))
    finally:
        bench.close()
        save()
    return 0


# -- the parent ------------------------------------------------------------------------------


def run_child(store: str, args: argparse.Namespace, tag: str, timeout: float) -> dict[str, Any]:
    from bench.context import cleanup_external

    with tempfile.NamedTemporaryFile(prefix=f"anole_bench_{store}_", suffix=".json") as out:
        cmd = [sys.executable, "-m", "bench", "--child", store, "--tag", tag, "--out", out.name]
        cmd += ["--scenarios", ",".join(args.scenario_list)]
        cmd += ["--poll-interval", str(args.poll_interval)]
        if args.quick:
            cmd.append("--quick")
        if args.repeat:
            cmd += ["--repeat", str(args.repeat)]
        if args.profile:
            cmd += ["--profile", args.profile]
        if args.diagnose:
            cmd.append("--diagnose")
        env = dict(os.environ, PYTHONPATH=str(ROOT))
        proc = subprocess.Popen(cmd, env=env, cwd=str(ROOT), start_new_session=True)
        timed_out = False
        try:
            proc.wait(timeout)
        except subprocess.TimeoutExpired:
            log(f"{store}: over its {timeout:.0f} s budget; stopping it")
            timed_out = True
        finally:
            stop_group(proc)  # whatever is left of its group (a stray runjobs)
            if timed_out or proc.returncode not in (0, None):
                cleanup_external(store, tag)
        result: dict[str, Any] = {"store": store}
        with contextlib.suppress(OSError, ValueError):
            result = json.loads(Path(out.name).read_text() or "{}") or result
        if timed_out:
            result["fatal"] = f"timed out after {timeout:.0f} s"
        elif proc.returncode != 0 and "fatal" not in result:
            result["fatal"] = f"child exited with {proc.returncode}"
        return result


def stop_group(proc: subprocess.Popen[Any]) -> None:
    """SIGTERM the child's process group, then SIGKILL what is left after 20 s."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGTERM)
    try:
        proc.wait(20)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(10)
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)


def unavailable(result: dict[str, Any]) -> bool:
    """The store's server did not answer (connection refused at set-up)."""
    fatal = result.get("fatal") or ""
    return not result.get("figures") and any(
        word in fatal for word in ("OperationalError", "ConnectionError", "Connection refused")
    )


def main(argv: list[str] | None = None) -> int:
    args = parse(argv)
    if args.child:
        return child_main(args)
    if args.profile:
        os.makedirs(args.profile, exist_ok=True)
    info = machine_info()
    tag = str(os.getpid())
    sizes = sizes_for(args)
    results = []
    for store in args.store_list:
        log(f"{store}: starting")
        began = time.perf_counter()
        result = run_child(store, args, tag, args.store_timeout or sizes.store_timeout)
        result["seconds"] = time.perf_counter() - began
        results.append(result)
        log(f"{store}: done in {result['seconds']:.1f} s")
    print(render(info, results, args.quick), flush=True)
    if args.json:
        Path(args.json).write_text(
            json.dumps({"machine": info, "results": results}, indent=2, default=str)
        )
    required = {s.strip() for s in args.require.split(",") if s.strip()}
    failed = [
        r["store"]
        for r in results
        if r.get("errors") or (r.get("fatal") and (not unavailable(r) or r["store"] in required))
    ]
    if failed:
        log(f"failed: {', '.join(failed)}")
    return 1 if failed else 0
