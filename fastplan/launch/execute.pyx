# cython: language_level=3
"""The one walk over a plan's executed steps, launch planning only: every fused step's
``aliases`` and block widths.

burn counterpart: ``OperationQueue::execute`` (burn-fusion) walking the execution strategy,
with each optimization's ``execute`` (``burn-cubecl-fusion/src/optim/{elemwise,matmul,reduce,
reduce_broadcasted,nhwc_relayout}/optimization.rs``), which runs ``FuseTraceLauncher::launch``
(launch planning) before its kernel.
Mirrors ``refimpl/planner/launch/execute.py`` with its ``LayoutBackend`` (``launch_plan_stream``:
no values), in the same order: the step being run (``_Step``: ``StepRun``), one
``execute_<fuser>`` function per fuser with burn's decisions, one dispatch on the step's fuser
(``FUSERS``), the walk, and ``launch_plan_stream``. Unfused ops lay out their outputs
(``fastplan.launch.handles.Memory.run_unfused``: the layout backend's ``run_op``); fused steps
launch-plan their traces through ``fastplan.launch.launch.plan_launch_walk`` (what the walk reads
of a launch, without the kernel's layout marks and frozen plan).

Differs from refimpl:

* **The launch memo** (``fastplan.launch.launch_memo``): a fused step, or a whole execution of
  one plan the queue ran, met again on the same layouts is replayed from a stored outcome
  instead of walked (the memo module says what its keys hold). A replayed step without aliases
  gives back the ``PlanStep`` it filled from the same plan-cache step.
* refimpl's backend forks memory for a trial launch; here the memory records a trial
  (``Memory.begin_trial``) and undoes or keeps it.
* The fusers' optimizations are read at their slots (``FieldRead``), and ``PlanStep`` and
  ``PlanBlock`` made at theirs.
* No ``UncoveredOutputs`` case: it arises only where a backend runs values (the layout
  backend's records keep burn's).

A step whose tensors reach past int64 extents is refused with ``OverflowError`` before the C
cores see it; ``fastplan.planner`` then hands the executed steps to refimpl's walk. The cyclic
collector is paused during the walk (docs/fastplan.md §7).
"""

cimport cython

import gc as _gc

from cpython.bytes cimport PyBytes_FromStringAndSize
from cpython.list cimport PyList_AsTuple
from cpython.object cimport PyTypeObject
from cpython.ref cimport Py_INCREF, PyObject
from cpython.tuple cimport PyTuple_New, PyTuple_SET_ITEM
from libc.stdint cimport int64_t, uint64_t

from fastplan._keys cimport (
    FieldRead, KeyBuf, KeyTable, _list_item, _tuple_item, buf_free, buf_init, buf_push, field,
    field_offset, field_read, key_hash, list_append_long, new_instance, set_slot, slot,
)
from fastplan.launch.handles cimport Memory, replayable_op
from fastplan.launch.launch cimport (
    _WalkLaunch, context_of_c, extents_fit, plan_launch_walk, walk_matmul_refused,
)
from fastplan.launch.launch_memo cimport (
    LaunchMemo, _Execution, _Outcome, _global_pairs, _handles_of, _key, _push_state, _record,
    _relative_aliases, _replay, _with_state,
)
from fastplan.stream.queue cimport _StepContext, _StepRecord, context_given
from fastplan.stream.relative cimport make_frozen

from fastplan._keys import BoundaryError
from fastplan.launch.handles import Memory as _Memory

from refimpl.planner.launch.launch import LaunchError
from refimpl.planner.fusers.elemwise import ElemwiseOptimization
from refimpl.planner.stream.plan import PlanBlock, PlanStep
from refimpl.planner.fusers.reduce import ReduceOptimization
from refimpl.planner.fusers.reduce_broadcasted import ReduceBroadcastedOptimization

__all__ = ["FUSERS", "launch_plan_stream", "launch_records"]

cdef tuple _STEP_FIELDS = ("kind", "ops", "fuser", "score", "inputs", "outputs", "aliases",
                           "blocks")
cdef tuple _BLOCK_FIELDS = ("ops", "width")


