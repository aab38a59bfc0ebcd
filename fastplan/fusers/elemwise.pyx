# cython: language_level=3
"""The ElementWise fuser: one block of element-wise ops, one ``elemwise_fuse`` kernel.

burn counterpart: ``crates/burn-cubecl-fusion/src/optim/elemwise/fuser.rs``
(``ElementWiseFuser``) and ``optim/elemwise/optimization.rs`` (``ElemwiseOptimization``);
notes §3, §5. Mirrors ``refimpl/planner/fusers/elemwise.py``: same names, same order, same
results.
``FusedOptimization`` and ``ElemwiseOptimization`` are refimpl's own classes (plain data: the
twins must return equal objects, so they return the same classes).
"""

cimport cython

from fastplan.engine.trace_fuser cimport TraceOperationFuser
from fastplan.engine.trace_fuser_cores cimport tof_fuse
from fastplan.stream.relative cimport EncodedOp, encode_cached, new_frozen

from refimpl.planner.engine.settings import ELEMENTWISE_SETTINGS
from refimpl.planner.fusers.elemwise import ElemwiseOptimization, FusedOptimization

__all__ = ["FusedOptimization", "ElemwiseOptimization", "ElementWiseFuser", "NAME"]

NAME = "ElementWise"


@cython.freelist(64)  # cloned for every new block of the search
cdef class ElementWiseFuser:
    """burn ``ElementWiseFuser``: a ``TraceOperationFuser`` with the element-wise settings.

    Mirrors refimpl.planner.fusers.elemwise.ElementWiseFuser.
    """

    name = NAME

    def __init__(self, max_bindings):
        self.fuser = TraceOperationFuser(max_bindings, ELEMENTWISE_SETTINGS)

    cdef ElementWiseFuser copy(self):
        cdef ElementWiseFuser other = ElementWiseFuser.__new__(ElementWiseFuser)
        other.fuser = self.fuser.copy()
        return other

    def clone(self):
        return self.copy()

    def fuse(self, operation):
        if self.fuser.st.s.closed:
            return
        self.fuse_open(encode_cached(operation))

    cdef int fuse_open(self, EncodedOp encoded) except -1:
        """``fuse`` of an encoded op, the fuser being open."""
        return self.fuser.check(tof_fuse(&self.fuser.st, &encoded.c))

    def finish(self):
        return self.finish_c()

    cdef object finish_c(self):
        """``finish`` without a Python call (the blocks call it)."""
        return new_frozen(ElemwiseOptimization, (self.fuser.finish_c(), self.fuser.st.s.num_ops))

    def reset(self):
        self.fuser.reset()

    def status(self):
        return self.fuser.status()

    cdef int score_ready(self, int64_t* score) except -1:
        """``properties()`` in C: its score in ``score``; 1 if ready, else 0."""
        return self.fuser.score_ready(score)

    def properties(self):
        return self.fuser.properties()

    def len(self):
        return self.fuser.st.s.num_ops

    def shape_id(self):
        """The block's current reference shape (relative ids)."""
        return self.fuser.current_shape()

    @property
    def closed_reason(self):
        return self.fuser.closed_reason

    @property
    def closed_log(self):
        return self.fuser.closed_log

    @property
    def max_bindings(self):
        return self.fuser.st.s.max_bindings

    def estimate_bindings(self):
        return self.fuser.estimate_bindings()
