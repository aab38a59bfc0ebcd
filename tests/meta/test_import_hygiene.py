"""The libraries import no application code: ``refimpl`` imports neither ``argparse``, ``gpu``,
``fastplan`` nor ``fuselab``; ``gpu`` and ``fastplan`` import neither ``fuselab`` nor
``argparse``. The command line, the demo and the benchmarks are ``fuselab``'s.

Each import runs in a fresh interpreter, where nothing else has loaded anything. hypothesis
(``refimpl.strategies``) imports ``argparse`` itself, through ``unittest``: there the probe
records who executes ``import argparse``, and no module of the libraries may. A static scan
of the sources also catches imports deferred into functions, which importing never runs.
Within fuselab, only ``python -m fuselab`` imports the command line.
"""

from __future__ import annotations

import ast
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
LIBRARIES = ("refimpl", "gpu", "fastplan")

# Imports the modules named on the command line; prints every module loaded and, for each
# import statement (or importlib.import_module) executed, the importing module and the target.
_PROBE = r"""
import builtins, importlib, json, sys

executed = []
real_import, real_import_module = builtins.__import__, importlib.import_module


def watched_import(name, globals=None, locals=None, fromlist=(), level=0):
    executed.append(((globals or {}).get("__name__", "?"), name if level == 0 else "." + name))
    return real_import(name, globals, locals, fromlist, level)


def watched_import_module(name, package=None):
    executed.append((sys._getframe(1).f_globals.get("__name__", "?"), name))
    return real_import_module(name, package)


builtins.__import__, importlib.import_module = watched_import, watched_import_module
for name in sys.argv[1:]:
    real_import_module(name)
print(json.dumps({"loaded": sorted(sys.modules), "executed": executed}))
"""


def _module_paths(package: str) -> dict[str, Path]:
    """The package and every Python module in it: dotted name -> source file."""
    found = {}
    for path in sorted((ROOT / package).rglob("*.py")):
        parts = path.relative_to(ROOT).with_suffix("").parts
        found[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return found


def _modules(package: str) -> list[str]:
    return list(_module_paths(package))


def _probe(modules: list[str]) -> tuple[set[str], list[tuple[str, str]]]:
    """Import ``modules`` in a fresh interpreter (this checkout first on the path): the
    modules it loaded, and (importer, target) per import executed."""
    done = subprocess.run([sys.executable, "-c", _PROBE, *modules], cwd=ROOT,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    found = json.loads(done.stdout.splitlines()[-1])
    return set(found["loaded"]), [tuple(pair) for pair in found["executed"]]


def _top(name: str) -> str:
    return name.split(".")[0]


def _loaded(loaded: set[str], packages: tuple[str, ...]) -> list[str]:
    return sorted(name for name in loaded if _top(name) in packages)


def test_import_refimpl_loads_no_argparse_gpu_fastplan_or_fuselab():
    loaded, _ = _probe(["refimpl"])
    assert _loaded(loaded, ("argparse", "gpu", "fastplan", "fuselab")) == []


def test_refimpl_modules_load_no_gpu_fastplan_or_fuselab_and_import_no_argparse():
    modules = _modules("refimpl")
    assert "refimpl.strategies" in modules and "refimpl.planner.search.search" in modules
    loaded, executed = _probe(modules)
    assert _loaded(loaded, ("gpu", "fastplan", "fuselab")) == []
    assert [(who, what) for who, what in executed
            if _top(who) == "refimpl" and _top(what) == "argparse"] == []


def test_refimpl_modules_without_hypothesis_load_no_argparse():
    modules = [name for name in _modules("refimpl") if not name.startswith("refimpl.strategies")]
    loaded, _ = _probe(modules)
    assert "hypothesis" not in loaded
    assert _loaded(loaded, ("argparse", "gpu", "fastplan", "fuselab")) == []


@pytest.mark.parametrize("package", ["gpu", "fastplan"])
def test_gpu_and_fastplan_load_no_argparse_and_no_fuselab(package):
    modules = _modules(package)
    loaded, _ = _probe(modules)
    assert set(modules) <= loaded
    assert _loaded(loaded, ("argparse", "fuselab")) == []


# --- the sources, deferred imports included ---------------------------------------------------

# What each library must not import anywhere, not even inside a function.
FORBIDDEN = {
    "refimpl": {"argparse", "fuselab", "gpu", "fastplan"},
    "gpu": {"argparse", "fuselab", "fastplan"},
    "fastplan": {"argparse", "fuselab"},
}
# import lines of Cython sources (``cimport`` included), which ``ast`` cannot parse
_PYX_IMPORT = re.compile(r"^\s*(?:from\s+([\w.]+)\s+c?import|c?import\s+([\w.]+))", re.M)


def _imported(path: Path) -> set[str]:
    """The top-level package of every module ``path`` imports, wherever the import is."""
    text = path.read_text()
    if path.suffix in (".pyx", ".pxd"):
        return {_top(a or b) for a, b in _PYX_IMPORT.findall(text)}
    found = set()
    for node in ast.walk(ast.parse(text, str(path))):
        if isinstance(node, ast.Import):
            found.update(_top(alias.name) for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.add(_top(node.module))
    return found


@pytest.mark.parametrize("package", LIBRARIES)
def test_library_sources_import_no_application_code(package):
    offending = {}
    for path in sorted((ROOT / package).rglob("*")):
        if path.suffix in (".py", ".pyx", ".pxd"):
            bad = _imported(path) & FORBIDDEN[package]
            if bad:
                offending[str(path.relative_to(ROOT))] = sorted(bad)
    assert offending == {}


def _fuselab_imports(path: Path, modules: set[str]) -> set[str]:
    """The modules of fuselab that ``path`` imports, wherever the import is."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.add(node.module)
            found.update(f"{node.module}.{alias.name}" for alias in node.names)
    return found & modules


def test_only_python_dash_m_imports_the_command_line():
    """fuselab.cli is the top of the application: it passes what the other modules need down
    to them (tables, judges), and none of them imports it, not even inside a function.
    Import cycles in fuselab/ are tests/meta/test_import_graph.py's."""
    modules = _module_paths("fuselab")
    importers = [name for name, path in sorted(modules.items())
                 if "fuselab.cli" in _fuselab_imports(path, set(modules))]
    assert importers == ["fuselab.__main__"]
