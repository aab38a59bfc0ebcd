# cython: language_level=3
"""C-level declarations of fastplan.stream.queue (used by processor)."""

cimport cython
from libc.stdint cimport int64_t, uint32_t

from fastplan._keys cimport KeyBuf, Slots
from fastplan.stream.cache cimport ExecutionPlanStore, Policy


cdef class _StepContext:
    """The converter's maps when a segment executed (burn ``Context``), shared by the fused
    steps of that execution; what launch planning reads of a step."""
    cdef object g2r  # global tensor id -> relative id as a mapping (built on first use)
    cdef list dim_values  # relative shape id -> dim (None when ``dims`` or ``shapes`` was given)
    cdef object shapes  # relative shape id -> dim as a mapping (built on first use)
    cdef object scalars  # stashed scalars (a list or a tuple; a tuple on first use)
    cdef list history  # the queue's history (None when ``segment`` was given)
    cdef Py_ssize_t first, count  # the segment's place in ``history``
    cdef object segment_ops  # the segment's global ops (built on first use)
    cdef list order  # the global ids in relative-id order (the converter's g2r keys)
    cdef tuple dims  # the dims in relative shape id order (built on first use)
    cdef object fused  # launch planning's FusedContext of the segment (built on first use)
    cdef object plan  # the optimization executed (a stored plan names one relative segment)
    cdef object positions  # global id -> its position in ``order`` (built on first use)
    cdef object segment(self)
    cdef object g2r_map(self)
    cdef object position_map(self)
    cdef object shapes_map(self)
    cdef tuple scalar_values(self)
    cdef list tensor_order(self)
    cdef tuple dim_tuple(self)


cdef class _StepRecord:
    """One executed step as the queue recorded it: the ``PlanStep``, the optimization (None:
    unfused) and the ``_StepContext`` (fused steps)."""
    cdef readonly object step
    cdef bint fused  # step.kind == "fused"
    cdef readonly object optimization
    cdef readonly _StepContext context
    # the context of the execution the step belongs to, fused or not (the walk replays a
    # whole execution from the launch memo by it); None for a step recorded otherwise
    cdef readonly _StepContext execution
    cdef Py_ssize_t first, count  # the segment pending at the execution (history positions)


ctypedef struct IdSlot:
    int64_t key  # a global tensor id
    Py_ssize_t rel  # its relative id
    uint32_t gen  # the slot holds an entry of the converter's current segment iff == _id_gen


cdef _StepContext context_given(object segment, object g2r, object shapes, object scalars)


