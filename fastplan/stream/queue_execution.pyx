# cython: language_level=3
"""The execution half of the operation queue: a stored plan's leaves read once, run as steps,
and the steps' records.

burn counterpart: ``crates/burn-fusion/src/stream/queue/execution.rs`` (``OperationQueue::
execute``: the strategy's leaves run in order, each a fused optimization or ops one by one,
then ``drain_queue``).
Part of fastplan's twin of ``refimpl/planner/stream/queue.py`` (``OperationQueue``'s
``execute``, ``execute_unfused``, ``_run`` and ``executed``), split along burn's own seam: the
queue and its relative keys stay in ``fastplan.stream.queue`` (burn's ``queue/base.rs``), whose
``OperationQueue`` methods call the functions here with the queue as first argument.

Differs from refimpl:

* a stored plan's leaves are read once (``_Compiled``, ``_Leaf``: fuser, score, relative
  inputs and outputs, positions, whether it only drops tensors) and reused at every later
  execution of it;
* ``executed`` is built on access from the segments recorded at execution time
  (``executed_steps``);
* a step context reuses the dims tuple of an earlier one when the dims are the same objects
  (``dims_now``);
* ``PlanStep``s are filled through borrowed pointers (``_new_step``, ``make_step``).
"""

from types import MappingProxyType

cimport cython

from cpython.bytes cimport PyBytes_AS_STRING
from cpython.object cimport PyTypeObject
from cpython.ref cimport Py_INCREF, PyObject
from cpython.tuple cimport PyTuple_New, PyTuple_SET_ITEM
from libc.stdint cimport int64_t

from fastplan._keys cimport (
    KeyBuf, _list_item, _tuple_item, _var_size, buf_free, buf_init, exact_long_long,
    field_offset, list_append_long, list_drop_front, list_empty, list_push, untrack_atomic,
)
from fastplan._vec cimport mem_calloc, mem_free
from fastplan.search.strategy cimport (
    fused_optimization, leaves_of, main_trace_of, max_shape_id_of, trace_ids, trace_op_names,
    unfused_block,
)
from fastplan.stream.cache cimport Policy
from fastplan.stream.queue cimport OperationQueue, _StepContext, _StepRecord
from fastplan.stream.relative cimport new_frozen

from refimpl.ops import op_named
from refimpl.planner.search.strategy import Operations
from refimpl.planner.stream.plan import PlanBlock, PlanStep
from refimpl.planner.stream.queue import ExecutedStep

_PlanStep = PlanStep
_PlanBlock = PlanBlock
_Operations = Operations
_ExecutedStep = ExecutedStep

# PlanStep is a frozen dataclass whose __post_init__ only sorts ``aliases``: steps built here
# have none, so they are filled field by field without it (equal objects, no dataclass call).
cdef tuple _STEP_FIELDS = ("kind", "ops", "fuser", "score", "inputs", "outputs", "aliases",
                           "blocks")
assert tuple(f for f in PlanStep.__slots__) == _STEP_FIELDS


cdef extern from "Python.h":
    object _generic_alloc "PyType_GenericAlloc"(PyTypeObject* type, Py_ssize_t nitems)
    object _gc_new_untracked "_PyObject_GC_New"(PyTypeObject* type)
    void PyObject_GC_UnTrack(object op)

# A PlanStep holds its eight fields and nothing else (no __dict__, no __weakref__): a fresh one
# is allocated untracked and unzeroed (``_new_step`` fills every slot before anything can see
# it), where PyType_GenericAlloc zeroes it and links it into the collector, to be untracked.
cdef bint _STEP_BARE = (
    PlanStep.__basicsize__ == object.__basicsize__ + 8 * sizeof(PyObject*)
    and PlanStep.__itemsize__ == 0 and PlanStep.__dictoffset__ == 0
    and PlanStep.__weakrefoffset__ == 0)


cdef Py_ssize_t _STEP_OFFSETS[8]
for _i, _name in enumerate(_STEP_FIELDS):
    _STEP_OFFSETS[_i] = field_offset(PlanStep, _name)


cdef inline void _put(object obj, Py_ssize_t offset, object value) noexcept:
    """Fill an empty slot of a fresh object (a new reference is stored)."""
    Py_INCREF(value)
    (<PyObject**>((<char*><PyObject*>obj) + offset))[0] = <PyObject*>value


