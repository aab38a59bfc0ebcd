# cython: language_level=3
"""Launch planning of a whole executed stream: every fused step's ``aliases`` and block widths.

burn counterpart: ``OperationQueue::execute`` calling each optimization's ``execute``, which
runs ``FuseTraceLauncher::launch`` (launch planning) before its kernel.
Mirrors ``refimpl/planner/launch/execute.py`` (``launch_plan_stream``: the one walk with its
layout backend, what the interpreter runs with ``with_values=False``): the same walk, step by
step, with the same results. Unfused ops lay out their outputs
(``fastplan.launch.handles.Memory.run_unfused``); fused steps run their optimization's launch
path through ``fastplan.launch.launch.plan_launch_walk`` (what the walk reads of a launch,
without the kernel's layout marks and frozen plan).

Differs from refimpl:

* **The step memo** (``LaunchMemo``). A fused step's outcome is a pure function of its
  optimization, the real dims of its relative shape ids, the device, and the layouts of its
  tensors' live handles (shape, strides, offset, dtype, shared buffers and their use counts:
  burn's ``can_mut``). The memo keys on exactly that, stores the outcome in relative terms
  (aliases and handles as positions in the step's global-to-relative order, fresh buffers by
  allocation rank) and replays it on a hit. Slice ranges never reach a fused step, and scalar
  values do not change a launch.
* **Whole executions.** The steps of one plan the queue ran are stored as one outcome too,
  keyed by the plan's id, each step's optimization id or op count, the dims and the live
  layouts of every tensor of its segment; a hit replays the execution in one go. An execution
  with a ``Slice`` (stashed ranges) or an ``Init`` (input specs) is not stored.
* **Replays** register handles by their fields (``Memory.register_at``: built when first
  read) and find the tensors they change by the live-table keys the memo key read; a replayed
  step without aliases gives back the ``PlanStep`` it filled from the same plan-cache step.
* **One walk's memo.** ``fastplan.planner.plan`` gives its one walk a memo that stores whole
  executions only (``LaunchMemo.keep_steps`` false): within one walk a step's key spans the
  same tensors as its execution's. A runtime's memo, kept across iterations, keeps both.
* The memo keeps the handles it made for the stream's inputs and gives them again to an input
  of the same layout, whatever its tensor id.

A step whose tensors reach past int64 extents is refused with ``OverflowError`` before the C
cores see it; ``fastplan.planner`` then hands the executed steps to refimpl's walk. The cyclic
collector is paused during the walk (docs/fastplan.md §7).
"""

cimport cython

import gc as _gc

from cpython.bytes cimport PyBytes_FromStringAndSize
from cpython.list cimport PyList_AsTuple, PyList_New, PyList_SET_ITEM
from cpython.object cimport PyTypeObject
from cpython.ref cimport Py_INCREF, PyObject
from cpython.tuple cimport PyTuple_New, PyTuple_SET_ITEM
from libc.stdint cimport int64_t, uint64_t

from fastplan._keys cimport (
    FieldRead, KeyBuf, KeyTable, _list_item, _tuple_item, buf_bytes, buf_free, buf_grow,
    buf_init, buf_push, exact_long_long, field, field_offset, field_read, key_hash,
    list_append_long, new_instance, set_slot, slot,
)
from fastplan.launch.handles cimport (
    Memory, _InputsMemo, _Live, handle_buffer, handle_layout, live_find, live_handle,
    replayable_op, tensor_key,
)
from fastplan.launch.launch cimport (
    _WalkLaunch, context_of_c, extents_fit, plan_launch_walk, walk_matmul_refused,
)
from fastplan.stream.queue cimport _StepContext, _StepRecord, context_given
from fastplan.stream.relative cimport make_frozen

cdef extern from *:
    # fastplan._keys' ``compact_int`` on a borrowed pointer (its C function, emitted with the
    # cimport): no reference taken for the call
    int _compact_at "fastplan_compact_int"(PyObject* o, long long* v) noexcept
    PyTypeObject* _type_at "Py_TYPE"(PyObject* o) noexcept
    PyTypeObject PyLong_Type

from fastplan._keys import BoundaryError
from fastplan.launch.handles import Memory as _Memory

from refimpl.planner.launch.launch import LaunchError
from refimpl.planner.fusers.elemwise import ElemwiseOptimization
from refimpl.planner.stream.plan import PlanBlock, PlanStep
from refimpl.planner.fusers.reduce import ReduceOptimization
from refimpl.planner.fusers.reduce_broadcasted import ReduceBroadcastedOptimization

__all__ = ["LaunchMemo", "launch_plan_stream"]

# Stored outcomes, and distinct handle layouts, a memo keeps before it starts afresh (a runtime
# meeting new shapes forever must not grow without bound).
MEMO_CAPACITY = 8192
LAYOUT_CAPACITY = 65536

cdef tuple _STEP_FIELDS = ("kind", "ops", "fuser", "score", "inputs", "outputs", "aliases",
                           "blocks")
cdef tuple _BLOCK_FIELDS = ("ops", "width")


