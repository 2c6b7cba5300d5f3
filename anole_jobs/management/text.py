"""How ``manage.py jobs`` writes for people: aligned tables, times relative to now, shortened
errors, and the one `Output` every subcommand prints through (a table for people, or
``--json``). The command's module and its subcommand modules (`workers_cli`, `bulk_cli`) all
import it, so none of them imports another's command."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import datetime
from typing import Any, Protocol

#: The widest last error a job table shows, in characters.
ERROR_WIDTH = 50


class Output(Protocol):
    """What a subcommand prints through (the command): `payload` with ``--json``, else the
    text `human` makes (only called when wanted)."""

    def emit(self, payload: Any, human: Callable[[], str]) -> None: ...


def relative(moment: datetime | None, now: datetime) -> str:
    """``3m ago`` / ``in 2h`` / ``now`` / ``-``."""
    if moment is None:
        return "-"
    seconds = (moment - now).total_seconds()
    size = abs(seconds)
    for unit, length in (("d", 86400), ("h", 3600), ("m", 60)):
        if size >= length:
            amount = f"{int(size // length)}{unit}"
            break
    else:
        amount = f"{int(size)}s"
    if size < 1:
        return "now"
    return f"in {amount}" if seconds > 0 else f"{amount} ago"


def shorten(text: str, width: int = ERROR_WIDTH) -> str:
    """`text` on one line, cut to `width` characters with an ellipsis."""
    line = " ".join(str(text).split())
    return line if len(line) <= width else line[: width - 1] + "…"


def table(headers: Sequence[str], rows: Sequence[Sequence[object]]) -> str:
    """Aligned columns; the last one is not padded."""
    cells = [[str(h) for h in headers], *[[str(c) for c in row] for row in rows]]
    widths = [max(len(row[i]) for row in cells) for i in range(len(headers))]
    lines = []
    for row in cells:
        padded = [cell.ljust(width) for cell, width in zip(row[:-1], widths, strict=False)]
        lines.append("  ".join([*padded, row[-1]]).rstrip())
    return "\n".join(lines)
