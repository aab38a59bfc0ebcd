# cython: language_level=3
"""The tensor handle of the compiled recorder: refimpl's ``Tensor`` with its ``__del__``
compiled.

burn counterpart: ``FusionTensor`` (``crates/burn-fusion/src/tensor.rs``: the reference-counted
handle and the ``Drop`` it registers), as for ``refimpl/frontend/tensor.py``.
Mirrors ``refimpl/frontend/tensor.py``: ``Tensor`` is a subclass of refimpl's, with no field
of its own; every method is refimpl's but ``__del__``, which does what refimpl's does (one
handle less; the last one of a tensor never consumed asks its session for ``Drop``). A handle
dies at every op a program records, so its finaliser runs as often as ops are recorded.
``fastplan.frontend.session.Session`` makes its ops' handles of this class, and ``clone`` and
``move`` keep a handle's class: a session never mixes the two classes, whose comparisons
Python would otherwise dispatch to the subclass first (``a < b`` recorded as ``b > a``).
"""

from refimpl.frontend import tensor as _ref

__all__ = ["Tensor"]


class Tensor(_ref.Tensor):
    """A handle to a lazily recorded tensor (refimpl's, with ``__del__`` compiled)."""

    __slots__ = ()

    def __del__(self):
        state = getattr(self, "_state", None)
        if state is None or self._moved:
            return
        state.handles -= 1
        if state.handles == 0 and state.consumed_at is None:
            state.session._drop(state)
