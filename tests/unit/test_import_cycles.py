"""No import circle in the package or the benchmarks: every dependency between two modules
goes one way (docs/architecture.md says which). An import inside a function or under
``TYPE_CHECKING`` counts too: it is a dependency all the same, and the one that turns into an
import-order crash the day someone moves it to the top of the file.

The graph is grimp's (the library import-linter runs on), so it sees what `lint-imports` sees.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

import grimp
import pytest

PACKAGES = ("anole_jobs", "bench")


def circles(modules: Iterable[str], imports_of: Callable[[str], Iterable[str]]) -> list[list[str]]:
    """Every group of modules that import one another, directly or not (the strongly connected
    components of more than one module, or of one module importing itself), each sorted.
    Tarjan's algorithm, without recursion: the graph is some hundreds of modules deep."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for root in sorted(modules):
        if root in index:
            continue
        work = [(root, iter(sorted(imports_of(root))))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            module, pending = work[-1]
            for target in pending:
                if target not in index:
                    index[target] = low[target] = len(index)
                    stack.append(target)
                    on_stack.add(target)
                    work.append((target, iter(sorted(imports_of(target)))))
                    break
                if target in on_stack:
                    low[module] = min(low[module], index[target])
            else:
                work.pop()
                if work:
                    parent = work[-1][0]
                    low[parent] = min(low[parent], low[module])
                if low[module] == index[module]:
                    group = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        group.append(member)
                        if member == module:
                            break
                    if len(group) > 1 or module in imports_of(module):
                        found.append(sorted(group))
    return sorted(found)


@pytest.mark.parametrize(
    ("graph", "expected"),
    [
        ({"a": {"b"}, "b": {"c"}, "c": set()}, []),
        ({"a": {"b"}, "b": {"a"}}, [["a", "b"]]),
        ({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}, [["a", "b", "c"]]),
        ({"a": {"a"}}, [["a"]]),
        ({"a": {"b"}, "b": {"a"}, "c": {"d"}, "d": {"c"}}, [["a", "b"], ["c", "d"]]),
    ],
)
def test_circles_finds_each_loop_once(
    graph: dict[str, set[str]], expected: list[list[str]]
) -> None:
    assert circles(graph, graph.__getitem__) == expected


def test_no_module_of_the_package_or_the_benchmarks_imports_itself_through_others() -> None:
    graph = grimp.build_graph(*PACKAGES, cache_dir=None)
    found = circles(graph.modules, graph.find_modules_directly_imported_by)
    described = [" <-> ".join(group) for group in found]
    assert not found, "import circles (make each dependency one-way): " + "; ".join(described)
