# cython: language_level=3
"""The lazy operation queue of one stream: pending ops, their relative form, their execution.

burn counterpart: ``crates/burn-fusion/src/stream/queue/{base,execution}.rs``
(``OperationQueue::add``, ``execute``, ``drain_queue``, ``reset_relative``) and the ``Segment``
of ``stream/multi.rs`` (register: lazy process; drain: sync process).
Mirrors ``refimpl/planner/stream/queue.py``: same names, same order, same results. Split along
burn's seam: running a stored plan's leaves and recording the steps is
``fastplan.stream.queue_execution`` (burn's ``queue/execution.rs``), called by the methods here.

Differs from refimpl:

* each queued op is relativised straight into its **key** (``fastplan._keys``); the relative
  ``OperationIr`` is built from the key only when asked for (``operations()``, the search),
  never on a cache hit;
* ``add_op_updating`` (``StreamPlanner``) and ``execute_plan_updating`` (the processor's
  drain) encode a key into a buffer the policy's trie walk reads (``Policy.update_buf``);
  where the trie holds the key, the queue keeps the trie's own ``bytes`` object;
* a stored plan's leaves are read once and reused at every later execution of it
  (``queue_execution``);
* ``executed`` and ``converter`` are built on access from the segments recorded at execution
  time; the converter keeps no list of latest snapshots (``_latest_tensors`` reads the pending
  ops), and while every id is an exact int64 ``g2r_keys`` is also the relative-to-global map;
* a dim is looked up first at the shape id it last had (``_dim_hint``), and a step context
  reuses the dims tuple of an earlier one when the dims are the same objects (``_dims_now``);
* tensor uses are encoded and the queue's lists emptied and refilled through borrowed
  pointers (``_push_tensor``, ``_clear``).

``ExecutedStep`` is refimpl's class (plain data).
"""


cimport cython

from cpython.dict cimport PyDict_GetItem, PyDict_SetItem
from cpython.ref cimport PyObject
from libc.stdint cimport int64_t, uint64_t
from libc.string cimport memset

from fastplan._keys cimport (
    _tuple_item, _var_size, F_INT, F_RANGES, F_SCALAR, F_TENSOR, F_TENSORS, KeyBuf, Slots,
    StructInfo, buf_bytes, buf_free, buf_grow, buf_init, buf_push, dtype_slot_at, exact_codes,
    exact_long_long, int_slot, list_append_long, list_empty, list_push, list_reserved, op_codes,
    slot, slots, status_slot_at, struct_info, tensor_id, untrack_atomic, value_slot,
)
from fastplan._vec cimport mem_calloc, mem_free
from fastplan.stream.cache cimport ExecutionPlanStore, Policy
from fastplan.stream.queue_execution cimport (
    compile_plan, dims_now, drain, drops_only, executed_steps, global_ids, make_step,
    run_leaves, run_optimization, run_plan, segment_of,
)
from fastplan.stream.queue_relative cimport materialize, relative_at

from fastplan._keys import BoundaryError

from fastplan.stream.relative import OperationConverter as _Converter

from refimpl.ir import TensorIr
from refimpl.planner.log import NO_LOG, LogLevel
from refimpl.planner.search.strategy import Operations
from refimpl.planner.stream.plan import PlanBlock, PlanStep
from refimpl.planner.stream.queue import ExecutedStep

__all__ = ["OperationQueue", "ExecutedStep"]

cdef object _TensorIr = TensorIr
_PlanStep = PlanStep
_PlanBlock = PlanBlock
_Operations = Operations
_ExecutedStep = ExecutedStep
_BASIC = LogLevel.BASIC


