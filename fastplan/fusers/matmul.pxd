# cython: language_level=3
"""C-level declarations of fastplan.fusers.matmul (used by fastplan.search.block)."""

from libc.stdint cimport int64_t

from fastplan.engine.trace_fuser cimport TraceOperationFuser
from fastplan.stream.relative cimport EncodedOp


cdef class MatmulFuser:
    cdef readonly TraceOperationFuser fuser  # closed: ``fuse`` does nothing
    cdef readonly TraceOperationFuser fuser_fallback
    cdef readonly object matmul  # FusedMatmul, once the matmul is captured
    cdef MatmulFuser copy(self)
    cdef void _close(self, int code)
    cdef int _on_matmul(self, EncodedOp op) except -1
    cdef int fuse_open(self, EncodedOp encoded) except -1
    cdef int score_ready(self, int64_t* score) except -1
    cdef object finish_c(self)
