"""docs/porting.md is what tools/gen_porting.py writes from the module docstrings."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import fastplan

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "porting.md"


def _generator():
    spec = importlib.util.spec_from_file_location("gen_porting", ROOT / "tools" / "gen_porting.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up while being made
    spec.loader.exec_module(module)
    return module


def test_porting_doc_is_up_to_date():
    assert DOC.read_text(encoding="utf-8") == _generator().render(), (
        "docs/porting.md is stale: run python3 tools/gen_porting.py")


def test_every_fastplan_twin_reference_names_a_refimpl_module():
    assert _generator().unresolved_twins() == []


def test_every_compiled_planner_twin_is_found():
    """Each twin of ``fastplan.PLANNER_TWINS`` is read as mirroring the refimpl module of its
    own room and name."""
    gen = _generator()
    twins = gen.fastplan_twins(gen.modules("refimpl", (".py",)),
                               gen.modules("fastplan", (".pyx", ".py")))
    found = {twin: ref for ref, paths in twins.by_refimpl.items() for twin in paths}
    for name in fastplan.PLANNER_TWINS:
        path = name.replace(".", "/")
        assert found[f"fastplan/{path}.pyx"] == f"refimpl/planner/{path}.py", name


def test_rows_follow_modules_into_subfolders(tmp_path, monkeypatch):
    """A module moved into a subfolder keeps its row, under its new path, and a twin that
    still names the old path finds it by its file name."""
    gen = _generator()
    (tmp_path / "refimpl" / "planner" / "search").mkdir(parents=True)
    (tmp_path / "refimpl" / "planner" / "search" / "block.py").write_text(
        '"""Blocks.\n\nburn counterpart: ``crates/burn-fusion/src/search/block.rs`` (``Block``)\n'
        'and ``.../search/merging.rs``.\n"""\n')
    (tmp_path / "fastplan").mkdir()
    (tmp_path / "fastplan" / "block.pyx").write_text(
        '# cython: language_level=3\n"""Blocks, compiled.\n\n'
        'Mirrors ``refimpl/planner/block.py``: same names.\n"""\n')
    (tmp_path / "gpu" / "kernels").mkdir(parents=True)
    (tmp_path / "gpu" / "kernels" / "copy.py").write_text(
        '"""Copies.\n\nburn counterpart: none (a test module).\n"""\n')
    monkeypatch.setattr(gen, "ROOT", tmp_path)
    text = gen.render()
    assert ("| `refimpl/planner/search/block.py` | `crates/burn-fusion/src/search/block.rs`, "
            "`crates/burn-fusion/src/search/merging.rs` | `fastplan/block.pyx` |") in text
    assert "| `gpu/kernels/copy.py` | none (a test module) |" in text
    assert gen.unresolved_twins() == []
