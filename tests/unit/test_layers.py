"""The layers keep their word in attribute access too, which import-linter cannot see: the
surfaces (the JSON routes, the dashboard, the Django admin, ``manage.py jobs``, the
``django.tasks`` backend) and `anole_jobs.operations` reach jobs only through the `jobs`
facade's own methods, never `jobs.service` (and through it the store). ``runjobs`` is the
runtime's entry point, not a surface: it starts the service the facade holds."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "anole_jobs"
SURFACES = ("operations", "admin_api", "dashboard", "management", "tasks", "admin.py")
NOT_A_SURFACE = {PACKAGE / "management" / "commands" / "runjobs.py"}
#: What only the facade itself may touch.
BEHIND_THE_FACADE = {"service", "store", "_service"}


def surface_files() -> list[Path]:
    found = []
    for name in SURFACES:
        path = PACKAGE / name
        found += [path] if path.is_file() else sorted(path.rglob("*.py"))
    return [path for path in found if path not in NOT_A_SURFACE]


def reaches_behind(tree: ast.AST) -> list[str]:
    """``jobs.service``-like attribute reads: an attribute behind the facade, read on any
    object (``jobs.service``, ``facade.service.store``)."""
    return [
        f"line {node.lineno}: .{node.attr}"
        for node in ast.walk(tree)
        if isinstance(node, ast.Attribute) and node.attr in BEHIND_THE_FACADE
    ]


def test_the_check_sees_a_reach_behind_the_facade() -> None:
    tree = ast.parse("stride = jobs.service.store.id_stride\nnow = jobs.now()")
    assert reaches_behind(tree) == ["line 1: .store", "line 1: .service"]


def test_no_surface_reaches_behind_the_facade() -> None:
    files = surface_files()
    assert len(files) > 30  # the search found the surfaces
    found = {}
    for path in files:
        hits = reaches_behind(ast.parse(path.read_text(), str(path)))
        if hits:
            found[str(path.relative_to(PACKAGE.parent))] = hits
    assert not found, f"call a facade method instead (add one to api.py if needed): {found}"
