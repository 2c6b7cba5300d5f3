"""docs/configuration.md is the reference of `ANOLE_JOBS`: it must document every key the
settings parser (anole_jobs/conf.py) accepts, and no key the parser would refuse. The same
holds for queue options, cron entry keys (docs/cron.md) and the system check ids."""

from __future__ import annotations

import re
from pathlib import Path

from anole_jobs import conf
from anole_jobs.schedules import ENTRY_KEYS
from tests.docs.harness import REPO

ROW_KEY = re.compile(r"^\|\s*`([^`]+)`\s*\|", re.MULTILINE)


def section(page: Path, heading: str) -> str:
    """The text under `heading` (a whole heading line) up to the next heading of any level."""
    text = page.read_text(encoding="utf-8")
    start = text.index(f"\n{heading}\n") + len(heading) + 2
    following = re.search(r"^#{1,6} ", text[start:], re.MULTILINE)
    return text[start : start + following.start()] if following else text[start:]


def table_keys(text: str) -> set[str]:
    return set(ROW_KEY.findall(text))


def test_every_settings_key_is_documented_and_no_other():
    documented = table_keys(section(REPO / "docs" / "configuration.md", "## Keys"))
    accepted = set(conf.KNOWN_KEYS)
    assert accepted - documented == set(), "keys conf.py accepts but configuration.md omits"
    assert documented - accepted == set(), "keys configuration.md documents but conf.py refuses"


def test_every_queue_option_is_documented_and_no_other():
    documented = table_keys(section(REPO / "docs" / "configuration.md", "### `QUEUES`"))
    assert documented == set(conf.QUEUE_KEYS)


def test_every_cron_entry_key_is_documented_and_no_other():
    documented = table_keys(section(REPO / "docs" / "cron.md", "## Entry options"))
    assert documented == set(ENTRY_KEYS)


def test_prune_states_are_those_the_parser_accepts():
    keys = section(REPO / "docs" / "configuration.md", "## Keys")
    prune_row = next(line for line in keys.splitlines() if line.startswith("| `PRUNE`"))
    assert set(re.findall(r'"(\w+)":', prune_row)) == set(conf.PRUNE_STATES)


def test_every_system_check_id_is_documented_and_no_other():
    code_ids: set[str] = set()
    for path in (REPO / "anole_jobs").rglob("*.py"):
        code_ids |= set(
            re.findall(r"[\"'](?:anole_jobs\.)?([EW]\d{3})[\"']", path.read_text(encoding="utf-8"))
        )
    checks = section(REPO / "docs" / "configuration.md", "## System checks")
    documented = {key.removeprefix("anole_jobs.") for key in table_keys(checks)}
    assert code_ids - documented == set(), "check ids raised in code but not documented"
    assert documented - code_ids == set(), "check ids documented but never raised"


def test_table_prefix_names_every_table_the_database_store_creates():
    from anole_jobs.stores.database.ddl import DEFAULT_PREFIX
    from anole_jobs.stores.database.frozen import sql

    keys = section(REPO / "docs" / "configuration.md", "## Keys")
    (row,) = [line for line in keys.splitlines() if line.startswith("| `TABLE_PREFIX` |")]
    documented = set(re.findall(r"`<prefix>(\w+)`", row))
    for vendor in ("postgresql", "sqlite"):
        created = {
            name.removeprefix(DEFAULT_PREFIX)
            for name in re.findall(r'CREATE TABLE (?:IF NOT EXISTS )?"([^"]+)"', sql(vendor))
        }
        assert documented == created, vendor