@cython.final  # its calls among its own methods are direct (no subclass)
cdef class LaunchMemo:
    """Launch outcomes of fused steps, per device profile (see the module docstring), and the
    layout ids their keys are made of. ``hits``/``misses`` count lookups. ``keep_steps``
    (true by default): whether single fused steps are stored and looked up as well as whole
    executions; ``fastplan.planner.plan``'s own memo, made for one walk, keeps executions
    only."""

    cdef dict _by_device
    cdef dict _executions_by_device
    cdef dict layout_ids  # a layout key (fastplan.launch.handles._layout_key) -> layout id
    cdef _InputsMemo inputs  # the handles of the stream inputs loaded last
    cdef public Py_ssize_t hits, misses
    cdef public bint keep_steps

    def __init__(self):
        self._by_device, self._executions_by_device, self.layout_ids = {}, {}, {}
        self.inputs = _InputsMemo()
        self.hits = self.misses = 0
        self.keep_steps = True

    cdef dict table(self, object device):
        found = self._by_device.get(device)
        if found is None:
            found = self._by_device[device] = {}
        return <dict>found

    cdef KeyTable executions(self, object device):
        """Stored outcomes of whole executions (``_Execution``), by key."""
        found = self._executions_by_device.get(device)
        if found is None:
            found = self._executions_by_device[device] = KeyTable()
        return <KeyTable>found

    cdef int restart(self, Memory memory) except -1:
        """Forget every outcome and layout id; ``memory``'s live handles get new ids."""
        for outcomes in self._by_device.values():
            (<dict>outcomes).clear()
        for outcomes in self._executions_by_device.values():
            (<KeyTable>outcomes).clear()
        self.layout_ids = {}
        memory.use_layout_ids(self.layout_ids)
        return 0

    def __len__(self):
        """Stored step outcomes (whole executions not counted)."""
        return sum(len(t) for t in self._by_device.values())


@cython.freelist(64)  # one per recorded step or execution
cdef class _Outcome:
    """One fused step's stored launch outcome, relative to the step's tensor order."""

    cdef object optimization  # held: the key holds its id()
    cdef tuple widths  # None: no main launch plan
    cdef tuple aliases  # (output position, input position)
    cdef tuple changes  # _Change per tensor of the order whose live handle the step changed
    cdef Py_ssize_t new_buffers  # how many buffers the step allocated (their sizes are not
    #                              kept: see _replay)
    cdef object blocks_from  # the step's ``blocks`` last filled, and the filled ones
    cdef tuple blocks
    cdef object filled_from  # the step last filled without aliases, and its filled PlanStep
    cdef object filled  # (``_filled_again``)


@cython.freelist(64)
cdef class _Change:
    """What a step did to the tensor at position ``k`` of its order: dropped its live handle
    (``gone``), or gave it a handle with this layout on a fresh buffer (``fresh``: the
    ``at``-th the step allocated) or on the buffer the tensor at position ``at`` held before."""

    cdef Py_ssize_t k
    cdef bint gone
    cdef bint fresh
    cdef Py_ssize_t at
    cdef tuple fields  # the handle's (shape, strides, offset, dtype)
    cdef Py_ssize_t layout


# --- the walk --------------------------------------------------------------------------------


cdef class _Execution:
    """One whole execution's stored launch outcome (every step of one plan the queue ran): its
    net memory changes, and each fused step's widths and aliases."""

    cdef object plan  # the optimization the queue executed, held: the key holds its id
    cdef tuple optimizations  # the fused steps' optimizations, held: the key holds their ids
    cdef _Outcome memory  # the net changes and new buffers (no widths, no aliases)
    cdef list steps  # per step: None (unfused) or an _Outcome holding its widths and aliases


@cython.final  # its calls among its own methods are direct (no subclass)
cdef class _Step:
    """One fused step being launch-planned (refimpl.interpreter's ``_Step``, no values)."""

    cdef object context, device
    cdef list ops, launches
    cdef Memory memory
    cdef object main
    cdef str path

    cdef _WalkLaunch launch(self, object trace, object operands):
        """Launch-plan ``trace`` on the step's memory (what the walk reads of it)."""
        return plan_launch_walk(trace, self.context, self.memory, self.device, operands)

    cdef _WalkLaunch run_trace(self, object trace):
        launch = self.launch(trace, None)
        self.launches.append(launch)
        return launch

    cdef object dry_run(self, object trace):
        """The main trace's plan, the memory left as it was (refimpl: a discarded fork)."""
        self.memory.begin_trial()
        try:
            return self.launch(trace, None)
        except LaunchError:
            return None
        finally:
            self.memory.undo_trial()


cdef void _elementwise(_Step run, object opt) except *:
    run.main = run.run_trace(field(opt, &_EW_TRACE))


cdef void _matmul(_Step run, object opt) except *:
    cdef Memory memory = run.memory
    cdef _WalkLaunch launch
    cdef bint refused
    matmul = field(opt, &_MATMUL)
    op = field(matmul, &_MM_OP)
    operands = (field(field(op, &_OP_LHS), &_TID), field(field(op, &_OP_RHS), &_TID))
    memory.begin_trial()  # refimpl: on a fork, adopted if the fused launch runs
    try:
        try:
            launch = run.launch(field(opt, &_MM_TRACE), operands)
        except LaunchError:
            launch = None
        refused = launch is None or (not launch.skipped and walk_matmul_refused(
            launch, field(field(matmul, &_ARG_LHS), &_ARG_POS),
            field(field(matmul, &_ARG_RHS), &_ARG_POS)))
    except BaseException:
        memory.undo_trial()
        raise
    run.main = launch
    if refused:
        memory.undo_trial()
        run.path = "fallback"
        memory.run_unfused(run.ops[0])
        run.run_trace(field(opt, &_MM_FALLBACK))
        return
    memory.keep_trial()
    run.launches.append(launch)


cdef bint _reduce_fused(_Step run, object opt) except -1:
    run.memory.begin_trial()  # refimpl: on a fork, adopted if the fused launch runs
    try:
        launch = run.launch(field(opt, &_RD_TRACE), None)
    except LaunchError:
        run.memory.undo_trial()
        return False
    except BaseException:
        run.memory.undo_trial()
        raise
    run.memory.keep_trial()
    run.launches.append(launch)
    if run.main is None:
        run.main = launch
    return True


