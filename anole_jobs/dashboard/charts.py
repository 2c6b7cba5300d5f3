"""Server-rendered SVG line charts for the dashboard: no script, no build, readable without
colour.

Each series has its own dash pattern and marker shape besides its colour, a legend that draws
both with the series' name, and a label at the end of its line; the chart has a ``<title>`` and
a ``<desc>`` (summing what it shows) that it names with ``aria-labelledby``, so a screen reader
announces it as one image with a description. Missing values (a minute with no completed run
has no percentile) break the line rather than drawing it through zero. Every text is escaped.

A chart whose last point is still being counted (the minute under way) draws that point
hollow, joined by a faint dotted line, so the chart does not end in a false drop. A chart is
drawn at a desktop width (`WIDTH`) or a phone's (`NARROW`): its text is 12 units high in a
viewBox about as wide as the screen, so it reads at 10 px or more.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from html import escape

from django.utils.safestring import SafeString, mark_safe

WIDTH, HEIGHT = 720, 240
LEFT, RIGHT, TOP, BOTTOM = 56, 96, 36, 34
LABEL_GAP = 14  # px between two line-end labels
#: A phone's chart: as wide as a 390 px screen's content, so 12-unit text is about 12 px.
NARROW = 360
NARROW_LEFT, NARROW_RIGHT = 48, 72


@dataclass(frozen=True)
class Style:
    """How one series looks: colour, dash pattern (SVG ``stroke-dasharray``, "" for solid) and
    marker shape ("circle", "square", "triangle")."""

    colour: str
    dash: str
    marker: str


#: Three styles that differ in pattern and marker, not only in colour.
STYLES = (
    Style("#1f5fa8", "", "circle"),
    Style("#b3261e", "7 4", "square"),
    Style("#4a4a4a", "2 3", "triangle"),
)


@dataclass(frozen=True)
class Line:
    label: str
    values: Sequence[float | None]
    style: Style


def nice_ceiling(value: float) -> float:
    """The smallest 1, 2 or 5 times a power of ten at or above `value` (1 for 0)."""
    if value <= 0:
        return 1
    power = 10 ** math.floor(math.log10(value))
    for step in (1, 2, 5, 10):
        if value <= step * power:
            return step * power
    return 10 * power  # unreachable


def _marker(shape: str, x: float, y: float, style: Style) -> str:
    fill = f'fill="{style.colour}"'
    if shape == "square":
        return f'<rect x="{x - 3:.1f}" y="{y - 3:.1f}" width="6" height="6" {fill}/>'
    if shape == "triangle":
        return (
            f'<path d="M{x:.1f} {y - 4:.1f}L{x + 4:.1f} {y + 3:.1f}L{x - 4:.1f} {y + 3:.1f}Z" '
            f"{fill}/>"
        )
    return f'<circle cx="{x:.1f}" cy="{y:.1f}" r="3" {fill}/>'


def _stroke(style: Style) -> str:
    dash = f' stroke-dasharray="{style.dash}"' if style.dash else ""
    return f'fill="none" stroke="{style.colour}" stroke-width="2"{dash}'


def line_chart(
    *,
    title: str,
    description: str,
    x_labels: Sequence[str],
    lines: Sequence[Line],
    y_format: Callable[[float], str] = lambda v: f"{v:g}",
    label_every: int = 1,
    marker_every: int = 1,
    time_axis: bool = False,
    partial_last: bool = False,
    narrow: bool = False,
) -> SafeString:
    """An SVG line chart of `lines` over the points named by `x_labels` (one label shown every
    `label_every` points, one marker every `marker_every`). `y_format` writes an axis value;
    `time_axis`: the values are milliseconds, on a grid of round durations. `partial_last`: the
    last point is still being counted (drawn hollow, its segment faint). `narrow`: a phone's
    chart (class ``chart-narrow``; the desktop's is ``chart-wide``)."""
    width = NARROW if narrow else WIDTH
    left, right = (NARROW_LEFT, NARROW_RIGHT) if narrow else (LEFT, RIGHT)
    # From the title, so a page and its live refresh render the same chart alike.
    chart_id = "anole-chart-" + hashlib.sha256(title.encode()).hexdigest()[:10]
    if narrow:
        chart_id += "-n"
    points = len(x_labels)
    plot_w, plot_h = width - left - right, HEIGHT - TOP - BOTTOM
    # Four grid steps of a round size (1, 2 or 5 times a power of ten for counts, a round
    # duration for times).
    largest = max((v for ln in lines for v in ln.values if v is not None), default=0)
    step = time_step(largest / 4) if time_axis else nice_ceiling(largest / 4)
    top = 4 * step
    if time_axis:
        y_format = time_unit(step)

    def x_at(i: int) -> float:
        return left + (plot_w * i / (points - 1) if points > 1 else plot_w / 2)

    def y_at(v: float) -> float:
        return TOP + plot_h - plot_h * v / top

    parts = [
        '<svg xmlns="http://www.w3.org/2000/svg"'
        f' class="chart chart-{"narrow" if narrow else "wide"}"'
        f' viewBox="0 0 {width} {HEIGHT}"'
        f' role="img" aria-labelledby="{chart_id}-t {chart_id}-d" font-size="12"'
        ' font-family="system-ui, sans-serif">',
        f'<title id="{chart_id}-t">{escape(title)}</title>',
        f'<desc id="{chart_id}-d">{escape(description)}</desc>',
    ]
    # Grid and y axis: four steps up to a round maximum.
    for index in range(5):
        tick = step * index
        y = y_at(tick)
        parts.append(
            f'<line x1="{left}" x2="{left + plot_w}" y1="{y:.1f}" y2="{y:.1f}" '
            f'stroke="#ccc" stroke-width="1"/>'
        )
        parts.append(
            f'<text x="{left - 6}" y="{y + 4:.1f}" text-anchor="end" fill="#333">'
            f"{escape(y_format(tick))}</text>"
        )
    # x axis labels: every `label_every`, and the last point's unless it would touch the one
    # before it (under half a label's spacing away).
    last_apart = (points - 1) % label_every * 2 > label_every
    for i, label in enumerate(x_labels):
        if i % label_every == 0 or (i == points - 1 and last_apart):
            x = x_at(i)
            parts.append(
                f'<line x1="{x:.1f}" x2="{x:.1f}" y1="{TOP + plot_h}" y2="{TOP + plot_h + 4}" '
                'stroke="#666"/>'
            )
            parts.append(
                f'<text x="{x:.1f}" y="{TOP + plot_h + 18}" text-anchor="middle" fill="#333">'
                f"{escape(label)}</text>"
            )
    # Each line's label at its last value, moved apart when two would overlap.
    ends: list[tuple[float, int, float]] = []  # (y, line index, x)
    for index, line in enumerate(lines):
        last = next(
            ((i, v) for i, v in reversed(list(enumerate(line.values))) if v is not None), None
        )
        if last is not None:
            ends.append((y_at(last[1]), index, x_at(last[0])))
    label_at: dict[int, tuple[float, float]] = {}
    floor = -math.inf
    for y, index, x in sorted(ends):
        y = max(y, floor + LABEL_GAP)
        label_at[index] = (x, y)
        floor = y
    # Then up from the plot's bottom, so labels pushed down stay off the x axis's labels.
    ceiling: float = TOP + plot_h
    for _, index, x in sorted(ends, reverse=True):
        y = min(label_at[index][1], ceiling)
        label_at[index] = (x, y)
        ceiling = y - LABEL_GAP
    # Lines: one path per unbroken run of values, markers, and the label.
    # A last point still being counted is left out of the lines' runs and drawn apart.
    settled = points - 1 if partial_last and points > 1 else points
    for index, line in enumerate(lines):
        runs: list[list[tuple[float, float]]] = [[]]
        for i, value in enumerate(line.values[:settled]):
            if value is None:
                runs.append([])
            else:
                runs[-1].append((x_at(i), y_at(value)))
        group = [f'<g class="series" aria-hidden="true" data-series="{escape(line.label)}">']
        for run in runs:
            if len(run) > 1:
                d = "M" + "L".join(f"{x:.1f} {y:.1f}" for x, y in run)
                group.append(f'<path d="{d}" {_stroke(line.style)}/>')
        for i, value in enumerate(line.values[:settled]):
            if value is not None and (i % marker_every == 0 or i == points - 1):
                group.append(_marker(line.style.marker, x_at(i), y_at(value), line.style))
        if settled < points:
            group.extend(_partial_point(line, settled, x_at, y_at))
        if index in label_at:
            x, y = label_at[index]
            group.append(
                f'<text x="{x + 8:.1f}" y="{y + 4:.1f}" '
                f'fill="{line.style.colour}">{escape(line.label)}</text>'
            )
        group.append("</g>")
        parts.extend(group)
    # Legend: each series' pattern and marker with its name, above the plot.
    x = left
    for line in lines:
        parts.append(
            f'<g class="legend"><line x1="{x}" x2="{x + 28}" y1="14" y2="14" '
            f"{_stroke(line.style)}/>{_marker(line.style.marker, x + 14, 14, line.style)}"
            f'<text x="{x + 34}" y="18" fill="#222">{escape(line.label)}</text></g>'
        )
        x += 44 + 8 * len(line.label)
    parts.append(
        f'<rect x="{left}" y="{TOP}" width="{plot_w}" height="{plot_h}" fill="none" stroke="#999"/>'
    )
    parts.append("</svg>")
    return mark_safe("".join(parts))  # noqa: S308 - every text above went through escape()


def _partial_point(
    line: Line, last: int, x_at: Callable[[int], float], y_at: Callable[[float], float]
) -> list[str]:
    """The point still being counted: a faint dotted segment from the one before, and a hollow
    marker (class ``partial``)."""
    value = line.values[last]
    if value is None:
        return []
    x, y = x_at(last), y_at(value)
    parts = ['<g class="partial">']
    before = line.values[last - 1]
    if before is not None:
        parts.append(
            f'<path d="M{x_at(last - 1):.1f} {y_at(before):.1f}L{x:.1f} {y:.1f}" fill="none" '
            f'stroke="{line.style.colour}" stroke-width="1.5" stroke-dasharray="1 4" '
            'stroke-opacity="0.6"/>'
        )
    parts.append(
        f'<circle cx="{x:.1f}" cy="{y:.1f}" r="3.5" fill="#fff" stroke="{line.style.colour}" '
        'stroke-width="1.5"/>'
    )
    parts.append("</g>")
    return parts


#: Round steps of a time axis, in milliseconds: every tick is a whole number of one unit
#: (or half a second).
TIME_STEPS = (
    *(m * p for p in (1, 10, 100) for m in (1, 2, 5)),
    1000, 2000, 5000, 10_000, 15_000, 30_000,
    60_000, 120_000, 300_000, 600_000, 900_000, 1_800_000,
    3_600_000, 7_200_000, 10_800_000, 21_600_000, 43_200_000, 86_400_000,
)  # fmt: skip


def time_step(quarter: float) -> float:
    """The smallest round duration at or above `quarter` (milliseconds)."""
    for step in TIME_STEPS:
        if quarter <= step:
            return step
    return nice_ceiling(quarter / 86_400_000) * 86_400_000


def time_unit(step: float) -> Callable[[float], str]:
    """How a time axis with grid `step` writes its ticks: all in the largest unit the step is
    a whole number of (``250 ms``, ``30 s``, ``2 min``, ``1 h``)."""
    size, unit = next(
        ((size, unit) for size, unit in ((3_600_000, "h"), (60_000, "min"), (1000, "s"))
            if step % size == 0),
        (1, "ms"),
    )  # fmt: skip

    def tick(value: float) -> str:
        return "0" if value == 0 else f"{value / size:g} {unit}"

    return tick
