# cython: language_level=3
"""C-level declarations of fastplan.fusers.reduce_broadcasted_full (the ReduceBroadcasted
fuser's full trace: ``ReduceBroadcastedFuser`` builds, checks and finishes it)."""

from libc.stdint cimport int64_t

from fastplan._vec cimport Vec
from fastplan.engine.trace_fuser cimport TraceOperationFuser
from fastplan.fusers.reduce_broadcasted cimport ReduceBlockFuser
from fastplan.stream.relative cimport EncodedOp


cdef class FullFuserAnalyzer:
    cdef list _analyses  # per boundary: [(EncodedOp, tensor index, block_pos)]
    cdef dict _single  # ids available after a reduce's write side -> block_pos
    cdef list _block_data
    cdef list _current_single
    cdef dict last_single  # _single when the last block's last segment started
    cdef int _next_block(self) except -1
    cdef int _register(self, EncodedOp op, list current) except -1
    cdef list _retrieve(self)


cdef class ReduceBroadcastedFullFuser:
    cdef readonly TraceOperationFuser fuser
    cdef readonly FullFuserAnalyzer analyzer
    cdef public list blocks
    cdef int64_t num_reduce  # non-element-wise blocks registered
    cdef bint dry  # only count (is_consistent): no ReduceBlockKind objects
    cdef Vec args  # Arg: each reduce block's source and output, in block order (dry or not)
    cdef int _receive(self) except -1
    cdef int _fuse_all(self, list ops, Py_ssize_t start, Py_ssize_t stop) except -1
    cdef int register_c(self, ReduceBlockFuser b) except -1
    cdef object finish_c(self)
    cdef object finish_dry(self, list blocks)


# ``_finish_blocks``: the blocks' fallbacks, the full fuser and the op count, as a C call
cdef tuple _finish_blocks_c(list blocks, object max_bindings)