cdef object _new_step(object kind, tuple ops, object fuser, object score, tuple inputs,
                      tuple outputs, tuple blocks):
    """``PlanStep(kind, ops, ...)``: a fresh instance, its eight slots filled directly."""
    cdef object step
    if _STEP_BARE:
        step = _gc_new_untracked(<PyTypeObject*>_PlanStep)
    else:
        step = _generic_alloc(<PyTypeObject*>_PlanStep, 0)
    _put(step, _STEP_OFFSETS[0], kind)
    _put(step, _STEP_OFFSETS[1], ops)
    _put(step, _STEP_OFFSETS[2], fuser)
    _put(step, _STEP_OFFSETS[3], score)
    _put(step, _STEP_OFFSETS[4], inputs)
    _put(step, _STEP_OFFSETS[5], outputs)
    _put(step, _STEP_OFFSETS[6], ())
    _put(step, _STEP_OFFSETS[7], blocks)
    if not _STEP_BARE:
        PyObject_GC_UnTrack(step)  # frozen, of strings, numbers and tuples: never in a cycle
    return step


cdef Py_ssize_t _DROP_CODE = op_named("Drop").code


cdef class _Leaf:
    """One leaf of a stored strategy, read once (``OperationQueue._run``)."""

    cdef bint fused
    cdef tuple ordering  # segment positions
    # ``ordering`` as C ints when each is an exact int in [0, 2**31) (else NULL: read the tuple)
    cdef Py_ssize_t* positions

    def __dealloc__(self):
        mem_free(self.positions)
    cdef Py_ssize_t count  # ops it executes: opt.len() or len(ordering)
    cdef object opt  # the fuser's optimization (fused leaves)
    cdef object fuser  # opt.name
    cdef object score
    cdef tuple inputs  # relative ids read from global memory
    cdef tuple outputs  # relative ids written back
    cdef tuple blocks  # PlanBlock per FuseBlock


cdef _Leaf _read_leaf(object leaf):
    cdef _Leaf info = _Leaf.__new__(_Leaf)
    cdef Py_ssize_t i, n
    cdef long long pos
    info.ordering = tuple(leaf.ordering)
    n = len(info.ordering)
    if n:
        info.positions = <Py_ssize_t*>mem_calloc(n, sizeof(Py_ssize_t))
        if info.positions == NULL:
            raise MemoryError()
        for i in range(n):
            if not exact_long_long(info.ordering[i], &pos) or not 0 <= pos < 0x7FFFFFFF:
                mem_free(info.positions)
                info.positions = NULL
                break
            info.positions[i] = <Py_ssize_t>pos
    if isinstance(leaf, _Operations):
        info.fused = False
        info.count = len(info.ordering)
        return info
    opt = leaf.opt
    info.fused = True
    info.opt = opt
    info.fuser = opt.name
    info.score = leaf.score
    if fused_optimization(opt):  # FusedOptimization's methods, read at the fields
        info.count = opt.num_ops
        main = main_trace_of(opt)
        info.inputs = trace_ids(main, False)
        info.outputs = trace_ids(main, True)
        names = trace_op_names(main)
    else:
        info.count = opt.len()
        info.inputs = tuple(opt.global_inputs())
        info.outputs = tuple(opt.global_outputs())
        names = opt.block_op_names()
    info.blocks = tuple([new_frozen(_PlanBlock, (tuple(block), None)) for block in names])
    return info


cdef class _Compiled:
    """A stored optimization's leaves, read once, and what ``execute`` checks."""

    cdef object optimization  # the BlockOptimization read (identity checked on reuse)
    cdef Py_ssize_t covered  # len(optimization.ordering)
    cdef object needed  # max_relative_shape_id(optimization.strategy)
    # ``needed`` as a C int (-1: None) when it is None or an exact int in [0, 2**62); -2: read
    # ``needed`` itself
    cdef long long needed_c
    cdef list leaves  # _Leaf
    # whether the leaves only drop tensors (``_drops_only``; -1: not known yet). A stored plan
    # runs where the queue's leading keys are its own (the policy matched them), so the
    # answer of its first execution holds for every later one
    cdef int drops


# The maps of an unfused step without context (launch planning reads none): one shared empty
# mapping that nobody writes to.
cdef object _NO_CONTEXT = MappingProxyType({})

cdef enum:
    DIMS_SEEN = 8  # dims tuples a queue keeps for its next contexts to share (``dims_now``)


# --- the queue's execution (``OperationQueue``'s methods of the same job) ----------------------


