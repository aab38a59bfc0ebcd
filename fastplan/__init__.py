"""Compiled twin of refimpl's planner: same input, identical output, faster.

The facade picks the compiled modules when they were built and imports cleanly, and the
pure-Python equivalents otherwise. ``FASTPLAN_NO_EXTENSIONS=1`` forces the pure-Python side.
So far one module is compiled: the op table, ``fastplan.opinfo`` (twin: ``fastplan._pure``).
"""

import os

from fastplan._pure import OP_TABLE, OpTable

__all__ = ["COMPILED", "NO_EXTENSIONS", "OP_TABLE", "OpTable"]


def _flag(name: str) -> bool:
    """An environment switch: set to anything but empty or ``0``."""
    return os.environ.get(name, "") not in ("", "0")


NO_EXTENSIONS = _flag("FASTPLAN_NO_EXTENSIONS")
COMPILED = False
if not NO_EXTENSIONS:
    try:
        from fastplan.opinfo import OP_TABLE, OpTable  # the compiled module

        COMPILED = True
    except ImportError:
        pass
