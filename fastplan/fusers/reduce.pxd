# cython: language_level=3
"""C-level declarations of fastplan.fusers.reduce (used by fastplan.fusers.reduce_broadcasted)."""

from libc.stdint cimport int64_t

from fastplan.engine.trace_fuser cimport TraceOperationFuser
from fastplan.engine.trace_fuser_cores cimport Checkpoint, Reason
from fastplan.stream.relative cimport EncodedOp


cdef class ReduceFuser:
    cdef readonly TraceOperationFuser fuser  # read block, then (after the reduction) write block
    cdef readonly TraceOperationFuser fuser_read_fallback  # element-wise ops before it, unfused
    cdef readonly TraceOperationFuser fuser_write_fallback  # element-wise ops after it, unfused
    cdef readonly object settings_write  # the write block's FuseSettings
    cdef public object reduce  # FusedReduce, once the reduction is captured
    cdef readonly EncodedOp reduce_op  # the captured reduction, as C values
    cdef Checkpoint held_fuser  # an element-wise op held in trial (try_hold): fuser's trial
    cdef Checkpoint held_fallback  # ... and its fallback's
    cdef TraceOperationFuser holding  # the fallback in trial, or None
    cdef ReduceFuser copy(self)
    cdef int _close_read(self, Reason reason) except -1
    cdef int _on_reduce(self, EncodedOp operation, object inst) except -1
    cdef int fuse_encoded(self, EncodedOp operation) except -1
    cdef int64_t length(self)
    cdef bint can_hold(self, EncodedOp operation)
    cdef object try_hold(self, EncodedOp operation)
    cdef void end_hold(self, bint keep)
    cdef int score_ready(self, int64_t* score) except -1
    cdef object finish_c(self)