cdef list executed_steps(OperationQueue q, Py_ssize_t start, bint unfused_context):
    """``executed[start:]``, built as needed. Without ``unfused_context`` the unfused steps
    carry an empty context (what launch planning reads of them: nothing) and are not
    kept."""
    cdef Py_ssize_t i
    cdef list found = []
    cdef _StepRecord record
    cdef _StepContext context
    if start < 0:
        raise ValueError(f"no executed step at {start}")
    for i in range(start, len(q._records)):
        if i < len(q._executed):
            found.append(q._executed[i])
            continue
        record = q._records[i]
        context = record.context
        if context is None and not unfused_context:
            found.append(_ExecutedStep(record.step, None, (), _NO_CONTEXT, _NO_CONTEXT, ()))
            continue
        if context is None:
            segment, maps = segment_of(q, record.first, record.count)
            g2r, shapes, scalars = maps
            item = _ExecutedStep(record.step, None, segment, dict(g2r), dict(shapes),
                                 scalars)
        else:  # the converter's maps as the step executed, shared by its execution
            item = _ExecutedStep(record.step, record.optimization, context.segment(),
                                 context.g2r_map(), context.shapes_map(),
                                 context.scalar_values())
        found.append(item)
        if i == len(q._executed):
            list_append_long(q._executed, item)
    return found


cdef tuple segment_of(OperationQueue q, Py_ssize_t first, Py_ssize_t count):
    """The segment pending at some execution (``count`` ops from history ``first``) and
    the converter's maps then: the relative form of exactly those ops (rebuilt by encoding
    them again into a scratch queue)."""
    cdef OperationQueue scratch
    if q._segment_maps is None or q._segment_maps[0] != (first, count):
        segment = tuple(q._history[first:first + count])
        scratch = OperationQueue.__new__(OperationQueue)
        scratch._clear()
        for operation in segment:
            scratch._encode(operation)
        q._segment_maps = ((first, count), segment,
                              (scratch._g2r_map(), dict(enumerate(scratch.dim_values)),
                               tuple(scratch.scalars)))
    return q._segment_maps[1], q._segment_maps[2]


cdef int run_plan(OperationQueue q, object optimization, Py_ssize_t plan_id) except -1:
    """Run stored plan ``plan_id``'s ``optimization`` (``plan_id`` -1: a plan from
    elsewhere, read again at every call)."""
    cdef _Compiled compiled = <_Compiled>compile_plan(q, optimization, plan_id)
    cdef long long assigned_c
    cdef bint unfused
    if compiled.covered > len(q.shapes_assigned):  # a plan longer than the queue
        raise IndexError("list index out of range")
    assigned = q.shapes_assigned[compiled.covered - 1] if compiled.covered else 1
    if compiled.needed_c == -1:
        unfused = False
    elif compiled.needed_c >= 0 and exact_long_long(assigned, &assigned_c):
        unfused = compiled.needed_c >= assigned_c
    else:
        unfused = compiled.needed is not None and compiled.needed >= assigned
    if unfused:
        ordering = tuple(range(compiled.covered))
        run_optimization(q, unfused_block(ordering))
        return 0
    if compiled.drops < 0:
        compiled.drops = 1 if compiled.leaves and drops_only(q, compiled.leaves) else 0
    run_leaves(q, compiled.leaves, optimization, compiled.drops)
    return 0


cdef object compile_plan(OperationQueue q, object optimization, Py_ssize_t plan_id):
    """``optimization`` read (``_Compiled``), once per stored plan: kept by plan id and
    checked to be the very object read (``plan_id`` -1: not kept)."""
    cdef _Compiled compiled
    cdef long long needed
    if 0 <= plan_id < len(q._compiled_plans):
        entry = q._compiled_plans[plan_id]
        if entry is not None and (<_Compiled>entry).optimization is optimization:
            return <_Compiled>entry
    compiled = _Compiled.__new__(_Compiled)
    compiled.optimization = optimization
    compiled.covered = len(optimization.ordering)
    compiled.needed = max_shape_id_of(optimization.strategy)
    compiled.needed_c = -2
    if compiled.needed is None:
        compiled.needed_c = -1
    elif exact_long_long(compiled.needed, &needed) and 0 <= needed < (<long long>1 << 62):
        compiled.needed_c = needed
    compiled.drops = -1
    compiled.leaves = [_read_leaf(leaf) for leaf in leaves_of(optimization.strategy)]
    if plan_id >= 0:
        while len(q._compiled_plans) <= plan_id:
            q._compiled_plans.append(None)
        q._compiled_plans[plan_id] = compiled
    return compiled


cdef int run_optimization(OperationQueue q, object optimization) except -1:
    return run_leaves(q, [_read_leaf(leaf) for leaf in leaves_of(optimization.strategy)],
                            optimization, -1)


