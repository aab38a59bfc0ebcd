"""fastplan's generated C holds no reference handed to a tuple or list that Cython made for
the call and drops after it.

``Py_INCREF(x); PyTuple_SET_ITEM(t, i, x)`` is right for a Python object ``x``. Where Cython
infers a C integer for ``x`` (``x = p[i]`` over an ``int64_t*``), each of the two calls converts
it to a new int of its own, and the one the container steals is released right after: the
container then holds a freed object for every value past CPython's small-int cache (256). Two
such places were found (``block.op_flow``, ``queue._tensor_at``); this scan keeps the pattern
out of every module.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import fastplan

ROOT = Path(__file__).resolve().parents[2]
SOURCES = sorted((ROOT / "build").glob("cython*/fastplan/**/*.c"))  # the rooms' too

pytestmark = pytest.mark.skipif(not (fastplan.COMPILED and SOURCES),
                                reason="fastplan's generated C is not here")

# a temporary given to a stealing setter, then released: the container's item is freed
STOLEN_TEMP = re.compile(
    r"Py(?:Tuple|List)_SET_ITEM\([^;]*?, (__pyx_t_\d+)\);\n\s*__Pyx_DECREF\(\1\)")
# a temporary made only to take a reference on it, released at once: a leaked int
INCREF_TEMP = re.compile(r"Py_INCREF\((__pyx_t_\d+)\);\n\s*__Pyx_DECREF\(\1\)")


def findings(text: str) -> list[str]:
    return [m.group(0).split("\n")[0].strip()
            for pattern in (STOLEN_TEMP, INCREF_TEMP) for m in pattern.finditer(text)]


def test_the_scan_finds_the_pattern():
    """The scan flags what Cython writes for an int64_t handed to the two calls."""
    text = ("    __pyx_t_1 = __Pyx_PyLong_From_int64_t(__pyx_v_dim);\n"
            "    Py_INCREF(__pyx_t_1);\n    __Pyx_DECREF(__pyx_t_1); __pyx_t_1 = 0;\n"
            "    __pyx_t_1 = __Pyx_PyLong_From_int64_t(__pyx_v_dim);\n"
            "    PyTuple_SET_ITEM(__pyx_v_shape, __pyx_v_i, __pyx_t_1);\n"
            "    __Pyx_DECREF(__pyx_t_1); __pyx_t_1 = 0;\n")
    assert len(findings(text)) == 2
    fine = ("    Py_INCREF(__pyx_v_dim);\n"
            "    PyTuple_SET_ITEM(__pyx_v_shape, __pyx_v_i, __pyx_v_dim);\n")
    assert findings(fine) == []


@pytest.mark.parametrize("source", SOURCES,
                         ids=lambda p: p.relative_to(ROOT / "build").as_posix())
def test_no_container_steals_a_temporary(source):
    assert findings(source.read_text()) == []
