"""The lazy frontend: a small tensor API that records op streams as burn's Fusion decorator does.

burn counterpart: ``crates/burn-fusion`` seen from the user's side (``FusionTensor`` handles,
the ``Fusion`` backend's ops and its client's stream). The package re-exports the public names
of its modules: ``tensor`` (the Tensor API, with ``dims``: the methods along dims),
``session`` (recording and reading), ``status`` (statuses from reference counts) and
``operands`` (from a call's arguments to its op). ``docs/frontend.md`` lists every method.
"""

from refimpl.frontend.operands import DEFAULT_FLOAT, DEFAULT_INT
from refimpl.frontend.session import Executor, Session
from refimpl.frontend.status import refcount_calibration
from refimpl.frontend.tensor import FrontendError, Tensor, cat

__all__ = ["Session", "Tensor", "Executor", "FrontendError", "cat", "refcount_calibration",
           "DEFAULT_FLOAT", "DEFAULT_INT"]
