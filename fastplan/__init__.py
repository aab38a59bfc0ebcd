"""Compiled twin of refimpl's planner: same input, identical output, faster.

The facade picks the compiled modules when they were built and import cleanly, and the
pure-Python equivalents otherwise. ``FASTPLAN_NO_EXTENSIONS=1`` forces the pure-Python side.

* ``fastplan.opinfo`` — the op table as C arrays (pure twin: ``fastplan._pure``);
* ``PLANNER_TWINS`` — the compiled twins of ``refimpl.planner``'s modules, file by file
  (``fastplan.elemwise`` mirrors ``refimpl.planner.elemwise``, ...). ``planner_module(name)``
  gives the twin, or refimpl's own module when fastplan is not compiled. refimpl's plain-data
  modules (``fuse_ir``, ``trace``, ``settings``, ``fuser``) have no twin: both sides use them.

``COMPILED`` is true only when every compiled module imported (docs/fastplan.md). The compiled
modules live in one shared library, ``fastplan/_bundle<suffix>`` (setup.py's ``BUNDLE``):
``fastplan.block`` is imported from it by its own ``PyInit_block``. A build with a library
per module (``FASTPLAN_BUNDLE=0``) is imported the usual way.
``plan(stream, device)`` is then ``fastplan.planner.plan`` (the compiled twin of
``refimpl.planner.plan``), and refimpl's own ``plan`` otherwise.
"""

import importlib
import importlib.machinery
import importlib.util
import os
import sys

from fastplan._pure import OP_TABLE, OpTable
from refimpl.planner import plan  # replaced by the compiled twin below when it imports

__all__ = [
    "COMPILED",
    "COMPILED_MODULES",
    "NO_EXTENSIONS",
    "OP_TABLE",
    "PLANNER_TWINS",
    "OpTable",
    "plan",
    "planner_module",
]

# refimpl.planner modules with a compiled twin in fastplan (of COMPILED_MODULES, below).
PLANNER_TWINS = ("relative", "builder", "scoring", "trace_fuser", "elemwise", "matmul",
                 "reduce", "reduce_broadcasted", "nhwc", "registry",
                 "strategy", "graph", "block", "merging", "repair", "search", "cache", "queue",
                 "processor",
                 "layout", "vectorization", "launch_planners", "launch_vectorize", "launch")


# fastplan's compiled modules (setup.py's MODULES), all in the bundle when it was built.
COMPILED_MODULES = ("opinfo", "relative", "builder", "scoring", "trace_fuser", "elemwise",
                    "matmul", "reduce", "reduce_broadcasted", "nhwc", "registry", "_keys",
                    "strategy", "graph", "block", "merging", "repair", "search", "_trie",
                    "cache", "queue", "processor", "planner", "layout", "vectorization",
                    "handles", "launch_planners", "launch_vectorize", "launch",
                    "launch_stream")
_BUNDLE = os.path.join(os.path.dirname(os.path.abspath(__file__)),
                       "_bundle" + importlib.machinery.EXTENSION_SUFFIXES[0])


class _BundleFinder:
    """Finds ``fastplan.<name>`` of ``COMPILED_MODULES`` in the bundle, when there is one: an
    extension loader for that name on the bundle's path calls its ``PyInit_<name>``."""

    @staticmethod
    def find_spec(fullname, path=None, target=None):
        package, _, name = fullname.partition(".")
        if package != "fastplan" or name not in COMPILED_MODULES or not os.path.exists(_BUNDLE):
            return None
        loader = importlib.machinery.ExtensionFileLoader(fullname, _BUNDLE)
        return importlib.util.spec_from_file_location(fullname, _BUNDLE, loader=loader)


# first, so that no stale library of a module shadows the bundle (a reload replaces it)
sys.meta_path[:] = [finder for finder in sys.meta_path
                    if getattr(finder, "__module__", None) != __name__]
sys.meta_path.insert(0, _BundleFinder)


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
