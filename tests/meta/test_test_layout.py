"""No module under tests/ imports a test module: shared helpers live in ``tests/<area>/helpers.py``
(or another helper module of the area, such as ``tests/planner/burn_mocks.py``), never in a
``test_*.py`` that other modules import.

Imports are read with ``ast``: at module level or inside a function, ``import`` or ``from``.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
TESTS = ROOT / "tests"


def _module_name(path: Path) -> str:
    return ".".join(path.relative_to(ROOT).with_suffix("").parts)


def imported_modules(source: str, module: str) -> list[str]:
    """Every module name ``source`` (the text of ``module``) imports; ``from a import b``
    gives both ``a`` and ``a.b``, since ``b`` may be a module."""
    names = []
    package = module.rpartition(".")[0].split(".")
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            names.extend(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package[: len(package) - (node.level - 1)]
                base = ".".join(anchor + ([base] if base else []))
            names.append(base)
            names.extend(f"{base}.{alias.name}" for alias in node.names)
    return names


def _test_module_file(name: str) -> Path | None:
    """The ``test_*.py`` file ``name`` names, if any."""
    path = ROOT.joinpath(*name.split(".")).with_suffix(".py")
    return path if path.name.startswith("test_") and path.is_file() else None


def test_imports_of_test_modules():
    """Each place a module under tests/ imports a test module other than itself."""
    found = []
    for path in sorted(TESTS.rglob("*.py")):
        module = _module_name(path)
        for name in imported_modules(path.read_text(), module):
            target = _test_module_file(name)
            if target is not None and target != path:
                found.append(f"{path.relative_to(ROOT)} imports {name}")
    assert not found, "move the shared names to tests/<area>/helpers.py:\n" + "\n".join(found)


def test_imported_modules_reads_every_form():
    source = ("import tests.a.test_x\n"
              "from tests.a.test_y import f\n"
              "from tests.a import test_z\n"
              "def g():\n    from .test_w import h\n")
    names = imported_modules(source, "tests.a.test_v")
    assert {"tests.a.test_x", "tests.a.test_y", "tests.a.test_z", "tests.a.test_w"} <= set(names)