cdef void _reduce_ops(_Step run, object opt, list ops) except *:
    if _reduce_fused(run, opt):
        return
    run.path = "fallback"
    if run.main is None:
        run.main = run.dry_run(field(opt, &_RD_TRACE))
    run.run_trace(field(opt, &_RD_READ_FALLBACK))
    run.memory.run_unfused(ops[field(opt, &_RD_NUM_OPS_READ)])
    run.run_trace(field(opt, &_RD_WRITE_FALLBACK))


cdef void _reduce_broadcasted(_Step run, object opt) except *:
    cdef Py_ssize_t start = 0, n
    cdef type kind
    if type(opt) is _RB_OPTIMIZATION:  # main_trace(): the broadcasted optimization's trace
        run.main = run.dry_run(field(field(opt, &_BROADCASTED), &_TRACE))
    else:
        run.main = run.dry_run(opt.main_trace())
    for block in field(opt, &_RB_FALLBACKS):
        kind = type(block)
        if kind is _REDUCE_OPTIMIZATION or kind is _ELEMWISE_OPTIMIZATION:
            n = field(block, &_NUM_OPS)  # len() and name, read without the method calls
            is_reduce = kind is _REDUCE_OPTIMIZATION
        else:
            n = block.len()
            is_reduce = block.name == "Reduce"
        if is_reduce:
            main = run.main
            _reduce_ops(run, block, run.ops[start:start + n])
            run.main = main
        else:
            run.run_trace(field(block, &_EW_TRACE))
        start += n
    run.path = "fallback"


cdef void _run_fused(_Step run, object fuser, object opt) except *:
    if fuser == "ElementWise":
        _elementwise(run, opt)
    elif fuser == "Matmul":
        _matmul(run, opt)
    elif fuser == "Reduce":
        _reduce_ops(run, opt, run.ops)
    elif fuser == "ReduceBroadcasted":
        _reduce_broadcasted(run, opt)
    elif fuser == "NHWCRelayout":
        run.main = run.run_trace(field(opt, &_NHWC_TRACE))
        run.memory.run_unfused(run.ops[len(run.ops) - 1])
    else:  # a custom fuser's optimization: its ops run one by one, no launch to report
        run.path = "unfused"
        for op in run.ops:
            run.memory.run_unfused(op)


# The optimizations of refimpl's fusers whose methods ``_reduce_broadcasted`` reads as fields
# (``main_trace()`` is ``broadcasted.trace``, ``len()`` is ``num_ops``, ``name`` a constant of
# the class).
cdef object _RB_OPTIMIZATION = ReduceBroadcastedOptimization
cdef object _REDUCE_OPTIMIZATION = ReduceOptimization
cdef object _ELEMWISE_OPTIMIZATION = ElemwiseOptimization
assert ReduceOptimization.name == "Reduce" and ElemwiseOptimization.name != "Reduce"
assert ReduceOptimization.len is ElemwiseOptimization.len  # FusedOptimization's: num_ops
assert ReduceBroadcastedOptimization.main_trace.__qualname__.startswith(
    "ReduceBroadcastedOptimization.")
cdef FieldRead _BROADCASTED = field_read("broadcasted")
cdef FieldRead _TRACE = field_read("trace")
cdef FieldRead _NUM_OPS = field_read("num_ops")
# The optimizations' fields the launch paths read, one read per site's class (a FieldRead
# caches the slot of one type): ElementWise's (and a ReduceBroadcasted fallback's) trace,
# Matmul's traces and FusedMatmul (its op's operand ids, its operands' positions), Reduce's
# traces and read op count, ReduceBroadcasted's fallbacks, NHWCRelayout's trace.
cdef FieldRead _EW_TRACE = field_read("trace")
cdef FieldRead _MM_TRACE = field_read("trace")
cdef FieldRead _MM_FALLBACK = field_read("trace_fallback")
cdef FieldRead _MATMUL = field_read("matmul")
cdef FieldRead _MM_OP = field_read("op")
cdef FieldRead _OP_LHS = field_read("lhs")  # the BinaryOpIr's
cdef FieldRead _OP_RHS = field_read("rhs")
cdef FieldRead _TID = field_read("id")
cdef FieldRead _ARG_LHS = field_read("lhs")  # the FusedMatmul's
cdef FieldRead _ARG_RHS = field_read("rhs")
cdef FieldRead _ARG_POS = field_read("pos")
cdef FieldRead _RD_TRACE = field_read("trace")
cdef FieldRead _RD_READ_FALLBACK = field_read("trace_read_fallback")
cdef FieldRead _RD_WRITE_FALLBACK = field_read("trace_write_fallback")
cdef FieldRead _RD_NUM_OPS_READ = field_read("num_ops_read")
cdef FieldRead _RB_FALLBACKS = field_read("fallbacks")
cdef FieldRead _NHWC_TRACE = field_read("trace")


cdef int _check_extents(object context, Memory memory) except -1:
    """Refuse a step past int64 extents (``fastplan.launch.launch._extents_fit``): the caller hands
    the stream to refimpl's walk (fastplan.planner)."""
    if not extents_fit(context, memory):
        raise OverflowError("a tensor of the step reaches past int64 extents (2**62): "
                            "refimpl's to plan")
    return 0


# --- the memo ----------------------------------------------------------------------------------


