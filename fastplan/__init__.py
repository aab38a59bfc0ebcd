"""Compiled twin of refimpl's planner: same input, identical output, faster.

The facade picks the compiled modules when they were built and import cleanly, and the
pure-Python equivalents otherwise. ``FASTPLAN_NO_EXTENSIONS=1`` forces the pure-Python side.

* ``fastplan.opinfo`` — the op table as C arrays (pure twin: ``fastplan._pure``);
* ``PLANNER_TWINS`` — the compiled twins of ``refimpl.planner``'s modules, file by file
  (``fastplan.elemwise`` mirrors ``refimpl.planner.elemwise``, ...). ``planner_module(name)``
  gives the twin, or refimpl's own module when fastplan is not compiled. refimpl's plain-data
  modules (``fuse_ir``, ``trace``, ``settings``, ``fuser``) have no twin: both sides use them.

``COMPILED`` is true only when every compiled module imported (docs/fastplan.md).
``plan(stream, device)`` is then ``fastplan.planner.plan`` (the compiled twin of
``refimpl.planner.plan``), and refimpl's own ``plan`` otherwise.
"""

import importlib
import os

from fastplan._pure import OP_TABLE, OpTable
from refimpl.planner import plan  # replaced by the compiled twin below when it imports

__all__ = [
    "COMPILED",
    "NO_EXTENSIONS",
    "OP_TABLE",
    "PLANNER_TWINS",
    "OpTable",
    "plan",
    "planner_module",
]

# refimpl.planner modules with a compiled twin in fastplan (setup.py's MODULES, less opinfo).
PLANNER_TWINS = ("relative", "builder", "scoring", "trace_fuser", "elemwise", "matmul",
                 "reduce", "reduce_broadcasted", "nhwc", "registry",
                 "strategy", "graph", "block", "merging", "repair", "search", "cache", "queue",
                 "processor",
                 "layout", "vectorization", "launch_planners", "launch_vectorize", "launch")


def _flag(name: str) -> bool:
    """An environment switch: set to anything but empty or ``0``."""
    return os.environ.get(name, "") not in ("", "0")


NO_EXTENSIONS = _flag("FASTPLAN_NO_EXTENSIONS")
COMPILED = False
if not NO_EXTENSIONS:
    try:
        from fastplan.opinfo import OP_TABLE, OpTable  # the compiled module

        for _name in PLANNER_TWINS:
            importlib.import_module(f"fastplan.{_name}")
        from fastplan.planner import plan  # noqa: F811 (the compiled twin of refimpl's plan)

        COMPILED = True
    except ImportError:
        from fastplan._pure import OP_TABLE, OpTable


def planner_module(name: str):
    """The module that plays ``refimpl.planner.<name>``: fastplan's compiled twin, or (not
    compiled, or a shared plain-data module) refimpl's own."""
    if COMPILED and name in PLANNER_TWINS:
        return importlib.import_module(f"fastplan.{name}")
    return importlib.import_module(f"refimpl.planner.{name}")