@cython.no_gc  # holds lists, dicts and ops the queue made: nothing that leads back to it
cdef class _StepContext:
    """The converter's maps when a segment executed (see queue.pxd)."""

    cdef object segment(self):
        if self.segment_ops is None:
            self.segment_ops = tuple(self.history[self.first:self.first + self.count])
        return self.segment_ops

    cdef object shapes_map(self):
        cdef dict found
        cdef Py_ssize_t i
        if self.shapes is None:  # dict(enumerate(dims)), filled without the two calls
            values = self.dim_values if self.dim_values is not None else self.dims
            found = {}
            for i in range(len(values)):
                found[i] = values[i]
            self.shapes = found
        return self.shapes

    cdef tuple scalar_values(self):
        if type(self.scalars) is not tuple:
            self.scalars = tuple(self.scalars)
            untrack_atomic(self.scalars)
        return <tuple>self.scalars

    cdef object g2r_map(self):
        if self.g2r is None:  # the converter's g2r as it was: its keys, each at its position
            self.g2r = _positions(self.order)
        return self.g2r

    cdef object position_map(self):
        """Global id -> its position in ``tensor_order()``: a queue's own context has its g2r
        built from the order, positions by construction; a given one (``context_given``) gets
        a map of its own."""
        if self.positions is None:
            self.positions = self.g2r_map() if self.history is not None \
                else _positions(self.tensor_order())
        return self.positions

    cdef list tensor_order(self):
        if self.order is None:
            self.order = list(self.g2r)
        return self.order

    cdef tuple dim_tuple(self):
        if self.dims is None:
            self.dims = tuple(self.dim_values) if self.dim_values is not None \
                else tuple(self.shapes.values())
            untrack_atomic(self.dims)
        return self.dims


cdef dict _positions(list order):
    """Each id of ``order`` -> its position."""
    cdef dict found = {}
    cdef Py_ssize_t i
    for i in range(len(order)):
        found[order[i]] = i
    return found


cdef _StepContext context_given(object segment, object g2r, object shapes, object scalars):
    """A ``_StepContext`` of maps given as an ``ExecutedStep`` holds them."""
    cdef _StepContext context = _StepContext.__new__(_StepContext)
    context.segment_ops, context.g2r, context.shapes, context.scalars = \
        segment, g2r, shapes, scalars
    return context


@cython.no_gc  # a step, an optimization and a context: nothing that leads back to it
cdef class _StepRecord:
    """One executed step as the queue recorded it (see queue.pxd)."""


cdef inline int _queued(OperationQueue q, object index, object operation, bytes key) except -1:
    """Append an encoded op (its key made) to the queue's pending lists and its history (a
    module function: the compiler inlines it into both ``add_op`` paths)."""
    # each list is passed through a borrowed pointer (``q`` holds it, and an append runs no
    # code that could replace it): a field passed as a list argument takes and drops a
    # reference to it
    cdef PyObject* lst = <PyObject*>q._history
    list_append_long(<list>lst, operation)
    lst = <PyObject*>q.global_ops
    list_push(<list>lst, operation)
    lst = <PyObject*>q.indices
    list_push(<list>lst, index)
    lst = <PyObject*>q.keys
    list_push(<list>lst, key)
    lst = <PyObject*>q.shapes_assigned
    list_push(<list>lst, _var_size(<PyObject*>q.dim_values))
    return 0


