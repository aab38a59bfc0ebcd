# cython: language_level=3
"""The NHWCRelayout fuser: element-wise ops whose result feeds a pooling / interpolate op are
fused, and that result is written channels-last so the module op reads it directly.

burn counterpart: ``crates/burn-cubecl-fusion/src/optim/nhwc_relayout/fuser.rs``
(``NHWCRelayoutFuser``) and ``optim/nhwc_relayout/optimization.rs``; notes §8.4. Mirrors
``refimpl/planner/fusers/nhwc.py``: same names, same order, same results; the optimization class is
refimpl's.
"""

cimport cython

from libc.stdint cimport int64_t

from fastplan._vec cimport mem_free, mem_malloc
from fastplan.engine.builder_cores cimport trace_output_nhwc_layout
from fastplan.engine.trace_fuser cimport TraceOperationFuser
from fastplan.engine.trace_fuser_cores cimport tof_fuse
from fastplan.opinfo cimport OpKindC
from fastplan.stream.relative cimport READ_WRITE, EncodedOp, TensorC, encode_cached, new_frozen

from fastplan.engine.trace_fuser import properties_of

from refimpl.planner.engine.fuser import FuserStatus
from refimpl.planner.engine.settings import NHWC_RELAYOUT_SETTINGS
from refimpl.planner.fusers.nhwc import NHWCRelayoutOptimization

__all__ = ["NAME", "NHWC_SCORE_BONUS", "nhwc_permutation", "NHWCRelayoutOptimization",
           "NHWCRelayoutFuser"]

NAME = "NHWCRelayout"
NHWC_SCORE_BONUS = 100  # burn: a flat bonus, marked provisional in its source
cdef int64_t _NHWC_BONUS = NHWC_SCORE_BONUS
_REASON_CAPTURED = "module op captured"


cdef void _nhwc_permutation(int64_t* out, Py_ssize_t rank) noexcept nogil:
    cdef Py_ssize_t i
    if rank < 2:
        for i in range(rank):
            out[i] = 0
        return
    out[0] = 0
    out[1] = rank - 1
    for i in range(2, rank):
        out[i] = i - 1


def nhwc_permutation(rank):
    """Where each dim's stride goes: N stays first, channels (dim 1) last, the rest move up.

    Mirrors refimpl.planner.fusers.nhwc.nhwc_permutation.

    >>> nhwc_permutation(4)
    (0, 3, 1, 2)
    """
    cdef Py_ssize_t n = rank if rank > 0 else 0
    cdef int64_t* out = <int64_t*>mem_malloc((n + 1) * sizeof(int64_t))
    if out == NULL:
        raise MemoryError()
    try:
        _nhwc_permutation(out, n)
        return tuple([out[i] for i in range(n)])
    finally:
        mem_free(out)


@cython.freelist(64)  # cloned for every new block of the search
cdef class NHWCRelayoutFuser:
    """burn ``NHWCRelayoutFuser``.

    Mirrors refimpl.planner.fusers.nhwc.NHWCRelayoutFuser.
    """

    name = NAME

    def __init__(self, max_bindings):
        self.fuser = TraceOperationFuser(max_bindings, NHWC_RELAYOUT_SETTINGS)
        self.op = None
        self._closed = self.fuser.st.s.closed

    cdef NHWCRelayoutFuser copy(self):
        cdef NHWCRelayoutFuser other = NHWCRelayoutFuser.__new__(NHWCRelayoutFuser)
        other.fuser, other.op, other._closed = self.fuser.copy(), self.op, self._closed
        return other

    def clone(self):
        return self.copy()

    cdef int _capture(self, EncodedOp operation) except -1:
        cdef const TensorC* x = &operation.c.tensors[0]
        cdef int64_t* permutation = <int64_t*>mem_malloc((x.rank + 1) * sizeof(int64_t))
        cdef int rc
        if permutation == NULL:
            raise MemoryError()
        _nhwc_permutation(permutation, x.rank)
        rc = trace_output_nhwc_layout(self.fuser.st.tr.trace, x.id, permutation, x.rank)
        mem_free(permutation)
        self.fuser.check(rc)
        self.op = operation.source
        self._closed = True
        return 0

    def fuse(self, operation):
        if self._closed:
            return
        self.fuse_open(encode_cached(operation))

    cdef int fuse_open(self, EncodedOp encoded) except -1:
        """``fuse`` of an encoded op, the fuser being open."""
        if encoded.c.kind == OpKindC.MODULE and encoded.c.tensors[0].status == READ_WRITE:
            return self._capture(encoded)
        self.fuser.check(tof_fuse(&self.fuser.st, &encoded.c))
        self._closed = self.fuser.st.s.closed
        return 0

    def finish(self):
        return self.finish_c()

    cdef object finish_c(self):
        """``finish`` without a Python call (the blocks call it)."""
        return new_frozen(NHWCRelayoutOptimization, (
            self.fuser.finish_c(), self.fuser.st.s.num_ops + (1 if self.op is not None else 0)))

    def reset(self):
        self.fuser.reset()
        self.op = None
        self._closed = self.fuser.st.s.closed

    def status(self):
        return FuserStatus.Closed if self._closed else FuserStatus.Open

    cdef int score_ready(self, int64_t* score) except -1:
        """``properties()`` in C: the trace's score, plus the bonus once the module op is
        captured, in ``score``; 1 if the trace holds ops and the op is captured, else 0."""
        cdef int ready = self.fuser.score_ready(score)
        if self.op is None:
            return 0
        score[0] += _NHWC_BONUS
        return ready

    def properties(self):
        cdef int64_t score
        cdef int ready = self.score_ready(&score)
        return properties_of(score, ready)

    def len(self):
        return self.fuser.st.s.num_ops + (1 if self.op is not None else 0)

    @property
    def closed_reason(self):
        if self.op is not None:
            return _REASON_CAPTURED
        return self.fuser.closed_reason

    @property
    def max_bindings(self):
        return self.fuser.st.s.max_bindings

    def estimate_bindings(self):
        return self.fuser.estimate_bindings()