cdef object _key(_StepRecord item, list order, Memory memory, KeyBuf* held):
    """The memo key of a fused step; fills ``held`` with each tensor's buffer and key
    (``_push_state``). Per
    tensor one int: its handle's layout id, the position of the step's first tensor to hold
    its buffer, and how many live handles use that buffer (or -1: no live handle).

    The key is a byte string of int64 slots (hashed once, compared with ``memcmp``): the
    optimization's ``id``, the dims, then one slot per tensor (three after a -2 where the
    three ints do not pack into one). ``None`` where a dim is no exact int64 int: such a step
    is not memoised (the C layout cores refuse it, and the stream goes to refimpl's walk)."""
    return _with_state(<int64_t><Py_ssize_t><PyObject*>item.optimization,  # its id()
                       _state(item.context, order, memory, held))


cdef object _state(_StepContext context, list order, Memory memory, KeyBuf* held):
    """``_push_state`` as a byte string (``None``: not memoisable)."""
    cdef KeyBuf b
    buf_init(&b)
    try:
        if not _push_state(&b, context, order, memory, held):
            return None
        return buf_bytes(&b)
    finally:
        buf_free(&b)


cdef object _with_state(int64_t head, object state):
    """A key: ``head`` then ``state`` (``None`` stays ``None``)."""
    cdef KeyBuf b
    if state is None:
        return None
    buf_init(&b)
    try:
        buf_push(&b, head)
        return buf_bytes(&b) + <bytes>state
    finally:
        buf_free(&b)


# layout ids under this share one key slot with the first holder's position and the users
cdef Py_ssize_t _LAYOUT_PACKED = (<Py_ssize_t>1) << 40
# positions searched one by one for a shared buffer's first holder; past them, a dict
cdef Py_ssize_t _SCAN_HOLDERS = 64


cdef inline int _reserve(KeyBuf* b, Py_ssize_t more) except -1:
    """Room for ``more`` slots past ``b.len`` (``_put`` then writes them unchecked)."""
    while b.cap - b.len < more:
        buf_grow(b)
    return 0


cdef inline void _put(KeyBuf* b, int64_t value) noexcept:
    """``buf_push`` into room ``_reserve`` made."""
    b.data[b.len] = value
    b.len += 1


cdef bint _push_state(KeyBuf* b, _StepContext context, list order, Memory memory,
                      KeyBuf* held) except -1:
    """The dims and the per-tensor slots of a key (``_key``), and in ``held`` two words per
    tensor: its buffer number (-1: no live handle) and its key in the memory's live table
    (``handles.tensor_key``): what a replay reads of the memory before it. False where a dim
    is no exact int64 int.

    The dims, the ids of ``order`` and the live entries are read as borrowed pointers (the
    tuple, the list and the table hold them, and nothing here changes those), without a
    reference counted per tensor; an exact ``int`` of one digit is read where CPython keeps
    it, any other id or dim goes through ``exact_long_long`` (``tensor_key``)."""
    cdef dict holders = None  # buffer -> its first holder's position, past _SCAN_HOLDERS
    cdef Py_ssize_t users, first, layout, buffer, i, q, n, k = 0
    cdef long long dim, tensor
    cdef tuple dims = context.dim_tuple()
    cdef PyObject* found
    cdef PyObject* item
    cdef Py_ssize_t* counts = memory._users
    n = len(dims)
    # room for the dims' count and the dims, then one slot per tensor below, written without
    # a check each; a tensor whose three ints do not pack into one slot reserves its three
    # more (rare: past 1024 users or positions). Reserving four per tensor made most keys
    # outgrow the buffer's inline slots, a heap block allocated and freed per key.
    _reserve(b, 1 + n)
    _put(b, n)
    for i in range(n):
        item = _tuple_item(<PyObject*>dims, i)
        if not (_type_at(item) == &PyLong_Type and _compact_at(item, &dim)) and \
                not exact_long_long(<object>item, &dim):
            return False
        _put(b, dim)
    n = len(order)
    _reserve(b, 1 + n)
    _reserve(held, 2 * n)
    _put(b, n)
    for i in range(n):
        item = _list_item(<PyObject*>order, i)
        if _type_at(item) == &PyLong_Type and _compact_at(item, &tensor) and tensor >= 0:
            pass
        elif not exact_long_long(<object>item, &tensor) or tensor < 0:
            tensor = tensor_key(<object>item)  # an id past int64 (or none)
        found = live_find(memory, tensor)  # memory.find, inline
        k += 1
        if found == NULL:
            _put(held, -1)
            _put(held, tensor)
            _put(b, -1)
            continue
        buffer = (<_Live>found).buffer
        _put(held, buffer)
        _put(held, tensor)
        users = counts[buffer]
        first = k - 1
        if users == 1:  # no other live handle holds the buffer: its first holder is this one
            pass
        elif k <= _SCAN_HOLDERS:  # the position of the first of the tensors to hold it
            for q in range(k - 1):
                if held.data[2 * q] == buffer:
                    first = q
                    break
        else:
            if holders is None:
                holders = {}
                for q in range(k - 2, -1, -1):  # the first holder of each buffer so far
                    if held.data[2 * q] >= 0:
                        holders[held.data[2 * q]] = q
            at = holders.get(buffer)
            if at is None:
                holders[buffer] = first
            else:
                first = <Py_ssize_t>at
        layout = (<_Live>found).layout
        if users < 1024 and first < 1024 and 0 <= layout < _LAYOUT_PACKED:
            _put(b, (layout * 1024 + first) * 1024 + users)
        else:
            _reserve(b, 3 + n - k + 1)  # the three, and one for each tensor left
            _put(b, -2)
            _put(b, layout)
            _put(b, first)
            _put(b, users)
    return True