cdef class OperationQueue:
    """Pending ops of one stream (burn ``OperationQueue``); also the processor's segment
    (burn ``Segment``).

    Mirrors refimpl.planner.stream.queue.OperationQueue.
    """

    def __init__(self, log=NO_LOG):
        self.global_ops = []
        self.indices = []
        self.shapes_assigned = []
        self.steps = []
        self.keys = []
        self._rel = []
        self._made = {}
        self._history = []
        self._first = 0
        self._records = []
        self._dims_seen = []
        self._executed = []
        self._compiled_plans = []
        self._segment_maps = None
        self.log = log
        self._clear()

    @property
    def log(self):
        return self._log

    @log.setter
    def log(self, value):
        self._log = value
        self._basic = value.enabled(_BASIC)

    # --- the converter's state ---------------------------------------------------------------

    def __dealloc__(self):
        mem_free(self._ids)

    cdef void _clear(self) except *:
        # ``g2r`` and ``dims`` hold entries only once their C forms were left (``_id_table``
        # off, ``_n_dim_keys`` -1): most segments never fill them, and need not empty them
        cdef bint g2r_used = not self._id_table, dims_used = self._n_dim_keys < 0
        # the maps' lists are emptied through borrowed pointers (as in ``_queued``): each item
        # (an id, a dim, a scalar, a range) came from an op of the segment, which the history
        # holds, so dropping it runs no code
        cdef PyObject* lst
        self._id_table = True
        self._id_gen += 1
        if self._id_gen == 0:  # wrapped around: no slot may look current
            if self._ids != NULL:
                memset(self._ids, 0, self._id_cap * sizeof(IdSlot))
            self._id_gen = 1
        if self.g2r is None:
            self.g2r = {}
            self.r2g_ids = []
            self.dims = {}
            self.ranges = []
        else:
            if g2r_used:
                self.g2r.clear()
                list_empty(self.r2g_ids)
            if dims_used:
                self.dims.clear()
            lst = <PyObject*>self.ranges
            list_empty(<list>lst)
        if self.g2r_keys is None or self._taken:
            # a _StepContext holds the maps of the last execution: new ones, not a copy of them
            if self._taken:  # those are final now: out of the collector's view if they can be
                if g2r_used:
                    untrack_atomic(self.g2r_keys)
                else:  # the id table's ids: exact ints, none tracked
                    PyObject_GC_UnTrack(self.g2r_keys)
                # the new ones fill to about the old lengths (at most _RESERVE each: the
                # contexts keep what they took, spare room included)
                self.g2r_keys = list_reserved(min(len(self.g2r_keys), _RESERVE))
                if len(self.scalars):  # taken (an empty list is not: ``_run_leaves``)
                    untrack_atomic(self.scalars)
                    self.scalars = list_reserved(min(len(self.scalars), _RESERVE))
                list_empty(self.dim_values)
            else:
                self.g2r_keys, self.dim_values, self.scalars = [], [], []
            self._taken = False
        else:
            lst = <PyObject*>self.g2r_keys
            list_empty(<list>lst)
            lst = <PyObject*>self.dim_values
            list_empty(<list>lst)
            lst = <PyObject*>self.scalars
            list_empty(<list>lst)
        self._dim_keys[0] = 1  # shape id 0 is the dim 1
        self._n_dim_keys = 1
        lst = <PyObject*>self.dim_values
        list_push(<list>lst, 1)

    cdef int _dims_to_dict(self) except -1:
        """Look dims up in the dict ``dims`` from now on (a dim that is no exact int64 int, or
        more distinct dims than ``_dim_keys`` holds)."""
        if self._n_dim_keys >= 0:
            self.dims.clear()
            for sid, value in enumerate(self.dim_values):
                self.dims[value] = sid
            self._n_dim_keys = -1
        return 0

    cdef dict _dims_map(self):
        """The converter's dim -> shape id map."""
        if self._n_dim_keys >= 0:
            return {value: sid for sid, value in enumerate(self.dim_values)}
        return dict(self.dims)

    @property
    def converter(self):
        """The ``OperationConverter`` refimpl's queue would hold now (built on access)."""
        r2g = {}
        for rel, tensor in enumerate(self._latest_tensors()):
            r2g[rel] = tensor
        return _Converter(r2g, self._g2r_map(), self._dims_map(),
                          dict(enumerate(self.dim_values)), list(self.scalars),
                          list(self.ranges))

    @property
    def relative(self):
        """The pending ops in relative form (built on access)."""
        return self.operations()

    @property
    def executed(self):
        """Every step executed so far, with its context (``ExecutedStep``)."""
        self.executed_since(len(self._executed), True)
        return self._executed

    cdef list executed_since(self, Py_ssize_t start, bint unfused_context):
        """``executed[start:]``, built as needed (``queue_execution.executed_steps``)."""
        return executed_steps(self, start, unfused_context)

    cdef list records_since(self, Py_ssize_t start):
        """The ``_StepRecord`` of every step executed from ``start`` on."""
        if start < 0:
            raise ValueError(f"no executed step at {start}")
        return self._records[start:]

    cdef tuple _segment_of(self, Py_ssize_t first, Py_ssize_t count):
        """The segment pending at some execution and the converter's maps then."""
        return segment_of(self, first, count)

    # --- keys ------------------------------------------------------------------------------

    cdef dict _g2r_map(self):
        """The converter's global id -> relative id map (a new dict)."""
        if self._id_table:
            return {tid: rel for rel, tid in enumerate(self.g2r_keys)}
        return dict(self.g2r)

    cdef list _latest_tensors(self):
        """Relative id -> the latest snapshot of its tensor (refimpl's converter keeps it as it
        relativises each op): the pending ops' tensor uses walked again, in the order
        ``_encode`` read them, since the converter was last cleared."""
        cdef dict g2r = self._g2r_map()
        cdef list latest = [None] * len(self.g2r_keys)
        for operation in self.global_ops:
            for tensor in _tensor_uses(operation):
                latest[g2r[tensor_id(tensor)]] = tensor
        return latest

    cdef list _r2g_ids(self):
        """Relative id -> global id: ``g2r_keys`` while the id table is in use (exact int64
        ints: the id a later use brings is an equal int), else ``r2g_ids`` (the latest id, as
        refimpl reads it from the latest snapshot: ``0`` and ``False`` are one key)."""
        return self.g2r_keys if self._id_table else self.r2g_ids

    cdef Py_ssize_t _id_find(self, int64_t key, Py_ssize_t* at) noexcept:
        """The relative id of global id ``key`` in the id table (-1: absent; ``at`` is then
        the free slot for it). The table is never full (``_id_grow``)."""
        cdef uint64_t mask = <uint64_t>self._id_cap - 1
        cdef uint64_t i = (<uint64_t>key * <uint64_t>0x9E3779B97F4A7C15) >> 32
        cdef IdSlot* entry
        while True:
            i &= mask
            entry = &self._ids[i]
            if entry.gen != self._id_gen:
                at[0] = <Py_ssize_t>i
                return -1
            if entry.key == key:
                at[0] = <Py_ssize_t>i
                return entry.rel
            i += 1

    cdef int _id_grow(self) except -1:
        """Double the id table (or allocate it), keeping the current segment's entries."""
        cdef IdSlot* old = self._ids
        cdef Py_ssize_t old_cap = self._id_cap, i, at
        cdef Py_ssize_t cap = 2 * old_cap if old_cap else 64
        self._ids = <IdSlot*>mem_calloc(cap, sizeof(IdSlot))
        if self._ids == NULL:
            self._ids, self._id_cap = old, old_cap
            raise MemoryError()
        self._id_cap = cap
        for i in range(old_cap):
            if old[i].gen == self._id_gen:
                self._id_find(old[i].key, &at)
                self._ids[at] = old[i]
        mem_free(old)
        return 0

    cdef int _ids_to_dict(self) except -1:
        """Leave the id table for ``g2r`` (an id that is not an exact int64 int: the dict
        compares it with the others as Python does, ``True == 1``)."""
        cdef Py_ssize_t rel
        self.g2r.clear()
        list_empty(self.r2g_ids)
        for rel in range(len(self.g2r_keys)):
            PyDict_SetItem(self.g2r, self.g2r_keys[rel], rel)
            list_push(self.r2g_ids, self.g2r_keys[rel])
        self._id_table = False
        return 0

    cdef int64_t _tensor_id(self, object tid) except? -1:
        """The relative id of global id ``tid`` through ``g2r`` (``_tensor_rel`` reads the id
        table inline and comes here for the rest): leaves the table first if it is in use."""
        cdef PyObject* found
        cdef Py_ssize_t rel
        if self._id_table:
            self._ids_to_dict()
        found = PyDict_GetItem(self.g2r, tid)
        if found != NULL:
            rel = <object>found
            # refimpl keeps the latest snapshot per relative id and maps steps back through
            # its id: equal ids (0 and False) may differ in what they print
            self.r2g_ids[rel] = tid
            return rel
        rel = len(self.r2g_ids)
        PyDict_SetItem(self.g2r, tid, rel)
        list_push(self.g2r_keys, tid)
        list_push(self.r2g_ids, tid)
        return rel

    cdef Py_ssize_t _dim_id(self, object dim) except -1:
        """The shape id of ``dim`` through ``dims`` (``_push_tensor`` reads ``_dim_keys``
        inline and comes here for the rest): leaves ``_dim_keys`` first if it is in use."""
        cdef PyObject* found
        cdef Py_ssize_t sid
        self._dims_to_dict()
        found = PyDict_GetItem(self.dims, dim)
        if found != NULL:
            return <Py_ssize_t><object>found
        sid = len(self.dim_values)
        PyDict_SetItem(self.dims, dim, sid)
        list_push(self.dim_values, dim)
        return sid

    cdef bytes _encode(self, object operation):
        """The key of ``operation``'s relative form, filling the converter's maps."""
        return self._encode_coded(operation, -1, -1)

    cdef bytes _encode_coded(self, object operation, int64_t code, int64_t struct_code):
        """``_encode`` of an op whose codes ``exact_codes`` gave (``code`` -1: not known)."""
        cdef KeyBuf b
        buf_init(&b)
        try:
            self._encode_into(operation, code, struct_code, &b)
            return buf_bytes(&b)
        finally:
            buf_free(&b)

    cdef int _encode_into(self, object operation, int64_t code, int64_t struct_code,
                          KeyBuf* b) except -1:
        """The slots of ``operation``'s key, pushed into ``b`` (``_encode_coded``)."""
        cdef const StructInfo* info
        cdef Py_ssize_t f, j, count
        cdef int kind
        cdef PyObject* desc
        cdef PyObject* raw
        cdef PyObject* items
        cdef tuple tensors = None
        if code < 0:
            op_codes(operation, &code, &struct_code)
        # borrowed: the caller holds ``operation``, whose exact type ``op_codes`` (or the
        # caller's ``exact_codes``) checked, and the frozen op holds its desc and fields
        desc = _read(<PyObject*>operation, _AT.desc)
        info = &_STRUCT_INFOS[struct_code]
        buf_push(b, code)
        buf_push(b, struct_code)
        for f in range(info.n_fields):
            raw = _read(desc, info.offsets[f])
            kind = info.kinds[f]
            if kind == F_TENSOR or kind == F_TENSORS:
                # one call site for both (the compiler then inlines ``_push_tensor``)
                count = 1
                items = raw
                if kind == F_TENSORS:
                    if _type_of(raw) != <void*>tuple:  # a tuple is read in place
                        tensors = tuple(<object>raw)
                        items = <PyObject*>tensors
                    count = _tuple_size(items)
                    buf_push(b, count)
                for j in range(count):
                    _push_tensor(self, b, raw if kind == F_TENSOR else _tuple_item(items, j))
                continue
            if kind == F_SCALAR:
                list_push(self.scalars, <object>raw)
                buf_push(b, _var_size(<PyObject*>self.scalars) - 1)
            elif kind == F_INT:
                buf_push(b, int_slot(<object>raw))
            elif kind == F_RANGES:
                placeholders = []
                for one in <object>raw:
                    list_push(self.ranges, one)
                    placeholders.append((len(self.ranges) - 1, len(self.ranges) - 1))
                buf_push(b, value_slot(tuple(placeholders)))
            else:
                buf_push(b, value_slot(<object>raw))
        return 0

    cdef object rel_at(self, Py_ssize_t i):
        """The relative op at position ``i``, built from its key on first use
        (``queue_relative.relative_at``)."""
        return relative_at(self, i)

    cdef bytes key_at(self, Py_ssize_t i):
        return <bytes>self.keys[i]

    cdef Py_ssize_t size(self) noexcept:
        return len(self.global_ops)

    cdef object _materialize(self, Py_ssize_t i):
        return materialize(self, i)

    # --- StreamSegment -----------------------------------------------------------------------

    def operations(self):
        cdef Py_ssize_t i
        for i in range(len(self.global_ops)):
            self.rel_at(i)
        return self._rel

    def execute(self, plan_id, store):
        """Run the leading ops a stored plan covers. A plan naming a relative shape id this
        queue's covered ops never assigned runs its ops unfused in order (burn #5400)."""
        self.execute_plan(store.get(plan_id).optimization, -1)

    cdef int execute_plan(self, object optimization, Py_ssize_t plan_id) except -1:
        """Run stored plan ``plan_id``'s ``optimization`` (``queue_execution.run_plan``)."""
        return run_plan(self, optimization, plan_id)

    cdef int execute_plan_updating(self, object optimization, Py_ssize_t plan_id,
                                   Policy policy, ExecutionPlanStore store) except -1:
        """``execute_plan``, then ``policy.reset_all`` and ``policy.update_key`` of each op
        left, done by the drain as it encodes those ops again: it reads each key in the
        encoding's buffer (``Policy.update_buf``), so that a key the plan trie holds is that
        ``bytes`` object and no other is made and freed (the processor's ``_reset`` did it
        after the drain, from a new ``bytes`` per op left)."""
        self._drain_policy, self._drain_store = policy, store
        try:
            return self.execute_plan(optimization, plan_id)
        finally:
            self._drain_policy = None
            self._drain_store = None

    cdef object _compile(self, object optimization, Py_ssize_t plan_id):
        """``optimization`` read once per stored plan (``queue_execution.compile_plan``)."""
        return compile_plan(self, optimization, plan_id)

    def execute_unfused(self, optimization):
        self._run(optimization)

    # --- queue -------------------------------------------------------------------------------

    def add(self, index, operation):
        """Queue one op (``index`` = its position in ``Stream.items``)."""
        self.add_op(index, operation)

    cdef int add_op(self, object index, object operation) except -1:
        return self.add_op_coded(index, operation, -1, -1)

    cdef int add_op_coded(self, object index, object operation, int64_t code,
                          int64_t struct_code) except -1:
        """``add_op`` of an op whose codes ``exact_codes`` gave (``code`` -1: not known; the
        stream's read-ahead knows them, ``fastplan._keys.prefetch_ahead``)."""
        return _queued(self, index, operation, self._encode_coded(operation, code, struct_code))

    cdef int add_op_updating(self, object index, object operation, int64_t code,
                             int64_t struct_code, Policy policy,
                             ExecutionPlanStore store) except -1:
        """``add_op_coded``, then ``policy.update_key`` of the op's key, which the policy
        reads in the encoding's buffer: a key its plan trie holds is that ``bytes`` object,
        and no other is made (``Policy.update_buf``)."""
        cdef KeyBuf b
        buf_init(&b)
        try:
            self._encode_into(operation, code, struct_code, &b)
            key = policy.update_buf(store, &b)
        finally:
            buf_free(&b)
        return _queued(self, index, operation, key)

    def forget_steps(self):
        """Drop the executed steps (``steps``, ``executed``); the pending ops stay.

        Their records and the history of ops already executed go too: the history restarts at
        the first pending op. Records and steps handed out before keep what they refer to."""
        self.steps = []
        self._records = []
        self._executed = []
        self._history = self._history[self._first:]
        self._first = 0
        self._segment_maps = None

    def produces_pending(self, tensor_ids):
        """Whether a pending op outputs any of the tensors (their handle doesn't exist yet)."""
        return self.produces(tensor_ids)

    cdef bint produces(self, object tensor_ids) except -1:
        """``produces_pending``: the ``out`` tensor of each pending op, read at its slot (a
        sync asks; the ops were checked when queued)."""
        cdef int64_t code, struct_code
        cdef const StructInfo* info
        wanted = set(tensor_ids)
        for operation in self.global_ops:
            if not exact_codes(operation, &code, &struct_code):
                continue
            info = struct_info(struct_code)
            if info.out_field < 0 or info.kinds[info.out_field] != F_TENSOR:
                continue
            out = slot(slot(operation, _AT.desc), info.offsets[info.out_field])
            if tensor_id(out) in wanted:
                return True
        return False

    # --- execution (``fastplan.stream.queue_execution``: burn's ``queue/execution.rs``) ------

    cdef int _run(self, object optimization) except -1:
        return run_optimization(self, optimization)

    cdef int _run_leaves(self, list leaves, object optimization, int drops) except -1:
        """Execute ``leaves`` (``queue_execution.run_leaves``)."""
        return run_leaves(self, leaves, optimization, drops)

    cdef tuple _dims_now(self):
        return dims_now(self)

    cdef bint _drops_only(self, list leaves) except -1:
        return drops_only(self, leaves)

    cdef object _step(self, object leaf_obj):
        return make_step(self, leaf_obj)

    cdef tuple _global_ids(self, tuple relative_ids):
        return global_ids(self, relative_ids)

    cdef int _drain(self, Py_ssize_t count) except -1:
        """Forget the first ``count`` ops and re-relativise the rest (burn ``drain_queue`` +
        ``reset_relative``: ``queue_execution.drain``)."""
        return drain(self, count)


