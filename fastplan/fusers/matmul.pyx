# cython: language_level=3
"""The Matmul fuser: a ``Float.Matmul`` followed by element-wise ops fused into its epilogue.

burn counterpart: ``crates/burn-cubecl-fusion/src/optim/matmul/fuser.rs`` (``MatmulFuser``) and
``optim/matmul/optimization.rs`` (``MatmulOptimization``, ``FusedMatmul``); notes §8.1.
Mirrors ``refimpl/planner/fusers/matmul.py``: same names, same order, same results; the optimization
classes are refimpl's.

Two traces grow side by side: ``fuser`` (the epilogue) and ``fuser_fallback`` (the matmul
alone, then the tail). An op joins only if both accept it: refimpl asks each for its
``refusal`` on a clone and then fuses both; here ``tof_fuse_both`` runs one undoable trial on
each (same outcome, half the work).
"""

cimport cython

from fastplan.engine.builder_boundary cimport arg_to_py
from fastplan.engine.builder_structs cimport R_NOT_MATMUL, Arg
from fastplan.engine.trace_fuser cimport TraceOperationFuser
from fastplan.engine.trace_fuser_cores cimport (
    Reason, tof_close, tof_fuse_both, tof_input_unhandled, tof_output_unhandled,
)
from fastplan.opinfo cimport OpKindC
from fastplan.stream.relative cimport EncodedOp, encode_cached, new_frozen

from refimpl.planner.engine.settings import MATMUL_FALLBACK_SETTINGS, MATMUL_SETTINGS
from refimpl.planner.fusers.matmul import FusedMatmul, MatmulOptimization

__all__ = ["FusedMatmul", "MatmulOptimization", "MatmulFuser", "NAME", "REASON_NOT_MATMUL"]

NAME = "Matmul"
REASON_NOT_MATMUL = "first op not a matmul"


@cython.freelist(64)  # cloned for every new block of the search
cdef class MatmulFuser:
    """burn ``MatmulFuser``.

    Mirrors refimpl.planner.fusers.matmul.MatmulFuser.
    """

    name = NAME

    def __init__(self, max_bindings):
        self.fuser = TraceOperationFuser(max_bindings, MATMUL_SETTINGS)
        self.fuser_fallback = TraceOperationFuser(max_bindings, MATMUL_FALLBACK_SETTINGS)
        self.matmul = None

    cdef MatmulFuser copy(self):
        cdef MatmulFuser other = MatmulFuser.__new__(MatmulFuser)
        other.fuser = self.fuser.copy()
        other.fuser_fallback = self.fuser_fallback.copy()
        other.matmul = self.matmul
        return other

    def clone(self):
        return self.copy()

    cdef void _close(self, int code):
        cdef Reason reason
        reason.code = code
        reason.estimate = reason.max_bindings = 0
        tof_close(&self.fuser.st, reason)
        tof_close(&self.fuser_fallback.st, reason)

    cdef int _on_matmul(self, EncodedOp op) except -1:
        cdef Arg lhs, rhs, out
        cdef TraceOperationFuser fuser = self.fuser
        fuser.check(tof_input_unhandled(&fuser.st, &op.c.tensors[0], &lhs))
        fuser.check(tof_input_unhandled(&fuser.st, &op.c.tensors[1], &rhs))
        fuser.check(tof_output_unhandled(&fuser.st, &op.c.tensors[2], &out))
        self.matmul = FusedMatmul(arg_to_py(&lhs), arg_to_py(&rhs), arg_to_py(&out),
                                  op.source.desc)
        return 0

    def fuse(self, operation):
        if self.fuser.st.s.closed:
            return
        self.fuse_open(encode_cached(operation))

    cdef int fuse_open(self, EncodedOp encoded) except -1:
        """``fuse`` of an encoded op, the fuser being open."""
        cdef Reason reason
        if self.matmul is None:
            if encoded.c.kind == OpKindC.MATMUL:
                self._on_matmul(encoded)
            else:
                self._close(R_NOT_MATMUL)
            return 0
        self.fuser.check(tof_fuse_both(&self.fuser.st, &self.fuser_fallback.st, &encoded.c,
                                       &reason))
        return 0

    def finish(self):
        return self.finish_c()

    cdef object finish_c(self):
        """``finish`` without a Python call (the blocks call it)."""
        if self.matmul is None:
            raise RuntimeError("the Matmul fuser holds no matmul: it is never ready")
        trace, fallback = self.fuser.finish_c(), self.fuser_fallback.finish_c()
        return new_frozen(MatmulOptimization, (trace, fallback, self.fuser.st.s.num_ops + 1,
                                               self.matmul))

    def reset(self):
        self.fuser.reset()
        self.fuser_fallback.reset()
        self.matmul = None

    def status(self):
        return self.fuser.status()

    cdef int score_ready(self, int64_t* score) except -1:
        """``properties()`` in C: its score in ``score``; 1 if ready, else 0."""
        return self.fuser.score_ready(score)

    def properties(self):
        return self.fuser.properties()

    def len(self):
        return self.fuser.st.s.num_ops + 1  # the matmul is not registered in the trace fuser

    @property
    def closed_reason(self):
        return self.fuser.closed_reason

    @property
    def max_bindings(self):
        return self.fuser.st.s.max_bindings

    def estimate_bindings(self):
        return self.fuser.estimate_bindings()
