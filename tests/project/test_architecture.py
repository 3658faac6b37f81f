"""The tree keeps its shape: no module imports in a circle, and the layers
of the import contract in pyproject.toml hold (`lint-imports` checks them
in CI too; here they fail the test suite as well)."""

from __future__ import annotations

import grimp
import pytest


@pytest.fixture(scope="module")
def graph() -> grimp.ImportGraph:
    return grimp.build_graph("parsers", "gateway", exclude_type_checking_imports=True)


def _circles(graph: grimp.ImportGraph) -> list[list[str]]:
    """The strongly connected groups of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    circles: list[list[str]] = []

    def visit(module: str) -> None:
        index[module] = low[module] = len(index)
        stack.append(module)
        for imported in graph.find_modules_directly_imported_by(module):
            if imported not in index:
                visit(imported)
                low[module] = min(low[module], low[imported])
            elif imported in stack:
                low[module] = min(low[module], index[imported])
        if low[module] == index[module]:
            group = []
            while True:
                member = stack.pop()
                group.append(member)
                if member == module:
                    break
            if len(group) > 1:
                circles.append(sorted(group))

    for module in sorted(graph.modules):
        if module not in index:
            visit(module)
    return circles


def test_no_module_imports_in_a_circle(graph):
    assert _circles(graph) == []


def test_the_circle_finder_sees_a_circle():
    graph = grimp.ImportGraph()
    for module in ("a", "b", "c"):
        graph.add_module(module)
    graph.add_import(importer="a", imported="b")
    graph.add_import(importer="b", imported="a")
    graph.add_import(importer="b", imported="c")
    assert _circles(graph) == [["a", "b"]]


LOWER_TO_UPPER = [
    ("parsers", "gateway"),
    ("parsers.core", "parsers.stages"),
    ("parsers.core", "parsers.grammars"),
    ("parsers.stages", "parsers.grammars"),
    ("parsers.grammars", "parsers.stages"),
    ("parsers.stages", "parsers.formats"),
    ("parsers.grammars", "parsers.formats"),
    ("gateway.ops", "gateway.plan"),
    ("gateway.ops", "gateway.templates"),
    ("gateway.ops", "gateway.upstream"),
    ("gateway.ops", "gateway.api"),
    ("gateway.plan", "gateway.templates"),
    ("gateway.templates", "gateway.plan"),
    ("gateway.plan", "gateway.upstream"),
    ("gateway.templates", "gateway.upstream"),
    ("gateway.plan", "gateway.api"),
    ("gateway.templates", "gateway.api"),
    ("gateway.upstream", "gateway.api"),
]


@pytest.mark.parametrize(("importer", "upper"), LOWER_TO_UPPER)
def test_lower_layers_do_not_reach_up(graph, importer, upper):
    assert not graph.chain_exists(importer, upper, as_packages=True)