cdef list _handles_of(const int64_t* held, Py_ssize_t n, Memory memory):
    """The live handle of each of the ``n`` tensors of a key's order (``None``: none): what
    ``_record`` compares the memory with after a step, read before it on a miss. The tensors
    are found by the live-table keys ``_push_state`` read into ``held`` (two words per
    tensor: its buffer, its key), no id converted again."""
    cdef list found = PyList_New(n)
    cdef PyObject* entry
    cdef Py_ssize_t k
    for k in range(n):
        entry = live_find(memory, held[2 * k + 1])
        handle = None if entry == NULL else live_handle(<_Live>entry)
        Py_INCREF(handle)  # the list's reference (PyList_SET_ITEM steals one)
        PyList_SET_ITEM(found, k, handle)
    return found


cdef _Outcome _record(object optimization, list order, const int64_t* held, object positions,
                      list before, Memory memory, object first_new, object widths,
                      list aliases):
    """What the step did, relative to ``order`` (positions; ``positions`` maps a global id to
    its position; ``held``: its tensors' live-table keys as ``_push_state`` read them) and to
    ``first_new`` (buffers); ``None`` where that cannot be said (a buffer or an alias outside
    the step's tensors)."""
    cdef Py_ssize_t k, end
    cdef _Change change
    cdef dict owner = None  # buffer -> position of the first tensor holding it before
    cdef list changes = []
    cdef _Outcome outcome = _Outcome.__new__(_Outcome)
    cdef PyObject* at_gid
    cdef _Live entry
    for k in range(len(order)):
        at_gid = live_find(memory, held[2 * k + 1])
        old = before[k]
        if at_gid == NULL:
            if old is not None:
                change = _Change.__new__(_Change)
                change.k, change.gone = k, True
                changes.append(change)
            continue
        entry = <_Live>at_gid
        h = live_handle(entry)
        if h is old:
            continue
        buffer = handle_buffer(h)
        if buffer >= first_new:
            fresh, at = True, buffer - first_new
        else:
            if owner is None:
                owner = _first_holders(before)
            found = owner.get(buffer)
            if found is None:  # a buffer the step's tensors did not hold before: nothing to
                return None  # replay it from
            fresh, at = False, found
        change = _Change.__new__(_Change)
        change.k, change.gone, change.fresh, change.at = k, False, fresh, at
        change.fields = handle_layout(h)
        change.layout = entry.layout
        changes.append(change)
    if aliases:
        outcome.aliases = _relative_aliases(positions, aliases)
        if outcome.aliases is None:
            return None
    else:
        outcome.aliases = ()
    outcome.optimization = optimization
    outcome.widths = widths
    outcome.changes = tuple(changes)
    end = memory.next_buffer
    outcome.new_buffers = end - <Py_ssize_t>first_new
    return outcome


cdef dict _first_holders(list before):
    """Buffer -> position of the first tensor whose handle (``before``) holds it."""
    cdef dict owner = {}
    cdef Py_ssize_t k
    for k in range(len(before)):
        h = before[k]
        if h is not None:
            buffer = handle_buffer(h)
            if buffer not in owner:
                owner[buffer] = k
    return owner


cdef tuple _relative_aliases(object position, object aliases):
    """``(output, input)`` global id pairs as positions (``position``: id -> position), or
    ``None`` where one is not there."""
    cdef list found = []
    for o, i in aliases:
        if o not in position or i not in position:
            return None
        found.append((position[o], position[i]))
    return tuple(found)


cdef list _replay(_Outcome outcome, list order, const int64_t* held, Memory memory):
    """Apply a stored outcome to ``memory`` (``held``: each tensor's buffer and key before, as
    ``_push_state`` read them); the step's global aliases (``None``: none).

    The buffers the step allocated are counted (``next_buffer``) but get no ``sizes`` entry:
    the walk's memory is its own (``launch_records`` makes it and drops it) and nothing in
    the walk reads ``sizes`` (an outcome keeps how many buffers its step allocated, not
    their sizes)."""
    cdef Py_ssize_t first_new, buffer, c
    cdef PyObject* change  # a _Change of the tuple (borrowed)
    cdef tuple changes = outcome.changes
    cdef list aliases = None  # None: the step aliases nothing (no list made)
    first_new = memory.next_buffer
    memory.next_buffer = first_new + outcome.new_buffers
    for c in range(len(changes)):
        change = _tuple_item(<PyObject*>changes, c)
        if (<_Change>change).gone:
            memory.remove_key(held[2 * (<_Change>change).k + 1])
            continue
        buffer = first_new + (<_Change>change).at if (<_Change>change).fresh \
            else held[2 * (<_Change>change).at]
        memory.register_at(held[2 * (<_Change>change).k + 1], (<_Change>change).fields, buffer,
                           (<_Change>change).layout)
    if outcome.aliases:
        aliases = _global_pairs(outcome.aliases, order)
    return aliases


cdef list _global_pairs(tuple pairs, list order):
    """Position pairs (an outcome's aliases) as global id pairs (``order``: id per position)."""
    cdef list found = []
    cdef tuple pair
    for item in pairs:
        pair = <tuple>item
        found.append((order[<Py_ssize_t>pair[0]], order[<Py_ssize_t>pair[1]]))
    return found


# --- entry point ---------------------------------------------------------------------------------


cdef tuple _widened(tuple blocks, object widths):
    """``blocks`` (``PlanBlock``s) with the launch's widths filled in (a ``PlanBlock`` read
    and made at its slots, as ``_filled`` makes a ``PlanStep``)."""
    if widths is None:
        widths = ()
    cdef Py_ssize_t i, n = len(widths), m = len(blocks)
    cdef tuple found = PyTuple_New(m)
    for i in range(m):
        block = blocks[i]
        width = widths[i] if i < n else None
        if type(block) is PlanBlock:
            made = new_instance(<PyTypeObject*>PlanBlock)
            set_slot(made, _BLOCK_AT[0], slot(block, _BLOCK_AT[0]))
            set_slot(made, _BLOCK_AT[1], width)
        else:
            made = make_frozen(PlanBlock, _BLOCK_FIELDS, (block.ops, width))
        Py_INCREF(made)
        PyTuple_SET_ITEM(found, i, made)
    return found