cdef enum:
    _RESERVE = 64  # most items a new map list (_clear) is made to hold before it grows


cdef list _tensor_uses(object operation):
    """The tensors of a queued op (checked by ``_encode``), in the order ``_encode`` reads
    them: fields in schema order, a tuple field's tensors in turn."""
    cdef int64_t code, struct_code
    cdef const StructInfo* info
    cdef Py_ssize_t f
    cdef list found = []
    op_codes(operation, &code, &struct_code)
    info = struct_info(struct_code)
    desc = slot(operation, _AT.desc)
    for f in range(info.n_fields):
        if info.kinds[f] == F_TENSOR:
            found.append(slot(desc, info.offsets[f]))
        elif info.kinds[f] == F_TENSORS:
            found.extend(tuple(slot(desc, info.offsets[f])))
    return found


# --- encoding a tensor use (``OperationQueue._encode``) ---------------------------------------

cdef extern from "Python.h":
    void* _type_of "Py_TYPE"(PyObject* op) noexcept
    void PyObject_GC_UnTrack(object op)
    Py_ssize_t _tuple_size "PyTuple_GET_SIZE"(PyObject* op) noexcept

cdef const Slots* _AT = slots()  # the field offsets and enum members, for good
# the operand structs' ``StructInfo``s, by struct code (``struct_info(code)`` is
# ``&_STRUCT_INFOS[code]``: the encoding indexes it without a call)
cdef const StructInfo* _STRUCT_INFOS = struct_info(0)
cdef void* _TENSOR_TYPE = <void*>TensorIr


