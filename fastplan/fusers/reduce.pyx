# cython: language_level=3
"""The Reduce fuser: element-wise ops fused on read, a per-axis reduction, ops fused on write.

burn counterpart: ``crates/burn-cubecl-fusion/src/optim/reduce/fuser.rs`` (``ReduceFuser``,
``ReduceFuserInfo``) and ``optim/reduce/optimization.rs`` (``ReduceOptimization``,
``FusedReduce``, ``ReduceInstruction``); notes §8.2. Mirrors ``refimpl/planner/fusers/reduce.py``:
same names, same order, same results; the plain-data classes and ``ReduceInstruction`` are
refimpl's. As in refimpl, the registry builds it with ``ReduceSettings::Always``.

An element-wise op joins both the fused trace and the current fallback, or neither:
``tof_fuse_both`` runs one undoable trial on each (refimpl: ``refusal`` on clones, then fuse).
"""

cimport cython

from libc.stdint cimport int64_t

from fastplan.engine.builder_boundary cimport arg_to_py, reason_text, settings_code
from fastplan.engine.builder_structs cimport R_REDUCE_CAPTURED, R_REDUCE_SHAPE, Arg
from fastplan.engine.trace_fuser cimport TraceOperationFuser
from fastplan.engine.trace_fuser_cores cimport (
    Reason, tof_close, tof_end_trial, tof_fuse_both, tof_output_unhandled, tof_shape_equals,
    tof_try_both,
)
from fastplan.opinfo cimport OpKindC
from fastplan.stream.relative cimport EncodedOp, TensorC, encode_cached, new_frozen

from fastplan.engine.trace_fuser import properties_of

from refimpl.ops import OPS
from refimpl.planner.engine.settings import (
    REDUCE_FALLBACK_SETTINGS, REDUCE_READ_SETTINGS, REDUCE_WRITE_SETTINGS,
)
from refimpl.planner.engine.trace import FuseType
from refimpl.planner.fusers.reduce import (
    FusedElemwiseInfo, FusedReduce, FusedReduceInfo, ReduceFuserInfo, ReduceInstruction,
    ReduceOptimization,
)

__all__ = [
    "ReduceInstruction", "FusedReduce", "FusedReduceInfo", "FusedElemwiseInfo",
    "ReduceFuserInfo", "ReduceOptimization", "ReduceFuser", "NAME", "REASON_REDUCE_SHAPE",
]

NAME = "Reduce"
REASON_REDUCE_SHAPE = "reduce input shape"  # input shape != the read block's reference shape

# Sum, Mean and Prod accumulate narrow types in a wider one; the others keep the input type.
_WIDENING = ("Sum", "Mean", "Prod")
_WIDER = {
    FuseType.F16: FuseType.F32, FuseType.BF16: FuseType.F32,
    FuseType.I16: FuseType.I32, FuseType.I8: FuseType.I32,
    FuseType.U16: FuseType.U32, FuseType.U8: FuseType.U32,
}
_FT = tuple(FuseType)


def _accumulator(inst, ty):
    return _WIDER.get(ty, ty) if inst in _WIDENING else ty


cdef Reason _reason(int code):
    cdef Reason reason
    reason.code = code
    reason.estimate = reason.max_bindings = 0
    return reason


