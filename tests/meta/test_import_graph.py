"""No import cycles in refimpl/, gpu/ and fuselab/, gpu's rooms depending one way, and no
oversized modules.

The import graph is read from the sources with ``ast``, never by importing them:

* every ``import`` counts, at module level or deferred into a function (a deferred import
  dodges a cycle at load time but keeps it in the design); only the body of an
  ``if TYPE_CHECKING:`` block is skipped, since it never runs;
* ``import a.b.c`` is an edge to ``a.b.c``; ``from a.b import c`` is an edge to ``a.b.c``
  when that is a module, else to ``a.b``;
* importing ``a.b.c`` also runs the ``__init__`` of ``a`` and ``a.b``, so there is an edge
  to each of them too (a package is a node named like the package). The importer's own
  packages are the exception: they are already being imported when it runs, so an edge to
  them adds nothing and would tie every package to whatever its ``__init__`` loads;
* only modules of the scanned packages are nodes; other imports are ignored.

gpu's rooms (style §6.2a) depend one way, ``gpu.check`` → ``gpu.runtime`` → ``gpu.codegen``,
and gpu has no cycle even through the imports that only annotations need.

Cycles are the strongly connected components of that graph with more than one node (or a
node importing itself). ``KNOWN_CYCLES`` and ``KNOWN_LARGE`` list today's offenders: each
is an expected failure that must keep failing (it turns into an error once fixed, so the
list shrinks as the work lands), and anything not listed fails at once.
"""

from __future__ import annotations

import ast
import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("refimpl", "gpu", "fuselab")  # fuselab/ may not exist yet
PACKAGE_LIMIT = 500  # lines per module in PACKAGES
REPO_LIMIT = 800  # lines per .py/.pyx/.pxd anywhere else
SOURCE_SUFFIXES = (".py", ".pyx", ".pxd")
# Not sources of ours: environments, build output, golden data.
SKIPPED_DIRS = {".venv", "build", "dist", "__pycache__", ".git", ".hypothesis"}
SKIPPED_PATHS = {"tests/golden"}
REASON = "a known cycle or oversized module, listed until it is removed"

# Today's cycles, each the sorted module names of one strongly connected component.
KNOWN_CYCLES: tuple[tuple[str, ...], ...] = (
)

# Today's files over their limit, as paths from the repository root.
KNOWN_LARGE: tuple[str, ...] = (
)


# --- the import graph --------------------------------------------------------------------------


def _module_files() -> dict[str, Path]:
    """Dotted module name → source file, for every module of ``PACKAGES``."""
    modules = {}
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            parts = path.relative_to(ROOT).with_suffix("").parts
            if "__pycache__" in parts:
                continue
            if parts[-1] == "__init__":
                parts = parts[:-1]
            modules[".".join(parts)] = path
    return modules


def _is_type_checking(test: ast.expr) -> bool:
    """``TYPE_CHECKING`` or ``typing.TYPE_CHECKING``."""
    if isinstance(test, ast.Name):
        return test.id == "TYPE_CHECKING"
    return isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"


class _Imports(ast.NodeVisitor):
    """Every name imported anywhere in a module, except under ``if TYPE_CHECKING:`` (unless
    ``type_checking``).

    ``names`` holds ``(base, member)`` pairs: ``member`` is ``None`` for ``import base``, else
    the name taken by ``from base import member`` (``base`` made absolute)."""

    def __init__(self, module: str, is_package: bool, type_checking: bool = False) -> None:
        self.package = module if is_package else module.rpartition(".")[0]
        self.type_checking = type_checking
        self.names: list[tuple[str, str | None]] = []

    def visit_If(self, node: ast.If) -> None:
        if _is_type_checking(node.test) and not self.type_checking:
            for child in node.orelse:
                self.visit(child)
        else:
            self.generic_visit(node)

    def visit_Import(self, node: ast.Import) -> None:
        self.names.extend((alias.name, None) for alias in node.names)

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        base = node.module or ""
        if node.level:
            anchor = self.package.split(".")
            anchor = anchor[: len(anchor) - (node.level - 1)]
            base = ".".join(anchor + ([base] if base else []))
        self.names.extend((base, alias.name) for alias in node.names)


def _ancestors(name: str) -> list[str]:
    """``a.b.c`` → ``["a", "a.b"]``."""
    parts = name.split(".")
    return [".".join(parts[:i]) for i in range(1, len(parts))]


def import_graph(type_checking: bool = False) -> dict[str, set[str]]:
    """Module → the scanned modules (and packages) importing it runs (``type_checking``: and
    those its annotations import)."""
    files = _module_files()
    graph: dict[str, set[str]] = {}
    for module, path in files.items():
        visitor = _Imports(module, path.name == "__init__.py", type_checking)
        visitor.visit(ast.parse(path.read_text(), str(path)))
        own = set(_ancestors(module)) | {module}
        edges = set()
        for base, member in visitor.names:
            target = f"{base}.{member}" if f"{base}.{member}" in files else base
            edges.update(name for name in [*_ancestors(target), target]
                         if name in files and name not in own)
        graph[module] = edges
    return graph


