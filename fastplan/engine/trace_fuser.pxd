# cython: language_level=3
"""C-level declarations of fastplan.engine.trace_fuser: the ``def`` twins over the C structs of
``trace_fuser_cores.pxd``."""

from libc.stdint cimport int32_t, int64_t

from fastplan.engine.builder_structs cimport Arg
from fastplan.engine.trace_fuser_cores cimport TOFState, TryState
from fastplan.stream.relative cimport TensorC


cdef class TryTraceFuser:
    cdef TryState* p  # own, or a TraceOperationFuser's ``tr``
    cdef TryState own
    cdef object owner  # keeps *p alive when it is not own


cdef class TraceOperationFuser:
    cdef TOFState st
    cdef int check(self, int rc) except -1
    cdef TraceOperationFuser copy(self)
    cdef int set_settings(self, int32_t code) except -1
    cdef int next_block_c(self, const TensorC* arguments, Py_ssize_t n, int32_t code,
                          bint global_, Arg* out) except -1
    cdef object current_shape(self)
    cdef int score_ready(self, int64_t* score) except -1
    cdef object finish_c(self)
