"""No file of the package, the tests or the docs cites a rule by number ("R" and a number, the
contract's section sign and number, or the contract file's name): that file is not in the
repository, so a reader cannot follow the citation. Say the rule in words, or link the docs
page that does."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SEARCHED = ("anole_jobs", "tests", "docs", "bench", "tools", "testproject")
# Built from pieces so that this file's own source does not match it.
CITATION = re.compile(
    "|".join(
        (
            r"\b" + "R" + r"\d+[a-z]?\b",  # a rule number, with its letter if it has one
            r"\b" + "SP" + "EC",  # the contract file, by name
            "\N{SECTION SIGN}" + r"\s*\d",  # one of its sections
        )
    )
)
SKIPPED_DIRECTORIES = {"__pycache__", ".mypy_cache", ".ruff_cache", "node_modules"}


def text_files() -> list[Path]:
    """Every text file under the searched directories (binary files, such as screenshots,
    are skipped: a byte sequence there means nothing)."""
    found = []
    for top in SEARCHED:
        for path in sorted((ROOT / top).rglob("*")):
            if not path.is_file() or SKIPPED_DIRECTORIES & set(path.parts):
                continue
            data = path.read_bytes()
            if b"\0" in data:
                continue
            try:
                data.decode("utf-8")
            except UnicodeDecodeError:
                continue
            found.append(path)
    return found


def citations() -> list[str]:
    hits = []
    for path in text_files():
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
            if CITATION.search(line):
                hits.append(f"{path.relative_to(ROOT)}:{number}: {line.strip()}")
    return hits


def test_the_pattern_finds_each_form_of_citation_and_not_plain_words():
    assert CITATION.search("fenced (R" + "22)")
    assert CITATION.search("none is held (R" + "14a: while a handler runs)")
    assert CITATION.search("R" + "3b, R" + "3c")
    assert CITATION.search("SP" + "EC \N{SECTION SIGN}13")
    assert CITATION.search("(\N{SECTION SIGN} 4)")
    assert not CITATION.search(
        "INSP" + "ECT the RAID array; R&D; " + "R" + "2D2; URL1; the R language"
    )


def test_the_search_reads_text_files_and_skips_binary_ones():
    files = {path.relative_to(ROOT).as_posix() for path in text_files()}
    assert "tests/unit/test_no_rule_citations.py" in files
    assert "anole_jobs/stores/redis/scripts/finish.lua" in files
    assert not any(name.endswith(".png") for name in files)


def test_no_file_cites_a_rule_by_number():
    hits = citations()
    assert hits == [], "say the rule in words (or link the docs page):\n" + "\n".join(hits)
