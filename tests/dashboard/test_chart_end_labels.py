"""The labels at the end of a chart's lines: apart from each other, and inside the plot even
when every line ends at zero (they used to be pushed down onto the time axis's labels)."""

from __future__ import annotations

import re

from anole_jobs.dashboard.charts import BOTTOM as AXIS
from anole_jobs.dashboard.charts import HEIGHT, LABEL_GAP, STYLES, TOP, Line, line_chart


def end_labels(svg: str, names: list[str]) -> dict[str, float]:
    found = {}
    for name in names:
        ys = re.findall(rf'<text x="\d+\.\d" y="([\d.]+)" fill="[^"]+">{name}</text>', svg)
        assert len(ys) == 1, (name, ys)
        # The text sits 4 px below the point it labels; the legend's texts have a whole x.
        found[name] = float(ys[0]) - 4
    return found


def chart(ends: list[float]) -> str:
    names = ["p50", "p95", "p99"]
    return str(
        line_chart(
            title="Run time",
            description="percentiles",
            x_labels=["12:00", "12:01"],
            lines=[Line(n, [4.0, end], s) for n, end, s in zip(names, ends, STYLES, strict=True)],
        )
    )


def test_labels_of_lines_ending_at_zero_stay_above_the_time_axis():
    at = end_labels(chart([0.0, 0.0, 0.0]), ["p50", "p95", "p99"])
    bottom = HEIGHT - AXIS
    assert max(at.values()) <= bottom
    ys = sorted(at.values())
    assert all(b - a >= LABEL_GAP for a, b in zip(ys, ys[1:], strict=False))
    assert min(ys) >= TOP


def test_labels_of_lines_ending_apart_stay_at_their_lines():
    svg = chart([0.0, 2.0, 4.0])
    at = end_labels(svg, ["p50", "p95", "p99"])
    assert at["p50"] == HEIGHT - AXIS  # the bottom of the plot: where zero is
    assert at["p99"] == TOP  # the top: the chart's maximum
