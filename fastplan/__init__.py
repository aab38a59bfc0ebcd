"""Compiled twin of refimpl's planner: same input, identical output, faster.

The facade picks the compiled modules when they were built and import cleanly, and the
pure-Python equivalents otherwise. ``FASTPLAN_NO_EXTENSIONS=1`` forces the pure-Python side.

* ``fastplan.opinfo`` — the op table as C arrays (pure twin: ``fastplan._pure``);
* ``PLANNER_TWINS`` — the compiled twins of ``refimpl.planner``'s modules, file by file, each
  named by its room and module (``"fusers.elemwise"``: ``fastplan.fusers.elemwise`` mirrors
  ``refimpl.planner.fusers.elemwise``, ...). ``planner_module(name)`` gives the twin, or
  refimpl's own module when fastplan is not compiled. refimpl's plain-data modules
  (``engine.fuse_ir``, ``engine.trace``, ``engine.settings``, ``engine.fuser``) have no twin:
  both sides use them.

``COMPILED`` is true only when every compiled module imported (docs/fastplan.md). The compiled
modules live in one shared library, ``fastplan/_bundle<suffix>`` (setup.py's ``BUNDLE_NAME``):
``fastplan.search.block`` is imported from it by its own ``PyInit_block``; there is no other
layout.
``plan(stream, device)`` is then ``fastplan.planner.plan`` (the compiled twin of
``refimpl.planner.plan``), and refimpl's own ``plan`` otherwise.

* ``INGEST_TWINS`` — the compiled twins of ``refimpl.stream`` and ``refimpl.validate``
  (``fastplan.ingest.stream``, ``fastplan.ingest.validate``); ``ingest_module(name)`` gives the
  twin, or refimpl's module when fastplan is not compiled. ``load_stream``,
  ``stream_from_json`` and ``validate_stream`` here are the twins' (or refimpl's).
"""

import importlib
import importlib.machinery
import importlib.util
import os
import sys

from fastplan._pure import OP_TABLE, OpTable
from refimpl.planner import plan  # replaced by the compiled twin below when it imports
from refimpl.stream import load_stream, stream_from_json  # replaced below, as plan
from refimpl.validate import validate_stream  # replaced below, as plan

__all__ = [
    "COMPILED",
    "COMPILED_MODULES",
    "INGEST_TWINS",
    "NO_EXTENSIONS",
    "OP_TABLE",
    "PLANNER_TWINS",
    "OpTable",
    "ingest_module",
    "load_stream",
    "plan",
    "planner_module",
    "stream_from_json",
    "validate_stream",
]

# refimpl.planner modules with a compiled twin in fastplan (of COMPILED_MODULES, below), as
# "<room>.<module>": the same name under refimpl.planner and under fastplan.
PLANNER_TWINS = ("stream.relative", "engine.builder", "engine.scoring", "engine.trace_fuser",
                 "fusers.elemwise", "fusers.matmul", "fusers.reduce",
                 "fusers.reduce_broadcasted", "fusers.nhwc", "fusers.registry",
                 "search.strategy", "search.graph", "search.block", "search.merging",
                 "search.repair", "search.search", "stream.cache", "stream.queue",
                 "stream.processor", "stream.incremental",
                 "launch.layout", "launch.vectorization", "launch.launch_planners",
                 "launch.launch_vectorize", "launch.launch")

# refimpl's stream reader and spec checker, by their names under refimpl, with their compiled
# twins fastplan.ingest.<name>.
INGEST_TWINS = ("stream", "validate")


# fastplan's compiled modules (setup.py's MODULES), by their names under fastplan, all in the
# bundle when it was built.
COMPILED_MODULES = ("opinfo", "stream.relative", "engine.builder_alloc",
                    "engine.builder_cores", "engine.builder_boundary", "engine.builder",
                    "engine.scoring", "engine.trace_fuser_cores", "engine.trace_fuser",
                    "fusers.elemwise", "fusers.matmul", "fusers.reduce",
                    "fusers.reduce_broadcasted_full", "fusers.reduce_broadcasted", "fusers.nhwc",
                    "fusers.registry", "_keys",
                    "search.strategy", "search.graph", "search.block", "search.merging",
                    "search.repair", "search.search", "stream._trie", "stream.cache",
                    "stream.queue", "stream.queue_execution", "stream.queue_relative",
                    "stream.processor", "planner", "launch.layout",
                    "launch.vectorization", "launch.handles_layouts", "launch.handles_ops",
                    "launch.handles", "launch.launch_planners_output", "launch.launch_planners",
                    "launch.launch_vectorize", "launch.launch", "launch.launch_memo",
                    "launch.execute", "ingest.validate", "ingest.stream", "stream.incremental",
                    "frontend.status", "frontend.tensor", "frontend.session")
_BUNDLE = os.path.join(os.path.dirname(os.path.abspath(__file__)),
                       "_bundle" + importlib.machinery.EXTENSION_SUFFIXES[0])


class _BundleFinder:
    """Finds ``fastplan.<name>`` of ``COMPILED_MODULES`` in the bundle, when there is one: an
    extension loader for that full dotted name on the bundle's path calls the ``PyInit_`` of
    its last part (``fastplan.search.block``: ``PyInit_block``; setup.py keeps them unique)."""

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
        from fastplan.ingest.stream import load_stream, stream_from_json  # noqa: F811
        from fastplan.ingest.validate import validate_stream  # noqa: F811

        COMPILED = True
    except ImportError:
        from fastplan._pure import OP_TABLE, OpTable


def planner_module(name: str):
    """The module that plays ``refimpl.planner.<name>`` (``name``: ``"<room>.<module>"``):
    fastplan's compiled twin, or (not compiled, or a shared plain-data module) refimpl's own."""
    if COMPILED and name in PLANNER_TWINS:
        return importlib.import_module(f"fastplan.{name}")
    return importlib.import_module(f"refimpl.planner.{name}")


def ingest_module(name: str):
    """The module that plays ``refimpl.<name>`` (``name``: one of ``INGEST_TWINS``):
    fastplan's compiled twin, or refimpl's own when fastplan is not compiled."""
    if name not in INGEST_TWINS:
        raise ValueError(f"no ingest twin {name!r} (one of {', '.join(INGEST_TWINS)})")
    if COMPILED:
        return importlib.import_module(f"fastplan.ingest.{name}")
    return importlib.import_module(f"refimpl.{name}")
