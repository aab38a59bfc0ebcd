"""docs/stream-format.md: its generated op tables match the op table (tools/gen_stream_doc.py)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

from refimpl.ops import OPS

ROOT = Path(__file__).resolve().parent.parent.parent
DOC = ROOT / "docs" / "stream-format.md"


def _generator():
    spec = importlib.util.spec_from_file_location("gen_stream_doc",
                                                  ROOT / "tools" / "gen_stream_doc.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_stream_doc_generated_tables_are_up_to_date():
    gen = _generator()
    text = DOC.read_text(encoding="utf-8")
    assert gen.updated_doc(text) == text, "run: python3 tools/gen_stream_doc.py --write"


def test_stream_doc_lists_every_op_once():
    tables = _generator().render_tables()
    for op in OPS:
        assert tables.count(f"| `{op.name}` |") == 1, op.name


def test_stream_doc_detects_a_stale_table():
    gen = _generator()
    text = DOC.read_text(encoding="utf-8")
    stale = text.replace("| `Float.Exp` |", "| `Float.Expo` |")
    assert stale != text and gen.updated_doc(stale) == text
