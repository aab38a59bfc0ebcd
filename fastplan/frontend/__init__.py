"""The frontend room of fastplan: the lazy frontend with its recording path compiled.

Mirrors ``refimpl/frontend/__init__.py``: the same names, with ``Session`` fastplan's when
fastplan is compiled and refimpl's otherwise (``FASTPLAN_NO_EXTENSIONS=1``), and
``refcount_calibration`` that session's table. The room's modules stand where the time goes:
``session`` (``Session`` with ``_record``, ``_commit`` and ``_drop`` compiled), ``status``
(its status rule, calibrated on it) and ``tensor`` (the handle its ops return: refimpl's
``Tensor`` with ``__del__`` compiled). Everything else (``Tensor``'s methods, ``cat``, the
operand helpers) is refimpl's own, so that both record the same stream, byte for byte, and
raise the same errors. ``frontend_module(name)`` gives fastplan's module standing for
``refimpl.frontend.<name>``, or refimpl's own.

burn counterpart: ``crates/burn-fusion`` seen from the user's side, as ``refimpl.frontend``.
"""

import importlib

import fastplan
from refimpl.frontend import (DEFAULT_FLOAT, DEFAULT_INT, Executor, FrontendError, Session,
                              Tensor, cat, refcount_calibration)

__all__ = ["FRONTEND_TWINS", "Session", "Tensor", "Executor", "FrontendError", "cat",
           "frontend_module", "refcount_calibration", "DEFAULT_FLOAT", "DEFAULT_INT"]

# refimpl.frontend modules with a compiled twin in fastplan.frontend (same names)
FRONTEND_TWINS = ("session", "status", "tensor")

if fastplan.COMPILED:
    from fastplan.frontend.session import Session  # noqa: F811 (the compiled twin)
    from fastplan.frontend.status import refcount_calibration  # noqa: F811


def frontend_module(name: str):
    """The module that plays ``refimpl.frontend.<name>`` (``name``: one of
    ``FRONTEND_TWINS``): fastplan's compiled twin, or refimpl's own when not compiled."""
    if name not in FRONTEND_TWINS:
        raise ValueError(f"no frontend twin {name!r} (one of {', '.join(FRONTEND_TWINS)})")
    if fastplan.COMPILED:
        return importlib.import_module(f"fastplan.frontend.{name}")
    return importlib.import_module(f"refimpl.frontend.{name}")