@cython.freelist(64)  # a trial or clone copy per op fed, made and dropped in bulk
cdef class ReduceFuser:
    """burn ``ReduceFuser`` (``ReduceSettings::Always``).

    Mirrors refimpl.planner.fusers.reduce.ReduceFuser.
    """

    name = NAME

    def __init__(self, max_bindings):
        self.fuser = TraceOperationFuser(max_bindings, REDUCE_READ_SETTINGS)
        self.fuser_read_fallback = TraceOperationFuser(max_bindings, REDUCE_FALLBACK_SETTINGS)
        self.fuser_write_fallback = TraceOperationFuser(max_bindings, REDUCE_FALLBACK_SETTINGS)
        self.settings_write = REDUCE_WRITE_SETTINGS
        self.reduce = None
        self.reduce_op = None

    cdef ReduceFuser copy(self):
        cdef ReduceFuser other = ReduceFuser.__new__(ReduceFuser)
        other.fuser = self.fuser.copy()
        other.fuser_read_fallback = self.fuser_read_fallback.copy()
        other.fuser_write_fallback = self.fuser_write_fallback.copy()
        other.settings_write, other.reduce = self.settings_write, self.reduce
        other.reduce_op = self.reduce_op
        return other

    def clone(self):
        return self.copy()

    def reduce_info(self):
        """What the block holds: a reduction (its input shape and axis) or element-wise ops."""
        if self.reduce is not None:
            return FusedReduceInfo(self.reduce.op.input.shape, self.reduce.axis)
        return FusedElemwiseInfo(self.fuser_read_fallback.current_shape())

    cdef int _close_read(self, Reason reason) except -1:
        tof_close(&self.fuser.st, reason)
        tof_close(&self.fuser_read_fallback.st, reason)
        return 0

    cdef int _on_reduce(self, EncodedOp operation, object inst) except -1:
        cdef const TensorC* input = &operation.c.tensors[0]
        cdef Arg source, output
        cdef int rc
        if not tof_shape_equals(&self.fuser.st, input.shape, input.rank):
            return self._close_read(_reason(R_REDUCE_SHAPE))
        rc = self.fuser.next_block_c(input, 1, settings_code(self.settings_write), False,
                                     &source)
        if rc > 0:  # burn panics here (an indexed reduce input): we close
            return self._close_read(_reason(rc))
        self.fuser.check(tof_output_unhandled(&self.fuser.st, &operation.c.tensors[1], &output))
        acc = _accumulator(inst, _FT[source.ty])
        op = operation.source.desc
        self.reduce = new_frozen(FusedReduce, (arg_to_py(&source), arg_to_py(&output), acc,
                                               op.axis, op, inst))
        self.reduce_op = operation
        tof_close(&self.fuser_read_fallback.st, _reason(R_REDUCE_CAPTURED))
        return 0

    cdef int fuse_encoded(self, EncodedOp operation) except -1:
        cdef Reason reason
        if self.fuser.st.s.closed:
            return 0
        if self.reduce is not None:
            self.fuser.check(tof_fuse_both(&self.fuser.st, &self.fuser_write_fallback.st,
                                           &operation.c, &reason))
        elif operation.c.kind == OpKindC.REDUCE_DIM:
            self._on_reduce(operation, ReduceInstruction[OPS[operation.c.code].variant])
        else:
            self.fuser.check(tof_fuse_both(&self.fuser.st, &self.fuser_read_fallback.st,
                                           &operation.c, &reason))
        return 0

    def fuse(self, operation):
        if self.fuser.st.s.closed:
            return
        self.fuse_encoded(encode_cached(operation))

    # A trial of ``fuse`` kept open (ReduceBroadcasted decides later whether it stands);
    # refimpl fuses a clone instead. Only element-wise ops: a capture opens a block.

    cdef bint can_hold(self, EncodedOp operation):
        return self.reduce is not None or operation.c.kind != OpKindC.REDUCE_DIM

    cdef object try_hold(self, EncodedOp operation):
        """``fuse(operation)`` left open: ``(True, None)`` if it was accepted, else ``(False,
        the closed_reason a clone would have after it)`` and nothing changed."""
        cdef TraceOperationFuser fallback
        cdef Reason reason
        cdef bint accepted
        if self.fuser.st.s.closed:
            return False, self.fuser.closed_reason
        fallback = self.fuser_write_fallback if self.reduce is not None \
            else self.fuser_read_fallback
        self.fuser.check(tof_try_both(&self.fuser.st, &fallback.st, &operation.c,
                                      &self.held_fuser, &self.held_fallback, &reason,
                                      &accepted))
        if accepted:
            self.holding = fallback
            return True, None
        return False, reason_text(reason.code, reason.estimate, reason.max_bindings)

    cdef void end_hold(self, bint keep):
        if self.holding is None:
            return
        tof_end_trial(&self.holding.st, &self.held_fallback, keep)
        tof_end_trial(&self.fuser.st, &self.held_fuser, keep)
        self.holding = None

    def finish(self):
        """burn ``finish_reduce``: the optimization with its three traces."""
        return self.finish_c()

    cdef object finish_c(self):
        """``finish`` without a Python call (ReduceBroadcasted and the blocks call it)."""
        if self.reduce is None:
            raise RuntimeError("the Reduce fuser holds no reduction: it is never ready")
        trace = self.fuser.finish_c()
        read_fallback = self.fuser_read_fallback.finish_c()
        write_fallback = self.fuser_write_fallback.finish_c()
        return new_frozen(ReduceOptimization, (trace, read_fallback, write_fallback,
                                               self.length(),
                                               self.fuser_read_fallback.st.s.num_ops,
                                               self.reduce))

    def reset(self):
        self.fuser.reset()
        self.fuser_read_fallback.reset()
        self.fuser_write_fallback.reset()
        self.reduce = None
        self.reduce_op = None

    def status(self):
        return self.fuser.status()

    cdef int score_ready(self, int64_t* score) except -1:
        """``properties()`` in C: the read/write trace's score in ``score``; 1 once the
        reduction is captured, else 0."""
        self.fuser.score_ready(score)
        return self.reduce is not None

    def properties(self):
        cdef int64_t score
        cdef int ready = self.score_ready(&score)
        return properties_of(score, ready)

    cdef int64_t length(self):
        return self.fuser.st.s.num_ops + (1 if self.reduce is not None else 0)

    def len(self):
        return self.length()

    @property
    def closed_reason(self):
        return self.fuser.closed_reason

    @property
    def max_bindings(self):
        return self.fuser.st.s.max_bindings

    def estimate_bindings(self):
        return self.fuser.estimate_bindings()