cdef inline PyObject* _read(PyObject* obj, Py_ssize_t offset) except NULL:
    """The field at ``offset`` of a ``__slots__`` object of a checked exact type (borrowed),
    as ``slot`` reads it without a reference of its own."""
    cdef PyObject* value = (<PyObject**>((<char*>obj) + offset))[0]
    if value == NULL:
        raise AttributeError("a field of a frozen dataclass is not set")
    return value


cdef inline PyObject* _push_tensor(OperationQueue q, KeyBuf* b, PyObject* tensor) except NULL:
    """Push one tensor use: relative id, rank, the shape's relative dims, the dtype's and the
    status's slots. Its global id (borrowed from ``tensor``).

    A module function, not a method: the compiler inlines it, and it reads the fields and the
    dims through borrowed pointers, where a method would take a reference to each."""
    cdef PyObject* shape
    cdef PyObject* tid
    cdef PyObject* dim
    cdef Py_ssize_t i, k, n, rank
    cdef int64_t rel
    cdef int64_t* out
    cdef long long c_dim
    cdef uint64_t h
    cdef PyObject* lst
    if _type_of(tensor) != _TENSOR_TYPE:
        raise BoundaryError(
            f"fastplan takes TensorIr operands, not {type(<object>tensor).__name__}")
    shape = _read(tensor, _AT.shape)
    if _type_of(shape) != <void*>tuple:
        raise BoundaryError(
            f"a tensor shape must be a tuple, not {type(<object>shape).__name__}")
    tid = _read(tensor, _AT.tid)
    rel = _tensor_rel(q, tid)
    rank = _tuple_size(shape)
    while b.len + rank + 4 > b.cap:  # room for the whole use: no check per slot below
        buf_grow(b)
    # the slots are written through a local pointer and the length set once at the end: a
    # store through ``b.data`` (int64) may alias ``b.len`` for the compiler, which then reads
    # it again after every slot
    out = b.data + b.len
    out[0] = rel
    out[1] = rank
    n = q._n_dim_keys
    for i in range(rank):
        dim = _tuple_item(shape, i)
        if n >= 0 and exact_long_long(<object>dim, &c_dim):
            # a dim is looked for first where it was last put (``_dim_hint``, at a byte of
            # its hash: checked against ``_dim_keys`` below)
            h = (<uint64_t>c_dim * <uint64_t>0x9E3779B97F4A7C15) >> 56
            k = q._dim_hint[h]
            if k < n and q._dim_keys[k] == c_dim:
                out[2 + i] = k
                continue
            for k in range(n):
                if q._dim_keys[k] == c_dim:
                    break
            else:
                if n < 64:
                    k = n
                    q._dim_keys[k] = c_dim
                    n += 1
                    q._n_dim_keys = n
                    lst = <PyObject*>q.dim_values  # borrowed: see ``_queued``
                    list_push(<list>lst, <object>dim)
                else:
                    k = q._dim_id(<object>dim)
                    n = q._n_dim_keys
            if k < 64:
                q._dim_hint[h] = <unsigned char>k
        else:
            k = q._dim_id(<object>dim)
            n = q._n_dim_keys
        out[2 + i] = k
    out[2 + rank] = dtype_slot_at(_AT, <object>_read(tensor, _AT.dtype))
    out[3 + rank] = status_slot_at(_AT, <object>_read(tensor, _AT.status))
    b.len += rank + 4
    return tid


