# cython: language_level=3
"""The ReduceBroadcasted fuser's full trace: one trace over every block, and which tensors each
block receives from an earlier one.

burn counterpart: ``crates/burn-cubecl-fusion/src/optim/reduce_broadcasted/fuser/{full,
full_analyzer}.rs`` (``ReduceBroadcastedFullFuser``, ``FullFuserAnalyzer``); notes §8.3.
Part of fastplan's twin of ``refimpl/planner/fusers/reduce_broadcasted.py``, split along burn's
seam: the fuser and its blocks stay in ``fastplan.fusers.reduce_broadcasted``, which imports
these classes back (same names in its ``__all__``). ``FullFuserAnalyzer`` keeps no ``_full``
(refimpl's ids of the full-shape sides, never read), copies ``last_single`` for the last block
only, and a consistency check's dry run registers its blocks with ``register_c``.
"""

from libc.stdint cimport int64_t

from fastplan._vec cimport vec_free, vec_init, vec_push
from fastplan.engine.builder_boundary cimport arg_to_py, reason_text, settings_code
from fastplan.engine.builder_structs cimport Arg
from fastplan.fusers.reduce_broadcasted cimport ReduceBlockFuser, out_index
from fastplan.stream.relative cimport EncodedOp, TensorC, new_frozen, tensor_ir
from fastplan.engine.trace_fuser cimport TraceOperationFuser
from fastplan.engine.trace_fuser_cores cimport (
    tof_block_local_input, tof_fuse, tof_output_unhandled,
)

from refimpl.planner.engine.builder import Refusal
from refimpl.planner.engine.settings import (
    REDUCE_BROADCASTED_READ_SETTINGS, REDUCE_BROADCASTED_WRITE_SETTINGS,
    reduce_broadcasted_next_read_settings,
)
from refimpl.planner.fusers.reduce import FusedReduce
from refimpl.planner.fusers.reduce_broadcasted import (
    ELEMWISE_BLOCK, ReduceBlockKind, ReduceBroadcastedFuseBlock, ReduceBroadcastedInfo,
)

# refimpl calls reduce_broadcasted_next_read_settings() for every block: equal values each time.
_NEXT_READ_SETTINGS = reduce_broadcasted_next_read_settings()


cdef class FullFuserAnalyzer:
    """burn ``FullFuserAnalyzer``: for every block boundary of the full trace, which tensors the
    new block receives from an earlier block (tensor, block position).

    Mirrors refimpl.planner.fusers.reduce_broadcasted.FullFuserAnalyzer.
    """

    def __init__(self, blocks):
        cdef ReduceBlockFuser block
        cdef Py_ssize_t pos, ops_index, k, last
        cdef list items = blocks if type(blocks) is list else list(blocks)
        cdef list encoded
        self._analyses, self._single = [], {}
        self._block_data, self._current_single = [], []
        last = len(items) - 1
        for k in range(len(items)):
            block = items[k]
            ops_index = block.ops_index
            encoded = block.encoded
            if k == last:  # only the last block's copy is kept
                self.last_single = dict(self._single)
            for pos in range(len(encoded)):
                op = encoded[pos]
                if block.elemwise or pos < ops_index:
                    self._register(op, None)
                elif pos > ops_index:
                    self._register(op, self._current_single)
                else:
                    self._next_block()
                    if k == last:
                        self.last_single = dict(self._single)
            self._next_block()
        self._analyses.pop(0)  # the first block receives nothing

    cdef int _next_block(self) except -1:
        block_pos = len(self._analyses)
        self._analyses.append(self._block_data)
        self._block_data = []
        for tid in self._current_single:
            self._single.setdefault(tid, block_pos)
        self._current_single = []
        return 0

    cdef int _register(self, EncodedOp op, list current) except -1:
        # Only values from a reduce's write side can be read across blocks (a broadcast);
        # full-shape values live in another reduction loop. ``current`` is None on a
        # full-shape side: refimpl's _full (those ids) is never read.
        cdef Py_ssize_t i
        cdef int out = out_index(op)
        if not self._single and current is None:
            return 0  # nothing to receive, nothing to record
        for i in range(op.c.n_tensors):
            if i == out:
                continue
            tid = op.c.tensors[i].id
            if self._single:
                block_pos = self._single.get(tid)
                if block_pos is not None:
                    self._block_data.append((op, i, block_pos))
            if current is not None:
                current.append(tid)
        if out >= 0 and current is not None:
            current.append(op.c.tensors[out].id)
        return 0

    cdef list _retrieve(self):
        return self._analyses.pop(0)

    def retrieve_next(self):
        cdef EncodedOp op
        cdef TensorC* t
        result = []
        for op, i, block_pos in self._retrieve():
            t = &op.c.tensors[<Py_ssize_t>i]
            result.append((tensor_ir(t.id, t.shape, t.rank, t.dtype, t.status), block_pos))
        return result


