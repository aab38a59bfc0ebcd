# cython: language_level=3
"""C-level declarations of fastplan.fusers.nhwc (used by fastplan.search.block)."""

from libc.stdint cimport int64_t

from fastplan.engine.trace_fuser cimport TraceOperationFuser
from fastplan.stream.relative cimport EncodedOp


cdef class NHWCRelayoutFuser:
    cdef readonly TraceOperationFuser fuser
    cdef readonly object op  # the captured module op
    cdef bint _closed  # ``fuse`` does nothing
    cdef NHWCRelayoutFuser copy(self)
    cdef int _capture(self, EncodedOp operation) except -1
    cdef int fuse_open(self, EncodedOp encoded) except -1
    cdef int score_ready(self, int64_t* score) except -1
    cdef object finish_c(self)