cdef Py_ssize_t _BLOCK_AT[2]  # PlanBlock's slot offsets, in _BLOCK_FIELDS order
for _k in range(2):
    _BLOCK_AT[_k] = field_offset(PlanBlock, _BLOCK_FIELDS[_k])


cdef Py_ssize_t _STEP_AT[8]  # PlanStep's slot offsets, in _STEP_FIELDS order
for _k in range(8):
    _STEP_AT[_k] = field_offset(PlanStep, _STEP_FIELDS[_k])


cdef inline object _step_ops(object step):
    """``step.ops`` (read at its slot for a ``PlanStep``)."""
    return slot(step, _STEP_AT[1]) if type(step) is PlanStep else step.ops


cdef inline object _step_fuser(object step):
    """``step.fuser`` (read at its slot for a ``PlanStep``)."""
    return slot(step, _STEP_AT[2]) if type(step) is PlanStep else step.fuser


cdef inline object _step_blocks(object step):
    """``step.blocks`` (read at its slot for a ``PlanStep``)."""
    return slot(step, _STEP_AT[7]) if type(step) is PlanStep else step.blocks


cdef object _filled(object step, tuple blocks, list aliases):
    """``step`` with its blocks and its aliases (global id pairs, sorted; ``None``: none)."""
    cdef Py_ssize_t k
    if not aliases:
        found = ()
    else:
        if len(aliases) > 1:
            aliases.sort()
        found = PyList_AsTuple(aliases)
    if type(step) is not PlanStep:
        return make_frozen(PlanStep, _STEP_FIELDS,
                           (step.kind, step.ops, step.fuser, step.score, step.inputs,
                            step.outputs, found, blocks))
    filled = new_instance(<PyTypeObject*>PlanStep)  # make_frozen's slots, set directly
    for k in range(6):
        set_slot(filled, _STEP_AT[k], slot(step, _STEP_AT[k]))
    set_slot(filled, _STEP_AT[6], found)
    set_slot(filled, _STEP_AT[7], blocks)
    return filled


def launch_plan_stream(stream, executed, device, LaunchMemo memo=None):
    """The executed steps' ``PlanStep``s with ``aliases`` and block ``width``s filled in: equal
    to ``refimpl.planner.launch.execute.launch_plan_stream(stream, executed, device)``. ``memo`` (a
    ``LaunchMemo``, kept by the caller across calls) serves fused steps seen before. A stream
    outside fastplan's boundary (a tensor id that is no exact int in [0, 2**64):
    ``BoundaryError``)
    is walked by refimpl."""
    try:
        return launch_records(stream, [_record_of(item) for item in executed], device, memo)
    except BoundaryError:
        from refimpl.interpreter import launch_plan_stream as reference

        return reference(stream, executed, device)


cdef _StepRecord _record_of(object item):
    """An ``ExecutedStep`` as the record the walk reads."""
    cdef _StepRecord record = _StepRecord.__new__(_StepRecord)
    record.step, record.optimization = item.step, item.optimization
    record.fused = item.step.kind == "fused"
    record.context = context_given(item.segment, item.tensors_global2relative,
                                   item.shapes_relative2global, item.scalars)
    return record


def launch_records(stream, list records, device, LaunchMemo memo=None):
    """``launch_plan_stream`` on the queue's own records of the executed steps
    (``fastplan.stream.queue._StepRecord``, no ``ExecutedStep`` built): what ``fastplan.planner``
    calls."""
    return _launch_records(stream, records, device, memo, _Memory())


def _walked_memory(stream, executed, device, LaunchMemo memo=None):
    """``launch_plan_stream``'s steps and the memory its walk leaves (for the tests: its live
    handles, replayed ones included, against refimpl's interpreter memory)."""
    cdef Memory memory = _Memory()
    steps = _launch_records(stream, [_record_of(item) for item in executed], device, memo,
                            memory)
    return steps, memory


cdef tuple _launch_records(object stream, list records, object device, LaunchMemo memo,
                           Memory memory):
    """``launch_records`` on a fresh ``memory``."""
    cdef list results = []
    cdef dict table = None
    paused = _gc.isenabled()  # no reference cycles made here either (see fastplan.stream.processor)
    _gc.disable()
    try:
        if memo is not None:
            if memo.keep_steps:  # else fused steps are walked without the step memo
                table = memo.table(device)
            memory.use_layout_ids(memo.layout_ids)
        memory.load_inputs_with(stream, None if memo is None else memo.inputs)
        _walk(stream.items, records, device, memory, memo, table, results)
    finally:
        if paused:
            _gc.enable()
    return tuple(results)


cdef int _walk(object items, list records, object device, Memory memory, LaunchMemo memo,
               dict table, list results) except -1:
    cdef Py_ssize_t i = 0, j, n = len(records)
    cdef _StepRecord item
    cdef _StepContext execution
    cdef KeyTable executions = None if memo is None else memo.executions(device)
    while i < n:
        item = records[i]
        execution = item.execution
        if executions is None or execution is None:
            _walk_step(item, items, device, memory, memo, table, results)
            i += 1
            continue
        j = i + 1
        while j < n and (<_StepRecord>_list_item(<PyObject*>records, j)).execution is execution:
            j += 1
        _walk_execution(records, i, j, items, device, memory, memo, table, executions, results)
        i = j
    return 0