cdef int run_leaves(OperationQueue q, list leaves, object optimization, int drops) except -1:
    """Execute ``leaves``; ``drops``: whether they only drop tensors (``_drops_only``; -1:
    not known, asked here)."""
    cdef _Leaf leaf
    cdef Py_ssize_t executed = 0
    cdef Py_ssize_t pending = len(q.global_ops)
    cdef _StepContext context = None
    cdef _StepRecord record
    cdef PyObject* lst
    if drops < 0:
        drops = 1 if leaves and drops_only(q, leaves) else 0
    if leaves and not drops:
        # launch planning reads the converter's maps as they are now; ``plan`` names the
        # relative segment's plan (the launch memo replays a whole execution by it). An
        # execution that only drops tensors gets none: replaying it from the memo would
        # cost more than dropping them (and most executions of some streams are one Drop)
        context = _StepContext.__new__(_StepContext)
        context.history, context.first, context.count = q._history, q._first, pending
        context.plan = optimization
        for leaf in leaves:
            if leaf.fused:
                # a fused step reads every map: the context takes the tensor order and
                # the scalars (an empty list is left: ``()`` stands for it), and the drain
                # below starts new ones (``_clear``); the dims it gets as the tuple launch
                # planning reads, and the queue keeps its list to empty in place
                context.order = q.g2r_keys
                context.dims = dims_now(q)
                context.scalars = q.scalars if len(q.scalars) else ()
                q._taken = True
                break
        else:  # the walk reads only the tensor order and the dims: copies, and the
            # queue keeps its maps to empty in place
            context.order = q.g2r_keys[:]
            if q._id_table:  # the id table's ids: exact ints, none tracked
                PyObject_GC_UnTrack(context.order)
            else:
                untrack_atomic(context.order)
            context.dims = dims_now(q)
            context.scalars = ()
    for leaf in leaves:
        step = make_step(q, leaf)
        lst = <PyObject*>q.steps  # borrowed: see ``_queued``
        list_append_long(<list>lst, step)
        record = _StepRecord.__new__(_StepRecord)
        record.step, record.first, record.count = step, q._first, pending
        record.execution = context
        if leaf.fused:
            record.fused = True
            record.optimization, record.context = leaf.opt, context
        lst = <PyObject*>q._records
        list_append_long(<list>lst, record)
        if q._basic:
            q._log.write(f"[step] {step.kind} {step.fuser or ''} ops={list(step.ops)}")
        executed += leaf.count
    q._drain(executed)
    return 0


cdef tuple dims_now(OperationQueue q):
    """``tuple(dim_values)``, untracked: a tuple made for an earlier context when it holds
    the very same objects (one of the last ``DIMS_SEEN``: a stream's segments use few
    distinct dim lists, and the contexts only read them)."""
    cdef PyObject* values = <PyObject*>q.dim_values
    cdef Py_ssize_t n = _var_size(values), i, j
    cdef PyObject* seen
    cdef tuple dims
    if q._dims_seen is None:  # a queue made without ``__init__``
        q._dims_seen = []
    for j in range(len(q._dims_seen)):
        seen = _list_item(<PyObject*>q._dims_seen, j)
        if _var_size(seen) != n:
            continue
        for i in range(n):
            if _tuple_item(seen, i) != _list_item(values, i):
                break
        else:
            return <tuple>seen
    dims = tuple(q.dim_values)
    untrack_atomic(dims)
    if len(q._dims_seen) < DIMS_SEEN:
        list_push(q._dims_seen, dims)
    else:
        q._dims_seen[q._dims_next] = dims
        q._dims_next = (q._dims_next + 1) % DIMS_SEEN
    return dims


cdef bint drops_only(OperationQueue q, list leaves) except -1:
    """Whether the leaves are unfused ``Drop`` ops only (an op's code is its key's first
    slot)."""
    cdef _Leaf leaf
    cdef Py_ssize_t i, pos, n = len(q.keys)
    for leaf in leaves:
        if leaf.fused:
            return False
        for i in range(len(leaf.ordering)):
            if leaf.positions != NULL:
                pos = leaf.positions[i]
            else:
                pos = leaf.ordering[i]
                if pos < 0:
                    pos += n
            if not 0 <= pos < n or \
                    (<const int64_t*>PyBytes_AS_STRING(q.keys[pos]))[0] != _DROP_CODE:
                return False
    return True


