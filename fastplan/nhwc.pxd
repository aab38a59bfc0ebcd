# cython: language_level=3
"""C-level declarations of fastplan.nhwc (used by fastplan.block)."""

from fastplan.relative cimport EncodedOp
from fastplan.trace_fuser cimport TraceOperationFuser


cdef class NHWCRelayoutFuser:
    cdef readonly TraceOperationFuser fuser
    cdef readonly object op  # the captured module op
    cdef bint _closed  # ``fuse`` does nothing
    cdef int _capture(self, EncodedOp operation) except -1
    cdef int fuse_open(self, EncodedOp encoded) except -1
