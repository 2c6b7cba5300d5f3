#!/usr/bin/env python
"""Summarise a py-spy raw (collapsed-stack) profile, as `python -m bench --profile DIR` records:

    python bench/profile_summary.py DIR/postgres-runjobs.txt [--top 12]

Prints the samples per thread group (slot threads `anole-default-0..9` count as one), and for
the whole process and each group the functions with the most samples, inclusive (anywhere on
the stack) and exclusive (on top of it). py-spy samples only threads that are not idle unless
`--idle` was given, so the counts are where CPU time (and the GIL) went.
"""

from __future__ import annotations

import argparse
import re
from collections import Counter, defaultdict
from pathlib import Path

FRAME = re.compile(r"^(?P<func>.*?) \((?P<file>[^()]*?)(?::(?P<line>\d+))?\)$")


def short(frame: str) -> str:
    """`func (path/to/file.py:123)` -> `func (file.py)`: lines split one function apart."""
    match = FRAME.match(frame.strip())
    if not match:
        return frame.strip()
    path = match.group("file")
    for marker in ("site-packages/", "lib/python3"):
        if marker in path:
            path = path.split(marker, 1)[1]
    return f"{match.group('func')} ({path})"


def group_of(thread: str) -> str:
    name = thread.split(":", 1)[-1].strip() if ":" in thread else thread
    name = re.sub(r"\(\d+\)", "", name).strip()
    return re.sub(r"-\d+$", "-N", name) or thread


def load(path: Path) -> list[tuple[str, list[str], int]]:
    stacks = []
    for raw in path.read_text().splitlines():
        if not raw.strip():
            continue
        body, _, count = raw.rpartition(" ")
        frames = body.split(";")
        thread = frames[0] if frames and frames[0].startswith("thread") else "?"
        if thread != "?":
            frames = frames[1:]
        frames = [f for f in frames if not f.startswith("process ")]
        stacks.append((thread, [short(f) for f in frames], int(count)))
    return stacks


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("profile", type=Path)
    parser.add_argument("--top", type=int, default=12)
    parser.add_argument("--group", help="only this thread group (e.g. anole-default-N)")
    args = parser.parse_args()

    stacks = load(args.profile)
    total = sum(count for _, _, count in stacks) or 1
    by_group: Counter[str] = Counter()
    inclusive: dict[str, Counter[str]] = defaultdict(Counter)
    exclusive: dict[str, Counter[str]] = defaultdict(Counter)
    for thread, frames, count in stacks:
        group = group_of(thread)
        if args.group and group != args.group:
            continue
        by_group[group] += count
        for key in ("ALL", group):
            for func in set(frames):
                inclusive[key][func] += count
            if frames:
                exclusive[key][frames[-1]] += count
    print(f"{args.profile}: {total} samples")
    print("\nsamples by thread group:")
    for group, count in by_group.most_common():
        print(f"  {count:7d}  {100 * count / total:5.1f}%  {group}")
    for key in ["ALL", *[g for g, _ in by_group.most_common(4)]]:
        print(f"\n[{key}] inclusive (on the stack):")
        for func, count in inclusive[key].most_common(args.top):
            print(f"  {count:7d}  {100 * count / total:5.1f}%  {func}")
        print(f"[{key}] exclusive (top of stack):")
        for func, count in exclusive[key].most_common(args.top):
            print(f"  {count:7d}  {100 * count / total:5.1f}%  {func}")


if __name__ == "__main__":
    main()