cdef object make_step(OperationQueue q, object leaf_obj):
    # the indices, the ordering's items and the leaf's fields are read through borrowed
    # pointers: the queue holds its list and the leaf its fields (a typed local or a
    # field passed as an argument takes and drops a reference to each)
    cdef _Leaf leaf = <_Leaf>leaf_obj
    cdef PyObject* indices = <PyObject*>q.indices
    cdef PyObject* value
    cdef PyObject* fuser
    cdef PyObject* score
    cdef PyObject* inputs
    cdef PyObject* outputs
    cdef Py_ssize_t i, pos, n = len(leaf.ordering)
    cdef tuple ops = PyTuple_New(n)
    for i in range(n):
        if leaf.positions != NULL:  # read once (``_read_leaf``), none negative
            pos = leaf.positions[i]
        else:
            pos = leaf.ordering[i]
            if pos < 0:  # a plan made by hand: refimpl's list indexing
                pos += _var_size(indices)
        if not 0 <= pos < _var_size(indices):
            raise IndexError("list index out of range")
        value = _list_item(indices, pos)
        Py_INCREF(<object>value)
        PyTuple_SET_ITEM(ops, i, <object>value)
    untrack_atomic(ops)
    if not leaf.fused:
        return _new_step("unfused", ops, None, None, (), (), ())
    fuser, score = <PyObject*>leaf.fuser, <PyObject*>leaf.score
    inputs, outputs = <PyObject*>leaf.inputs, <PyObject*>leaf.outputs
    return _new_step("fused", ops, <object>fuser, <object>score,
                     global_ids(q, <tuple>inputs), global_ids(q, <tuple>outputs),
                     leaf.blocks)


cdef tuple global_ids(OperationQueue q, tuple relative_ids):
    # borrowed reads, as ``_step``'s (the queue holds the id list)
    cdef PyObject* ids = <PyObject*>q.g2r_keys if q._id_table \
        else <PyObject*>q.r2g_ids
    cdef PyObject* rid
    cdef PyObject* value
    cdef Py_ssize_t i, n = len(relative_ids)
    cdef tuple found = PyTuple_New(n)
    cdef long long rel
    if ids == <PyObject*>None:  # a queue never cleared (made without ``__init__``)
        raise TypeError("object of type 'NoneType' has no len()")
    for i in range(n):
        rid = _tuple_item(<PyObject*>relative_ids, i)
        if not exact_long_long(<object>rid, &rel) or not 0 <= rel < _var_size(ids):
            raise KeyError(<object>rid)
        value = _list_item(ids, <Py_ssize_t>rel)
        Py_INCREF(<object>value)
        PyTuple_SET_ITEM(found, i, <object>value)
    untrack_atomic(found)
    return found


cdef int drain(OperationQueue q, Py_ssize_t count) except -1:
    """Forget the first ``count`` ops and re-relativise the rest (burn ``drain_queue`` +
    ``reset_relative``)."""
    cdef Py_ssize_t i, n
    cdef Policy policy = q._drain_policy
    cdef KeyBuf b
    cdef PyObject* lst
    # the pending ops (each also held by the history), their keys (bytes), relative ops
    # (of the pending ops' values and fastplan's ints) and shape counts (ints) go through
    # borrowed pointers, as in ``_queued``: dropping those items runs no code
    lst = <PyObject*>q.global_ops
    if count == _var_size(lst):  # the whole queue (the usual drain)
        list_empty(<list>lst)
        list_empty(q.indices)
    else:
        list_drop_front(<list>lst, count)
        list_drop_front(q.indices, count)
    q._first += count
    n = _var_size(lst)
    q._clear()
    lst = <PyObject*>q.keys
    list_empty(<list>lst)
    lst = <PyObject*>q._rel
    list_empty(<list>lst)
    lst = <PyObject*>q.shapes_assigned
    list_empty(<list>lst)
    if policy is None:
        for i in range(n):
            list_push(q.keys, q._encode(q.global_ops[i]))
            list_push(q.shapes_assigned, len(q.dim_values))
        return 0
    # ``execute_plan_updating``: the policy starts over on the ops left (``add_op_updating``)
    policy.reset_all()
    for i in range(n):
        buf_init(&b)
        try:  # the op borrowed: the list (and the history) holds it
            q._encode_into(<object>_list_item(<PyObject*>q.global_ops, i), -1, -1,
                              &b)
            key = policy.update_buf(q._drain_store, &b)
        finally:
            buf_free(&b)
        lst = <PyObject*>q.keys  # borrowed: see ``_queued``
        list_push(<list>lst, key)
        lst = <PyObject*>q.shapes_assigned
        list_push(<list>lst, _var_size(<PyObject*>q.dim_values))
    return 0
