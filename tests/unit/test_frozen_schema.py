"""The schema's history is frozen: each migration's SQL lives in its own files, which never
change once released (a change is a new migration), and every migration that runs SQL of its
own runs those files."""

from __future__ import annotations

import hashlib
import importlib
import re
from importlib import resources
from pathlib import Path

import pytest

from anole_jobs.stores.database import frozen
from anole_jobs.stores.database.ddl import VENDORS

SQL_DIR = Path(str(resources.files("anole_jobs.migrations").joinpath("sql")))
MIGRATIONS_DIR = SQL_DIR.parent


def manifest() -> dict[str, str]:
    lines = (SQL_DIR / "MANIFEST.sha256").read_text().splitlines()
    return {
        name: digest
        for digest, name in (line.split() for line in lines if line and not line.startswith("#"))
    }


def frozen_problems(directory: Path, recorded: dict[str, str]) -> list[str]:
    """What differs between the frozen files in `directory` and their recorded checksums."""
    problems = []
    files = {path.name: path for path in directory.glob("*.sql")}
    for name, path in sorted(files.items()):
        digest = hashlib.sha256(path.read_bytes()).hexdigest()
        if name not in recorded:
            problems.append(f"{name} is not in MANIFEST.sha256: add its line (sha256sum {name})")
        elif recorded[name] != digest:
            problems.append(
                f"{name} changed: a frozen migration file is history (databases already ran"
                " it as it was). Put it back and write a new migration instead, with new"
                " files and their lines in MANIFEST.sha256"
            )
    problems += [
        f"{name} is in MANIFEST.sha256 but missing" for name in recorded if name not in files
    ]
    return problems


def test_no_frozen_file_changed() -> None:
    problems = frozen_problems(SQL_DIR, manifest())
    assert not problems, "\n".join(problems)


def test_an_edited_frozen_file_fails_with_write_a_new_migration(tmp_path: Path) -> None:
    for path in SQL_DIR.glob("*.sql"):
        (tmp_path / path.name).write_bytes(path.read_bytes())
    edited = tmp_path / "0009_stat_rows.postgresql.up.sql"
    edited.write_text(edited.read_text().replace("RETURN NULL;", "RETURN NULL; -- tweak", 1))
    [problem] = frozen_problems(tmp_path, manifest())
    assert problem.startswith("0009_stat_rows.postgresql.up.sql changed")
    assert "write a new migration instead" in problem


def migration_names() -> list[str]:
    return sorted(path.stem for path in MIGRATIONS_DIR.glob("0*.py"))


def test_every_migration_has_its_frozen_files_and_sql_lists_them_all() -> None:
    names = migration_names()
    assert [name for name, _ in frozen.MIGRATIONS] == names
    for name in names:
        for vendor in VENDORS:
            frozen.read(name, vendor, "up")  # raises LookupError when missing


def test_migrations_run_their_own_files_and_import_no_generator() -> None:
    """A migration may use the schema's names (they derive from the prefix) but no SQL built
    by today's code: its SQL is its files (RunFrozenSQL) or Django's own operations."""
    for name in migration_names():
        source = (MIGRATIONS_DIR / f"{name}.py").read_text()
        imported = set(re.findall(r"from anole_jobs\S* import \(?([^)\n]*)", source))
        names = {part.strip() for group in imported for part in group.split(",") if part.strip()}
        assert names <= {
            "configured",
            "index_name",
            "tables",
            "unique_lock_name",
            "RunFrozenSQL",
        }, (
            name,
            names,
        )
        module = importlib.import_module(f"anole_jobs.migrations.{name}")
        for operation in _operations(module.Migration.operations):
            if isinstance(operation, frozen.RunFrozenSQL):
                assert operation.migration == name
                for vendor in VENDORS:
                    frozen.read(name, vendor, "down")


def _operations(operations: list[object]) -> list[object]:
    found: list[object] = []
    for operation in operations:
        found.append(operation)
        found += _operations(getattr(operation, "database_operations", []))
    return found


@pytest.mark.parametrize("prefix", ["anole_jobs_", "custom_", "p" * 52 + "_"])
def test_every_name_in_the_frozen_files_follows_the_prefix(prefix: str) -> None:
    for name, _ in frozen.MIGRATIONS:
        for vendor in VENDORS:
            for direction in ("up", "down"):
                try:
                    found = frozen.statements(name, vendor, direction, prefix)  # type: ignore[arg-type]
                except LookupError:
                    continue
                if prefix != "anole_jobs_":
                    assert not any('"anole_jobs_' in statement for statement in found)


def test_a_name_the_loader_does_not_know_is_refused() -> None:
    with pytest.raises(ValueError, match="anole_jobs_surprise"):
        frozen.rename('CREATE TABLE "anole_jobs_surprise" (id int)', "custom_")


def test_statements_split_at_the_end_of_each_statement_not_inside_a_body() -> None:
    text = (
        "-- a comment\n"
        'CREATE TABLE "t" (\n    "a" int\n);\n'
        "CREATE FUNCTION f() RETURNS int LANGUAGE plpgsql AS $body$\nBEGIN\n"
        "    RETURN 1;\nEND\n$body$;\n"
        'CREATE TRIGGER "x" AFTER INSERT ON "t" BEGIN\n    SELECT 1;\nEND;\n'
    )
    assert frozen.split(text) == [
        'CREATE TABLE "t" (\n    "a" int\n)',
        "CREATE FUNCTION f() RETURNS int LANGUAGE plpgsql AS $body$\nBEGIN\n"
        "    RETURN 1;\nEND\n$body$",
        'CREATE TRIGGER "x" AFTER INSERT ON "t" BEGIN\n    SELECT 1;\nEND',
    ]
    with pytest.raises(ValueError, match="ends inside a statement"):
        frozen.split("CREATE FUNCTION f() AS $body$\nBEGIN;\n")


def test_the_production_schema_has_no_benchmark_switch() -> None:
    import inspect

    from anole_jobs.stores.database import ddl

    for module in (ddl, frozen):
        assert "stats: bool" not in inspect.getsource(module)
        assert "keep_table" not in inspect.getsource(module)


def test_the_package_data_ships_every_frozen_file() -> None:
    """A wheel without them would install migrations that cannot run (a wheel built from this
    tree holds the 36 .sql files and the manifest)."""
    import fnmatch
    import tomllib

    root = MIGRATIONS_DIR.parents[1]
    pyproject = tomllib.loads((root / "pyproject.toml").read_text())
    patterns = pyproject["tool"]["setuptools"]["package-data"]["anole_jobs"]
    for path in SQL_DIR.iterdir():
        relative = f"migrations/sql/{path.name}"
        assert any(fnmatch.fnmatch(relative, pattern) for pattern in patterns), relative
