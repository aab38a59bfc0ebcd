"""The build lists exactly fastplan's Cython sources, and each compiled module ships a stub."""

from __future__ import annotations

import ast
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _setup_modules() -> list[str]:
    """The ``MODULES`` list of setup.py, read without running setup.py."""
    tree = ast.parse((ROOT / "setup.py").read_text())
    for node in tree.body:
        if isinstance(node, ast.Assign) and [t.id for t in node.targets] == ["MODULES"]:
            return ast.literal_eval(node.value)
    raise AssertionError("setup.py has no MODULES list")


def test_setup_modules_match_pyx_files():
    """MODULES names every .pyx under fastplan/, subfolders included, by its dotted name."""
    pyx = sorted(".".join(path.relative_to(ROOT / "fastplan").with_suffix("").parts)
                 for path in (ROOT / "fastplan").rglob("*.pyx"))
    assert sorted(_setup_modules()) == pyx


def test_bundle_init_symbols_are_unique():
    """The bundle holds every module's ``PyInit_<last part of its name>``: no two may clash."""
    last_parts = [name.rpartition(".")[2] for name in _setup_modules()]
    assert sorted(last_parts) == sorted(set(last_parts))


def test_fastplan_bundles_the_modules_setup_builds():
    """fastplan's finder serves exactly the modules setup.py links into the bundle."""
    import fastplan

    assert list(fastplan.COMPILED_MODULES) == _setup_modules()


def test_compiled_modules_ship_a_stub():
    for name in _setup_modules():
        assert (ROOT / "fastplan" / f"{name.replace('.', '/')}.pyi").is_file(), name


def test_pyproject_ships_stubs_and_declarations():
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())
    data = config["tool"]["setuptools"]["package-data"]["fastplan"]
    assert {"*.pxd", "*.pyi", "py.typed", "*/*.pxd", "*/*.pyi"} <= set(data)
    assert config["project"]["scripts"]["fuselab"] == "fuselab.cli:main"