def strongly_connected(graph: dict[str, set[str]]) -> list[list[str]]:
    """Tarjan's algorithm, iterative: the graph's strongly connected components."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    components = []
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                components.append(sorted(component))
    return components


def import_cycles() -> list[tuple[str, ...]]:
    """Every cycle: components of two or more modules, or a module importing itself."""
    graph = import_graph()
    return sorted(tuple(c) for c in strongly_connected(graph)
                  if len(c) > 1 or c[0] in graph[c[0]])


# --- module sizes ------------------------------------------------------------------------------


def _sources():
    """Every .py/.pyx/.pxd of the repository, as paths from the root."""
    for directory, dirs, files in os.walk(ROOT):
        here = Path(directory).relative_to(ROOT)
        dirs[:] = sorted(d for d in dirs if d not in SKIPPED_DIRS and not d.endswith(".egg-info")
                         and (here / d).as_posix() not in SKIPPED_PATHS)
        for name in sorted(files):
            if name.endswith(SOURCE_SUFFIXES):
                yield (here / name).as_posix()


def _limit(path: str) -> int:
    return PACKAGE_LIMIT if path.split("/")[0] in PACKAGES else REPO_LIMIT


def _lines(path: str) -> int:
    """Lines of ``path`` (0 when it is gone)."""
    file = ROOT / path
    return len(file.read_text().splitlines()) if file.is_file() else 0


def large_files() -> list[str]:
    """Sources over their limit."""
    return [path for path in _sources() if _lines(path) > _limit(path)]


# --- tests -------------------------------------------------------------------------------------


def test_graph_sees_deferred_imports_and_packages():
    """The reading rules above, on modules whose imports are known."""
    graph = import_graph()
    # an import inside a function counts like one at module level
    deferred = _Imports("refimpl.example", False)
    deferred.visit(ast.parse("def f():\n    from refimpl.stream import Stream\n"))
    assert deferred.names == [("refimpl.stream", "Stream")]
    # refimpl/ir.py imports refimpl.ops only under TYPE_CHECKING
    assert "refimpl.ops" not in graph["refimpl.ir"]
    assert "refimpl.ops" in import_graph(type_checking=True)["refimpl.ir"]
    # fuselab.cli imports refimpl.planner.plan: the planner package's __init__ runs too
    assert {"refimpl.planner"} <= graph["fuselab.cli"]
    # a module's own packages are never its edges
    assert not {"refimpl", "refimpl.planner"} & graph["refimpl.planner.stream.processor"]


def test_strongly_connected_finds_cycles():
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a", "d"}, "d": set(), "e": {"e"}}
    assert sorted(strongly_connected(graph)) == [["a", "b", "c"], ["d"], ["e"]]


def test_no_new_import_cycles():
    new = [cycle for cycle in import_cycles() if cycle not in KNOWN_CYCLES]
    assert not new, "import cycles:\n" + "\n".join(" ⇄ ".join(c) for c in new)


@pytest.mark.parametrize("cycle", [
    pytest.param(cycle, id=cycle[0], marks=pytest.mark.xfail(strict=True, reason=REASON))
    for cycle in KNOWN_CYCLES])
def test_known_cycle_is_gone(cycle):
    assert cycle not in import_cycles()


# gpu's rooms, each importing only the rooms after it.
GPU_ROOMS = ("gpu.check", "gpu.runtime", "gpu.codegen")


def _room(module: str) -> str | None:
    return next((room for room in GPU_ROOMS
                 if module == room or module.startswith(room + ".")), None)


def test_gpu_rooms_depend_one_way():
    """codegen prints WGSL and runs nothing; runtime runs kernels; check holds results to the
    oracle. Annotation-only imports count: a loop hidden from the interpreter is still one."""
    graph = import_graph(type_checking=True)
    backwards = sorted(f"{module} imports {target}" for module, edges in graph.items()
                       for target in edges
                       if _room(module) and _room(target)
                       and GPU_ROOMS.index(_room(target)) < GPU_ROOMS.index(_room(module)))
    assert not backwards, "\n".join(backwards)


def test_gpu_has_no_cycles_even_in_annotations():
    graph = import_graph(type_checking=True)
    cycles = [c for c in strongly_connected(graph)
              if c[0].startswith("gpu") and (len(c) > 1 or c[0] in graph[c[0]])]
    assert not cycles, "\n".join(" ⇄ ".join(c) for c in cycles)


def test_no_new_large_modules():
    new = [f"{path}: {_lines(path)} lines (limit {_limit(path)})"
           for path in large_files() if path not in KNOWN_LARGE]
    assert not new, "\n".join(new)


@pytest.mark.parametrize("path", [
    pytest.param(path, id=path, marks=pytest.mark.xfail(strict=True, reason=REASON))
    for path in KNOWN_LARGE])
def test_known_large_module_is_small(path):
    assert _lines(path) <= _limit(path)
