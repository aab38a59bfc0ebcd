# cython: language_level=3
"""C-level declarations of fastplan.fusers.reduce_broadcasted (used by fastplan.search.block, which
feeds, scores and checks the fuser without a Python call)."""

from libc.stdint cimport int64_t

from fastplan.engine.trace_fuser cimport TraceOperationFuser
from fastplan.engine.trace_fuser_cores cimport Checkpoint
from fastplan.fusers.reduce cimport ReduceFuser
from fastplan.stream.relative cimport EncodedOp


# The position of ``out`` among an encoded op's tensors (-1: none).
cdef int out_index(EncodedOp op)


cdef class ReduceBlockFuser:
    cdef public ReduceFuser fuser
    cdef list encoded  # EncodedOp, the block's ops in order
    cdef object _kind  # ReduceBlockKind
    cdef bint elemwise  # _kind.is_elemwise
    cdef Py_ssize_t ops_index  # _kind.ops_index

    cdef ReduceBlockFuser copy(self)
    cdef tuple _analyze(self, EncodedOp op, object status, ReduceFuser default, bint hold)
    cdef ReduceBlockFuser _with_op(self, EncodedOp op, ReduceFuser fuser)
    cdef bint _ready(self)
    cdef int64_t _score(self) except -1
    cdef int64_t _covered(self)
    cdef object _finish(self, int64_t* covered)


cdef class ReduceBroadcastedFuser:
    cdef readonly ReduceFuser fuser_default
    cdef public list blocks
    cdef public int64_t num_ops
    cdef public object state
    cdef readonly int64_t max_bindings
    cdef public object closed_reason
    cdef ReduceFuser _held  # a block fuser holding the op being tried (see fuse)
    # The full fuser of the last consistency check (see _check): the blocks it was built from
    # (a copy of the list), the last block's op count then, its reductions, and which ids an
    # op appended to the last segment would receive from an earlier block.
    cdef TraceOperationFuser _full
    cdef object _full_owner  # the ReduceBroadcastedFullFuser whose fuser _full is
    cdef list _full_blocks
    cdef Py_ssize_t _full_last_len
    cdef int64_t _full_num_reduce
    cdef dict _full_single
    cdef Checkpoint _full_trial

    cdef ReduceBlockFuser _last(self)
    cdef ReduceBroadcastedFuser copy(self)
    cdef ReduceBroadcastedFuser _shallow(self)
    cdef object _full_run(self)
    cdef int64_t _covered(self) except -1
    cdef bint _consistent(self) except -1
    cdef bint _extends_cache(self, ReduceBroadcastedFuser trial, EncodedOp op) except -1
    cdef bint _same_blocks(self, ReduceBroadcastedFuser trial) except -1
    cdef object _check(self, ReduceBroadcastedFuser trial, EncodedOp op)
    cdef void _keep_cache(self, object run, int how, bint kept)
    cdef int _fuse_no_check(self, EncodedOp op) except -1
    cdef bint _ready(self) except -1
    cdef bint closed(self) except -1
    cdef bint is_open(self) except -1
    cdef int _close(self, object state, object reason) except -1
    cdef int fuse_encoded(self, EncodedOp encoded) except -1
    cdef int score_ready(self, int64_t* score) except -1
    cdef object finish_c(self)
    cdef object _cached_full(self)
