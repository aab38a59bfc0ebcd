# cython: language_level=3
"""C-level declarations of fastplan.queue (used by processor)."""

from libc.stdint cimport int64_t

from fastplan._keys cimport KeyBuf


cdef class OperationQueue:
    cdef public list global_ops  # pending ops (global ids and shapes)
    cdef public list indices  # position of each pending op in Stream.items
    cdef public list shapes_assigned  # shape ids handed out once op i was relativised
    cdef public list steps  # every step executed so far
    cdef readonly list keys  # the key of each pending op's relative form (bytes)
    cdef list _rel  # each pending op's relative OperationIr, or None until built
    cdef list _outs  # global id of each pending op's ``out`` tensor (_NO_OUT: none)
    cdef list _history  # every op ever queued, in order (the segments of ``executed``)
    cdef Py_ssize_t _first  # history position of the first pending op
    cdef list _rec_step  # per executed step: the PlanStep
    cdef list _rec_opt  # per executed step: its optimization (None: unfused)
    cdef list _rec_first  # per executed step: history position of its segment's first op
    cdef list _rec_count  # per executed step: length of its segment
    cdef list _rec_maps  # per executed step: [segment|None, g2r, shapes, scalars] (fused) or None
    cdef list _executed  # the ExecutedSteps built so far from _records
    cdef dict _compiled  # id(optimization) -> _Compiled: stored plans already read
    cdef object _segment_maps  # ((first, count), segment, maps) last built for ``executed``
    cdef dict g2r  # converter: global tensor id -> relative id
    cdef list r2g_ids  # converter: relative id -> global tensor id
    cdef list r2g_tensors  # converter: relative id -> latest snapshot
    cdef dict dims  # converter: dimension value -> shape id (1 -> 0)
    cdef list dim_values  # converter: shape id -> dimension value
    cdef list scalars  # converter: stashed scalars
    cdef list ranges  # converter: stashed slice ranges
    cdef object _log  # the FusionLog (property ``log``)
    cdef bint _basic  # the log prints executed steps
    cdef object _out  # set by _encode: the global id of the op's out tensor (or _NO_OUT)

    cdef void _clear(self) except *
    cdef list executed_since(self, Py_ssize_t start, bint unfused_context)
    cdef tuple _segment_of(self, Py_ssize_t first, Py_ssize_t count)
    cdef int64_t _tensor_id(self, object tensor, object tid) except? -1
    cdef object _push_tensor(self, KeyBuf* b, object tensor)
    cdef bytes _encode(self, object operation)
    cdef object rel_at(self, Py_ssize_t i)
    cdef bytes key_at(self, Py_ssize_t i)
    cdef Py_ssize_t size(self) noexcept
    cdef object _materialize(self, Py_ssize_t i)
    cdef int execute_plan(self, object optimization) except -1
    cdef object _compile(self, object optimization)
    cdef int add_op(self, object index, object operation) except -1
    cdef bint produces(self, object tensor_ids) except -1
    cdef int _run(self, object optimization) except -1
    cdef int _run_leaves(self, list leaves) except -1
    cdef object _step(self, object leaf)
    cdef tuple _global_ids(self, tuple relative_ids)
    cdef int _drain(self, Py_ssize_t count) except -1
