"""Figures and their tables. A scenario returns figures (plain dicts, so they cross from the
per-store child to the parent as JSON); each carries its value, the baseline it was measured
next to and their ratio. Repeated runs of a scenario give one row with the range of values and
of ratios; the targets of issue 12 are checked on the row."""

from __future__ import annotations

import statistics
from collections.abc import Iterable
from typing import Any

Figure = dict[str, Any]

#: key -> {store: (what, op, bound)}: `what` is "value" or "ratio" of that figure.
TARGETS: dict[str, dict[str, tuple[str, str, float]]] = {
    "enqueue_one": {
        "sqlite": ("ratio", ">=", 0.8),
        "postgres": ("ratio", ">=", 0.8),
    },
    "enqueue_many": {"redis": ("value", ">=", 40_000)},
    "runtime": {
        "postgres": ("value", ">=", 10_000),
        "sqlite": ("value", ">=", 6_000),
        "redis": ("value", ">=", 10_000),
    },
    "runtime_cpu": {s: ("value", "<=", 100) for s in ("sqlite", "postgres", "redis")},
    "latency_idle_p50": {s: ("value", "<=", 5) for s in ("postgres", "redis")},
    "latency_idle_p99": {s: ("value", "<=", 20) for s in ("postgres", "redis")},
    "latency_load_p50": {s: ("value", "<=", 5) for s in ("postgres", "redis")},
    "latency_load_p99": {s: ("value", "<=", 20) for s in ("postgres", "redis")},
    "growth_finished": {s: ("ratio", "<=", 1.2) for s in ("sqlite", "postgres", "redis")},
    "growth_backlog": {s: ("ratio", "<=", 1.2) for s in ("sqlite", "postgres", "redis")},
    "processes_2": {s: ("ratio", ">=", 1.7) for s in ("sqlite", "postgres", "redis")},
    "workflow_step": {s: ("ratio", "<=", 1.5) for s in ("sqlite", "postgres", "redis")},
    "result_wait_p50": {s: ("value", "<=", 5) for s in ("postgres", "redis")},
}


def figure(
    key: str,
    label: str,
    value: float | None,
    unit: str,
    *,
    ratio: float | None = None,
    against: str = "",
    note: str = "",
) -> Figure:
    """One measured figure. `ratio` compares it with `against`, measured in the same run."""
    return {
        "key": key,
        "label": label,
        "value": value,
        "unit": unit,
        "ratio": ratio,
        "against": against,
        "note": note,
    }


def merge(runs: Iterable[list[Figure]]) -> list[Figure]:
    """Fold the figures of repeated runs into one per key: ``values`` and ``ratios`` lists."""
    merged: dict[str, Figure] = {}
    for figures in runs:
        for fig in figures:
            row = merged.setdefault(fig["key"], {**fig, "values": [], "ratios": []})
            if fig["value"] is not None:
                row["values"].append(fig["value"])
            if fig["ratio"] is not None:
                row["ratios"].append(fig["ratio"])
            row["note"] = fig["note"] or row["note"]
    for row in merged.values():
        row["value"] = statistics.median(row["values"]) if row["values"] else None
        row["ratio"] = statistics.median(row["ratios"]) if row["ratios"] else None
    return list(merged.values())


def verdict(store: str, row: Figure) -> str:
    target = TARGETS.get(row["key"], {}).get(store)
    if target is None:
        return ""
    what, op, bound = target
    value = row[what]
    shown = f"{op} {bound:g}{'x' if what == 'ratio' else ' ' + row['unit']}"
    if value is None:
        return f"{shown}: n/a"
    ok = value >= bound if op == ">=" else value <= bound
    return f"{shown}: {'met' if ok else 'MISSED'}"


def fmt_number(value: float | None, unit: str = "") -> str:
    if value is None:
        return "—"
    if unit == "ms" or abs(value) < 10:
        return f"{value:,.2f}"
    return f"{value:,.0f}"


def fmt_range(values: list[float], unit: str = "", suffix: str = "") -> str:
    if not values:
        return "—"
    if len(values) == 1:
        return fmt_number(values[0], unit) + suffix
    low, high = min(values), max(values)
    return f"{fmt_number(low, unit)}–{fmt_number(high, unit)}{suffix}"


def table(rows: list[tuple[str, ...]], right: Iterable[int] = ()) -> list[str]:
    """Rows as a Markdown table (the first row is the header)."""
    right = set(right)
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    lines = []
    for index, row in enumerate(rows):
        cells = [
            c.rjust(widths[i]) if i in right else c.ljust(widths[i]) for i, c in enumerate(row)
        ]
        lines.append("| " + " | ".join(cells) + " |")
        if index == 0:
            lines.append(
                "|"
                + "|".join(
                    ("-" * (w + 1) + ":") if i in right else "-" * (w + 2)
                    for i, w in enumerate(widths)
                )
                + "|"
            )
    return lines


def store_table(store: str, rows: list[Figure]) -> list[str]:
    header = ("figure", "value (range)", "unit", "ratio (range)", "against (same run)", "target")
    body = [
        (
            row["label"],
            fmt_range(row["values"], row["unit"]),
            row["unit"],
            fmt_range(row["ratios"], "", "x") if row["ratios"] else "",
            row["against"],
            verdict(store, row),
        )
        for row in rows
    ]
    return table([header, *body], right=(1, 3))


def render(info: dict[str, Any], results: list[dict[str, Any]], quick: bool) -> str:
    """The whole report: machine and versions, then one table per store."""
    out = [
        "anole_jobs bench" + (" (--quick: small N, a smoke run, not figures)" if quick else ""),
        "",
        f"machine: {info.get('nproc')} cores, load average "
        + ", ".join(f"{x:.2f}" for x in info.get("loadavg", ()))
        + f" at the start; {info.get('platform')}",
        "versions: "
        + ", ".join(
            f"{k} {info[k]}"
            for k in (
                "python",
                "django",
                "sqlite",
                "postgresql",
                "psycopg",
                "redis",
                "redis-py",
                "commit",
            )
            if k in info
        ),
    ]
    for result in results:
        out.append("")
        extra = ", ".join(str(x) for x in (result.get("store_name"), result.get("wakeups")) if x)
        out.append(f"## {result['store']}" + (f" ({extra})" if extra else ""))
        out.append("")
        rows = result.get("figures") or []
        if rows:
            out.extend(store_table(result["store"], rows))
        for row in rows:
            if row.get("note"):
                out.append(f"- {row['label']}: {row['note']}")
        for name, error in (result.get("errors") or {}).items():
            out.append(f"- scenario {name} FAILED: {error.strip().splitlines()[-1]}")
        if result.get("fatal"):
            out.append(f"- FATAL: {result['fatal'].strip().splitlines()[-1]}")
    out.append("")
    return "\n".join(out)