cdef object _walk_step(_StepRecord item, object items, object device, Memory memory,
                       LaunchMemo memo, dict table, list results, object state=None,
                       KeyBuf* state_held=NULL, list before=None):
    """Launch-plan one step (a fused one from the step memo when it can); ``None`` for an
    unfused step, else the fused step's ``(widths, aliases, blocks, widened blocks)``
    (aliases in global ids). ``state``/``state_held``/``before``: ``_state`` of the memory
    now over the step's context order, the buffers and the handles it read, when the caller
    has them (else the step's key fills a buffer of its own)."""
    cdef _Step run
    cdef _Outcome outcome
    cdef _StepContext context
    cdef list order, aliases
    cdef KeyBuf own
    cdef KeyBuf* held = &own if state_held == NULL else state_held
    step = item.step
    if not item.fused:
        for i in _step_ops(step):
            memory.run_unfused(items[i])
        list_append_long(results, step)
        return None
    buf_init(&own)
    try:
        context = item.context
        order = context.tensor_order()
        if table is None:
            key = None
        elif state is not None:
            key = _with_state(<int64_t><Py_ssize_t><PyObject*>item.optimization, state)
        else:
            key = _key(item, order, memory, held)
        if key is not None:
            found = table.get(key)
            if found is not None and (<_Outcome>found).optimization is item.optimization:
                memo.hits += 1
                outcome = <_Outcome>found
                aliases = _replay(outcome, order, held.data, memory)
                blocks = _step_blocks(step)
                if blocks is not outcome.blocks_from:  # the plan cache's steps share theirs
                    outcome.blocks_from = blocks
                    outcome.blocks = _widened(blocks, outcome.widths)
                list_append_long(results, _filled(step, outcome.blocks, aliases))
                return (outcome.widths, aliases, blocks, outcome.blocks)
            memo.misses += 1
            if before is None:
                before = _handles_of(held.data, len(order), memory)
        first_new = memory.next_buffer
        run = _Step.__new__(_Step)
        if context.fused is None:  # one per execution: its fused steps share the segment
            context.fused = context_of_c(context.segment(), context.g2r_map(),
                                         context.shapes_map(), context.scalar_values())
        run.context = context.fused
        _check_extents(run.context, memory)
        run.device, run.memory, run.main, run.path = device, memory, None, "fused"
        run.ops = [items[i] for i in _step_ops(step)]
        run.launches = []
        _run_fused(run, _step_fuser(step), item.optimization)
        aliases = [pair for launch in run.launches for pair in (<_WalkLaunch>launch).aliases]
        widths = None if run.main is None else (<_WalkLaunch>run.main).widths
        step_blocks = _step_blocks(step)
        blocks = _widened(step_blocks, widths)
        list_append_long(results, _filled(step, blocks, aliases))
        if key is not None:
            if len(table) >= MEMO_CAPACITY or len(memo.layout_ids) >= LAYOUT_CAPACITY:
                memo.restart(memory)  # the key just made is stale too: not stored
                return (widths, aliases, step_blocks, blocks)
            found = _record(item.optimization, order, held.data, context.position_map(),
                            before, memory, first_new, widths, aliases)
            if found is not None:
                (<_Outcome>found).blocks_from, (<_Outcome>found).blocks = step_blocks, blocks
                table[key] = found
        return (widths, aliases, step_blocks, blocks)
    finally:
        buf_free(&own)


cdef bint _execution_key(KeyBuf* b, list records, Py_ssize_t i, Py_ssize_t j,
                         _StepContext execution, list order, Memory memory,
                         KeyBuf* held) except -1:
    """Fill ``b`` with the memo key of the steps ``records[i:j]`` of one execution: the id of
    the plan the queue executed (it names one relative segment), per step its optimization's
    id (fused) or its op count (unfused), then the state (``_push_state`` over every tensor
    of the execution's segment, filling ``held``): ``2 + j - i`` slots, then the state.
    False where there is no key (as for ``_key``)."""
    cdef PyObject* item  # borrowed
    cdef Py_ssize_t k
    buf_push(b, <int64_t><Py_ssize_t><PyObject*>execution.plan)  # its id()
    buf_push(b, j - i)
    for k in range(i, j):
        item = _list_item(<PyObject*>records, k)
        if (<_StepRecord>item).fused:
            buf_push(b, <int64_t><Py_ssize_t><PyObject*>(<_StepRecord>item).optimization)
        else:  # an unfused step: its op count
            buf_push(b, -1 - <int64_t>len(_step_ops((<_StepRecord>item).step)))
    return _push_state(b, execution, order, memory, held)


cdef bint _same_optimizations(_Execution found, list records, Py_ssize_t i,
                              Py_ssize_t j) except -1:
    cdef Py_ssize_t k, m = 0
    cdef PyObject* item  # borrowed
    cdef tuple optimizations = found.optimizations
    if found.plan is not (<_StepRecord>_list_item(<PyObject*>records, i)).execution.plan:
        return False
    for k in range(i, j):
        item = _list_item(<PyObject*>records, k)
        if (<_StepRecord>item).fused:
            if m >= len(optimizations) or _tuple_item(<PyObject*>optimizations, m) != \
                    <PyObject*>(<_StepRecord>item).optimization:
                return False
            m += 1
    return m == len(optimizations)