@cython.final  # its calls among its own methods are direct, inlinable (no subclass)
cdef class OperationQueue:
    cdef public list global_ops  # pending ops (global ids and shapes)
    cdef public list indices  # position of each pending op in Stream.items
    cdef public list shapes_assigned  # shape ids handed out once op i was relativised
    cdef public list steps  # every step executed so far
    cdef readonly list keys  # the key of each pending op's relative form (bytes)
    cdef list _rel  # each pending op's relative OperationIr (None: not built; past its end: none
    # asked for yet)
    cdef dict _made  # key -> (relative OperationIr, EncodedOp) built from it (``rel_at``)
    cdef list _history  # every op ever queued, in order (the segments of ``executed``)
    cdef Py_ssize_t _first  # history position of the first pending op
    cdef list _records  # _StepRecord per executed step
    cdef list _dims_seen  # the last DIMS_SEEN dims tuples the contexts took (``_dims_now``)
    cdef Py_ssize_t _dims_next  # the entry of ``_dims_seen`` the next new tuple replaces
    cdef list _executed  # the ExecutedSteps built so far from _records
    cdef bint _taken  # a _StepContext holds the converter's g2r_keys / dim_values / scalars
    cdef list _compiled_plans  # plan id -> _Compiled (or None): the processor's plans read
    cdef object _segment_maps  # ((first, count), segment, maps) last built for ``executed``
    cdef dict g2r  # converter: global tensor id -> relative id, once the id table is off
    cdef IdSlot* _ids  # converter: g2r as an open-addressing table while all ids are exact
    cdef Py_ssize_t _id_cap  # int64 ints (slots of _ids, a power of two; 0: not allocated)
    cdef uint32_t _id_gen  # entries of older segments are stale (``_clear`` bumps it)
    cdef bint _id_table  # the table is in use (else ``g2r``)
    cdef list g2r_keys  # converter: g2r's keys in insertion (= relative id) order, as inserted
    cdef list r2g_ids  # converter: relative id -> global tensor id, once the id table is off
    # (the table holds exact int64 ints only: ``g2r_keys`` is that map then)
    cdef dict dims  # converter: dimension value -> shape id (1 -> 0), once _dim_keys is off
    cdef int64_t _dim_keys[64]  # converter: the dims by shape id while all are exact int64 ints
    cdef Py_ssize_t _n_dim_keys  # entries of _dim_keys in use; -1: ``dims`` is in use
    cdef list dim_values  # converter: shape id -> dimension value
    cdef list scalars  # converter: stashed scalars
    cdef list ranges  # converter: stashed slice ranges
    cdef object _log  # the FusionLog (property ``log``)
    cdef bint _basic  # the log prints executed steps
    # set by ``execute_plan_updating`` for its call only: the drain resets this policy and
    # updates it with the key of each op left, read in the encoding's buffer
    cdef Policy _drain_policy
    cdef ExecutionPlanStore _drain_store
    # the shape id a dim was last given in ``_dim_keys``, at a byte of the dim's hash (a
    # hint: ``_push_tensor`` checks ``_dim_keys`` at it, and scans where it is stale)
    cdef unsigned char _dim_hint[256]

    cdef void _clear(self) except *
    cdef tuple _dims_now(self)
    cdef int _dims_to_dict(self) except -1
    cdef dict _dims_map(self)
    cdef list executed_since(self, Py_ssize_t start, bint unfused_context)
    cdef list records_since(self, Py_ssize_t start)
    cdef tuple _segment_of(self, Py_ssize_t first, Py_ssize_t count)
    cdef int64_t _tensor_id(self, object tid) except? -1
    cdef Py_ssize_t _id_find(self, int64_t key, Py_ssize_t* at) noexcept
    cdef int _id_grow(self) except -1
    cdef int _ids_to_dict(self) except -1
    cdef dict _g2r_map(self)
    cdef list _latest_tensors(self)
    cdef list _r2g_ids(self)
    cdef Py_ssize_t _dim_id(self, object dim) except -1
    cdef bytes _encode(self, object operation)
    cdef bytes _encode_coded(self, object operation, int64_t code, int64_t struct_code)
    cdef int _encode_into(self, object operation, int64_t code, int64_t struct_code,
                          KeyBuf* b) except -1
    cdef object rel_at(self, Py_ssize_t i)
    cdef bytes key_at(self, Py_ssize_t i)
    cdef Py_ssize_t size(self) noexcept
    cdef object _materialize(self, Py_ssize_t i)
    cdef int execute_plan(self, object optimization, Py_ssize_t plan_id) except -1
    cdef int execute_plan_updating(self, object optimization, Py_ssize_t plan_id,
                                   Policy policy, ExecutionPlanStore store) except -1
    cdef object _compile(self, object optimization, Py_ssize_t plan_id)
    cdef int add_op(self, object index, object operation) except -1
    cdef int add_op_coded(self, object index, object operation, int64_t code,
                          int64_t struct_code) except -1
    cdef int add_op_updating(self, object index, object operation, int64_t code,
                             int64_t struct_code, Policy policy,
                             ExecutionPlanStore store) except -1
    cdef bint produces(self, object tensor_ids) except -1
    cdef int _run(self, object optimization) except -1
    cdef int _run_leaves(self, list leaves, object optimization, int drops) except -1
    cdef bint _drops_only(self, list leaves) except -1
    cdef object _step(self, object leaf)
    cdef tuple _global_ids(self, tuple relative_ids)
    cdef int _drain(self, Py_ssize_t count) except -1