@cython.final  # its calls among its own methods are direct (no subclass)
cdef class _Step:
    """One fused step being launch-planned (refimpl's ``StepRun`` on the layout backend): its
    context, its global ops, what it launched."""

    cdef object context, device
    cdef list ops, launches
    cdef Memory memory
    cdef object main
    cdef str path

    cdef _WalkLaunch launch(self, object trace, object operands):
        """Launch-plan ``trace`` on the step's memory (what the walk reads of it)."""
        return plan_launch_walk(trace, self.context, self.memory, self.device, operands)

    cdef _WalkLaunch run_trace(self, object trace):
        """Launch-plan an element-wise trace (the layout backend runs no block)."""
        launch = self.launch(trace, None)
        self.launches.append(launch)
        return launch

    cdef int unfused(self, object op) except -1:
        """One op as its own kernel: the layout backend lays out its outputs."""
        self.memory.run_unfused(op)
        return 0

    cdef object dry_run(self, object trace):
        """The main trace's plan, the memory left as it was (refimpl: a discarded fork)."""
        self.memory.begin_trial()
        try:
            return self.launch(trace, None)
        except LaunchError:
            return None
        finally:
            self.memory.undo_trial()


# --- the fusers' paths -----------------------------------------------------------------------
# (refimpl's ``matmul_refused`` is fastplan.launch.launch's ``walk_matmul_refused``; its layout
# backend never refuses a launch itself: no ``matmul_refusal`` here)


cdef int execute_elementwise(_Step run, object opt) except -1:
    run.main = run.run_trace(field(opt, &_EW_TRACE))
    return 0


cdef int matmul_fallback(_Step run, object opt) except -1:
    """``fused_matmul_fallback``: the matmul alone, then the tail as one kernel."""
    run.path = "fallback"
    run.unfused(run.ops[0])
    run.run_trace(field(opt, &_MM_FALLBACK))
    return 0


cdef int execute_matmul(_Step run, object opt) except -1:
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
        return matmul_fallback(run, opt)
    memory.keep_trial()
    run.launches.append(launch)
    return 0


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


cdef int _reduce_ops(_Step run, object opt, list ops) except -1:
    if _reduce_fused(run, opt):
        return 0
    run.path = "fallback"
    if run.main is None:  # the plan reports the fused launch burn tried
        run.main = run.dry_run(field(opt, &_RD_TRACE))
    run.run_trace(field(opt, &_RD_READ_FALLBACK))
    run.unfused(ops[field(opt, &_RD_NUM_OPS_READ)])
    run.run_trace(field(opt, &_RD_WRITE_FALLBACK))
    return 0


cdef int execute_reduce(_Step run, object opt) except -1:
    return _reduce_ops(run, opt, run.ops)


cdef int execute_reduce_broadcasted(_Step run, object opt) except -1:
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
    return 0


cdef int execute_nhwc_relayout(_Step run, object opt) except -1:
    run.main = run.run_trace(field(opt, &_NHWC_TRACE))
    run.unfused(run.ops[len(run.ops) - 1])
    return 0


cdef int execute_opaque(_Step run, object opt) except -1:
    """A custom fuser's optimization: its kernel is unknown, so its ops run one by one
    (same values, no launch to report)."""
    run.path = "unfused"
    for op in run.ops:
        run.unfused(op)
    return 0


ctypedef int (*_Execute)(_Step run, object opt) except -1

# refimpl's ``FUSERS``: the fuser's name -> its entry of ``_EXECUTE`` (the one dispatch);
# another fuser's step runs ``execute_opaque``.
FUSERS = {"ElementWise": 0, "Matmul": 1, "Reduce": 2, "ReduceBroadcasted": 3,
          "NHWCRelayout": 4}
cdef dict _FUSER_AT = FUSERS
cdef _Execute _EXECUTE[5]
_EXECUTE[0] = execute_elementwise
_EXECUTE[1] = execute_matmul
_EXECUTE[2] = execute_reduce
_EXECUTE[3] = execute_reduce_broadcasted
_EXECUTE[4] = execute_nhwc_relayout


cdef inline int _execute(_Step run, object fuser, object opt) except -1:
    """``FUSERS.get(fuser, execute_opaque)(run, opt)``."""
    at = _FUSER_AT.get(fuser)
    if at is None:
        return execute_opaque(run, opt)
    return _EXECUTE[<Py_ssize_t>at](run, opt)


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



# --- the walk ----------------------------------------------------------------------------------


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
        _execute(run, _step_fuser(step), item.optimization)
        aliases = [pair for launch in run.launches for pair in (<_WalkLaunch>launch).aliases]
        widths = None if run.main is None else (<_WalkLaunch>run.main).widths
        step_blocks = _step_blocks(step)
        blocks = _widened(step_blocks, widths)
        list_append_long(results, _filled(step, blocks, aliases))
        if key is not None:
            if memo.full(table):
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
    return memo.store(executions, key, h, found)


# --- entry point -------------------------------------------------------------------------------


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