cdef int _walk_execution(list records, Py_ssize_t i, Py_ssize_t j, object items,
                         object device, Memory memory, LaunchMemo memo, dict table,
                         KeyTable executions, list results) except -1:
    """The steps ``records[i:j]`` of one execution: replayed whole from the memo when it
    holds them (the plan cache ran the same plan on the same layouts before), else walked
    step by step and stored."""
    cdef _StepContext execution = (<_StepRecord>records[i]).execution
    cdef list order = execution.tensor_order()
    cdef KeyBuf b, held
    cdef uint64_t h = 0
    cdef PyObject* stored
    buf_init(&b)
    buf_init(&held)
    try:
        keyed = _execution_key(&b, records, i, j, execution, order, memory, &held)
        if not keyed:
            return _walk_and_store(records, i, j, items, device, memory, memo, table,
                                   executions, results, execution, order, None, None, NULL,
                                   NULL, 0)
        h = key_hash(<char*>b.data, b.len * sizeof(int64_t))
        stored = executions.find(<char*>b.data, b.len * sizeof(int64_t), h)
        if stored != NULL and _same_optimizations(<_Execution>stored, records, i, j):
            _replay_execution(<_Execution>stored, records, i, j, order, held.data, memory,
                              memo, results)
            return 0
        # the state alone (the first step's key shares it): the key past its head
        state = PyBytes_FromStringAndSize(<char*>(b.data + 2 + j - i),
                                          (b.len - 2 - (j - i)) * sizeof(int64_t))
        return _walk_and_store(records, i, j, items, device, memory, memo, table, executions,
                               results, execution, order,
                               _handles_of(held.data, len(order), memory), state,
                               &held, &b, h)
    finally:
        buf_free(&b)
        buf_free(&held)


cdef int _replay_execution(_Execution found, list records, Py_ssize_t i, Py_ssize_t j,
                           list order, const int64_t* held, Memory memory, LaunchMemo memo,
                           list results) except -1:
    """Replay a stored whole execution: its memory changes, then each step filled."""
    cdef PyObject* item  # the records' and the stored steps' items, borrowed
    cdef PyObject* stored
    cdef Py_ssize_t k
    cdef list steps = found.steps
    _replay(found.memory, order, held, memory)
    for k in range(i, j):
        item = _list_item(<PyObject*>records, k)
        stored = _list_item(<PyObject*>steps, k - i)
        if stored == <PyObject*>None:
            list_append_long(results, (<_StepRecord>item).step)
            continue
        memo.hits += 1
        list_append_long(results, _filled_part(<_Outcome>stored, (<_StepRecord>item).step,
                                               order))
    return 0


cdef object _filled_part(_Outcome part, object step, list order):
    """``step`` filled from a stored step outcome ``part`` (its aliases as global ids of
    ``order``). A step without aliases fills to the same ``PlanStep`` each time its blocks
    and widths are the same: the one made last time is given again when ``step`` is the
    object it was made from (the plan cache's stored steps are shared by its hits, and a
    ``PlanStep`` is frozen)."""
    blocks = _step_blocks(step)
    if blocks is not part.blocks_from:
        part.blocks_from = blocks
        part.blocks = _widened(blocks, part.widths)
        part.filled_from = part.filled = None
    if part.aliases:
        return _filled(step, part.blocks, _global_pairs(part.aliases, order))
    if part.filled_from is not step:
        part.filled = _filled(step, part.blocks, None)
        part.filled_from = step
    return part.filled


cdef int _walk_and_store(list records, Py_ssize_t i, Py_ssize_t j, object items,
                         object device, Memory memory, LaunchMemo memo, dict table,
                         KeyTable executions, list results, _StepContext execution,
                         list order, list before, object state, KeyBuf* held, KeyBuf* key,
                         uint64_t h) except -1:
    """Walk the steps ``records[i:j]`` of one execution one by one; store the whole
    execution's outcome under ``key`` (when given and the execution can be replayed).
    ``before``/``held``/``state``: the handles, buffers and state the key read."""
    cdef _StepRecord item
    cdef _Execution found
    cdef _Outcome outcome, part
    cdef Py_ssize_t k
    cdef list outs = [], fused = []
    first_new = memory.next_buffer
    layout_ids = memo.layout_ids
    replayable = key != NULL
    for k in range(i, j):
        item = records[k]
        if k == i and state is not None and item.context is execution:
            # the memory is as the state was taken, over the same order: the step's key
            # shares it
            outs.append(_walk_step(item, items, device, memory, memo, table, results, state,
                                   held, before))
        else:
            outs.append(_walk_step(item, items, device, memory, memo, table, results))
        if replayable:
            for index in _step_ops(item.step):
                if not replayable_op(items[index]):
                    replayable = False
                    break
            if item.fused:
                fused.append(item.optimization)
    if not replayable or memo.layout_ids is not layout_ids:  # a restart: the key is stale
        return 0
    outcome = _record(None, order, held.data, None, before, memory, first_new, None, [])
    if outcome is None:
        return 0
    found = _Execution.__new__(_Execution)
    found.plan, found.optimizations, found.memory, found.steps = (
        execution.plan, tuple(fused), outcome, [])
    for out in outs:  # None, or a fused step's (widths, aliases, blocks, widened blocks)
        if out is None:
            found.steps.append(None)
            continue
        part = _Outcome.__new__(_Outcome)
        part.widths, part.blocks_from, part.blocks = (
            (<tuple>out)[0], (<tuple>out)[2], (<tuple>out)[3])
        if not (<tuple>out)[1]:
            part.aliases = ()
        else:
            part.aliases = _relative_aliases(execution.position_map(), (<tuple>out)[1])
            if part.aliases is None:
                return 0
        found.steps.append(part)
    if len(executions) >= MEMO_CAPACITY:
        executions.clear()
    executions.put(<char*>key.data, key.len * sizeof(int64_t), h, None, found)
    return 0