cdef inline int64_t _tensor_rel(OperationQueue q, PyObject* tid) except? -1:
    """The relative id of global id ``tid`` (taking it in if new), through the id table while
    every id is an exact int64 int (else ``_tensor_id``). The table's ids need no other list:
    ``g2r_keys`` is then relative id -> global id, and the latest snapshot of each tensor is
    read again from the pending ops when asked (``_latest_tensors``)."""
    cdef long long key
    cdef uint64_t i, mask
    cdef IdSlot* entry
    cdef Py_ssize_t rel
    cdef PyObject* lst
    if not q._id_table or not exact_long_long(<object>tid, &key):
        return q._tensor_id(<object>tid)
    # ``g2r_keys`` is a list while the table is in use (``_clear`` set both)
    rel = _var_size(<PyObject*>q.g2r_keys)
    if 2 * (rel + 1) > q._id_cap:
        q._id_grow()
    mask = <uint64_t>q._id_cap - 1
    i = (<uint64_t>key * <uint64_t>0x9E3779B97F4A7C15) >> 32
    while True:  # as ``_id_find``: the table is never full
        i &= mask
        entry = &q._ids[i]
        if entry.gen != q._id_gen:
            break
        if entry.key == key:
            return entry.rel
        i += 1
    entry.key = key
    entry.rel = rel
    entry.gen = q._id_gen
    lst = <PyObject*>q.g2r_keys  # borrowed: see ``_queued``
    list_push(<list>lst, <object>tid)
    return rel