cdef class ReduceBroadcastedFullFuser:
    """burn ``ReduceBroadcastedFullFuser``: builds one trace over every block.

    Mirrors refimpl.planner.fusers.reduce_broadcasted.ReduceBroadcastedFullFuser.
    """

    def __cinit__(self):
        vec_init(&self.args, sizeof(Arg))

    def __dealloc__(self):
        vec_free(&self.args)

    def __init__(self, max_bindings, analyzer):
        self.fuser = TraceOperationFuser(max_bindings, REDUCE_BROADCASTED_READ_SETTINGS)
        self.analyzer = analyzer
        self.blocks = []
        self.num_reduce = 0
        self.dry = False

    def num_ops_fused(self):
        """Ops in the full trace, each reduction counted once."""
        return self.fuser.st.s.num_ops + self.num_reduce

    cdef int _receive(self) except -1:
        cdef EncodedOp op
        cdef Arg out
        cdef int rc
        for op, i, block_pos in self.analyzer._retrieve():
            rc = tof_block_local_input(&self.fuser.st, &op.c.tensors[<Py_ssize_t>i], block_pos,
                                       False, &out)
            if rc > 0:
                raise Refusal(reason_text(rc, 0, 0))
            self.fuser.check(rc)
        return 0

    cdef int _fuse_all(self, list ops, Py_ssize_t start, Py_ssize_t stop) except -1:
        cdef Py_ssize_t i
        for i in range(start, stop):
            self.fuser.check(tof_fuse(&self.fuser.st, &(<EncodedOp>ops[i]).c))
        return 0

    def register(self, block):
        """Append one block's ops (and its reduction) to the full trace."""
        self.register_c(block)

    cdef int register_c(self, ReduceBlockFuser b) except -1:
        cdef EncodedOp reduce_op
        cdef Arg source, output
        cdef Arg* slot
        cdef Py_ssize_t ops_index
        cdef int rc
        if self.fuser.st.s.num_ops != 0:
            rc = self.fuser.next_block_c(NULL, 0, settings_code(_NEXT_READ_SETTINGS), False, NULL)
            self._receive()
        if b.elemwise:
            self._fuse_all(b.encoded, 0, len(b.encoded))
            if not self.dry:
                self.blocks.append(ELEMWISE_BLOCK)
            return 0
        ops_index = b.ops_index
        if not 0 <= ops_index < len(b.encoded):
            raise IndexError(f"reduce block kind names op {ops_index} of {len(b.encoded)}")
        self._fuse_all(b.encoded, 0, ops_index)
        reduce_op = b.encoded[ops_index]
        rc = self.fuser.next_block_c(&reduce_op.c.tensors[0], 1,
                                     settings_code(REDUCE_BROADCASTED_WRITE_SETTINGS), False,
                                     &source)
        if rc > 0:
            raise Refusal(reason_text(rc, 0, 0))
        self.fuser.check(tof_output_unhandled(&self.fuser.st, &reduce_op.c.tensors[1], &output))
        slot = <Arg*>vec_push(&self.args, NULL)
        if slot == NULL:
            raise MemoryError()
        slot[0] = source
        slot = <Arg*>vec_push(&self.args, NULL)
        if slot == NULL:
            raise MemoryError()
        slot[0] = output
        self._receive()
        self.num_reduce += 1
        if not self.dry:
            reduce = b.kind.reduce
            fused = new_frozen(FusedReduce, (arg_to_py(&source), arg_to_py(&output), reduce.acc,
                                             reduce.axis, reduce.op, reduce.inst))
            self.blocks.append(new_frozen(ReduceBlockKind, (ops_index, fused)))
        self._fuse_all(b.encoded, ops_index + 1, len(b.encoded))
        return 0

    def finish(self):
        return self.finish_c()

    cdef object finish_c(self):
        reductions, axis = [], 0
        for kind in self.blocks:
            if kind.reduce is not None:
                reductions.append(new_frozen(ReduceBroadcastedFuseBlock, (
                    kind.reduce.inst, kind.reduce.input, kind.reduce.output)))
                axis = kind.reduce.axis
        return new_frozen(ReduceBroadcastedInfo, (tuple(reductions), self.fuser.finish_c(), axis))

    cdef object finish_dry(self, list blocks):
        """``finish`` of a dry run over ``blocks`` (no ReduceBlockKind was kept): the
        reductions from the recorded arguments and the blocks' own reductions."""
        cdef ReduceBlockFuser block
        cdef Arg* args = <Arg*>self.args.data
        cdef Py_ssize_t k = 0
        reductions, axis = [], 0
        for block in blocks:
            if block.elemwise:
                continue
            reduce = block._kind.reduce
            reductions.append(new_frozen(ReduceBroadcastedFuseBlock, (
                reduce.inst, arg_to_py(&args[k]), arg_to_py(&args[k + 1]))))
            axis = reduce.axis
            k += 2
        return new_frozen(ReduceBroadcastedInfo, (tuple(reductions), self.fuser.finish_c(), axis))


cdef tuple _finish_blocks_c(list blocks, object max_bindings):
    """``_finish_blocks`` without Python calls."""
    cdef ReduceBroadcastedFullFuser full = ReduceBroadcastedFullFuser(
        max_bindings, FullFuserAnalyzer(blocks))
    cdef ReduceBlockFuser block
    cdef list fallbacks = []
    cdef int64_t covered, num_ops = 0
    for block in blocks:
        full.register_c(block)
        fallbacks.append(block._finish(&covered))
        num_ops += covered
    return fallbacks, full, num_ops


def _finish_blocks(blocks, max_bindings):
    return _finish_blocks_c(list(blocks), max_bindings)
