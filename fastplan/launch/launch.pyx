# cython: language_level=3
"""Launch planning for one fused step: what a kernel generator needs, in global terms.

burn counterpart: ``burn-cubecl-fusion``'s ``engine/launch/{base,plan,input,output,
executor}.rs`` and ``codegen/ir.rs``.
Mirrors ``refimpl/planner/launch/launch.py``: same names, same order, same results. The plan it
returns is made of refimpl's frozen dataclasses (``LaunchPlan``, ``FuseBlockConfig``, the
``RefLayout`` variants, ``LaunchInput`` / ``LaunchOutput``, ``Launch``), re-exported here, so
``fastplan.launch.launch.plan_launch(...) == refimpl.planner.launch.launch.plan_launch(...)`` is the
whole equivalence check; ``LaunchError`` and ``FusedContext`` are refimpl's too. ``plan_launch``
chains the twins of the four passes (``fastplan.launch.launch_planners``,
``fastplan.launch.launch_vectorize``) on fastplan's ``PlanningState`` and on either memory:
``fastplan.launch.handles.Memory`` (the stream walk's) or ``refimpl.planner.launch.handles.Memory``
(the interpreter's). The plan's dataclasses are built with ``fastplan.stream.relative.new_frozen``.

Differs from refimpl:

* the passes are chained as C calls (``plan_inputs_c``, ``plan_outputs_c``,
  ``plan_vectorization_c``; the ``def`` names call them);
* ``context_of`` reads an op's target dtype only where refimpl's read of it matters (and
  fails there the same way), and a tensor met again as the same ``TensorIr`` or shape tuple
  is not compared item by item;
* for the stream walk (``plan_launch_walk``) a block's reads and writes keep the trace's
  tuples of ops, no op is marked and no frozen plan is built: ``_WalkLaunch`` holds what the
  walk reads, with ``_freeze``'s failures checked without the objects;
* the int64 extents guard (``_extents_fit_c``) reads the context's tensors through borrowed
  pointers and keeps its verdict on the live entry.
"""

cimport cython

import hashlib

from cpython.dict cimport PyDict_Copy, PyDict_Next
from cpython.object cimport PyTypeObject
from cpython.ref cimport Py_INCREF, PyObject
from cpython.tuple cimport PyTuple_GET_SIZE, PyTuple_New, PyTuple_SET_ITEM
from libc.stdint cimport int64_t

from fastplan._keys cimport (
    FieldRead, _tuple_item, field, field_read,
    F_SCALAR, F_TENSOR, F_TENSORS, Slots, StructInfo, exact_codes, exact_long_long, field_offset,
    slot, slots, struct_info, tensor_id, tensor_type,
)
from fastplan.launch.handles cimport Memory, _Live, live_find, live_handle
from fastplan.launch.handles_ops cimport op_nodes
from fastplan.launch.layout cimport matrix_batch_layout_o, permuted_innermost_axis_t
from fastplan.stream.relative cimport new_frozen

from fastplan.launch.launch_planners cimport (
    BlockPlan, HandleInput, HandleOutput, PlanningState, ReferenceSelection, block_at, input_at,
    new_reference, output_at, plan_inputs_c,
)
from fastplan.launch.launch_planners_output cimport plan_outputs_c
from fastplan.launch.launch_vectorize cimport plan_vectorization_c

from refimpl.ir import OP_IR_STRUCTS, FieldKind, ScalarOpIr
from refimpl.ops import OPS, OpKind
from refimpl.planner.engine.trace import Input, ReshapeView
from refimpl.planner.launch.handles import Handle as _Handle
from refimpl.planner.launch.launch import plan_launch as _ref_plan_launch
from refimpl.planner.launch.launch import (
    ConcreteLayout, FuseBlockConfig, FusedContext, Launch, LaunchError, LaunchInput,
    LaunchOutput, LaunchPlan, RefLayout, ReshapedLayout, RuntimeLayout, ShapeLayout,
    SwapDimsLayout,
)
from refimpl.planner.launch.layout import MatrixBatchLayout

__all__ = [
    "ConcreteLayout", "ReshapedLayout", "SwapDimsLayout", "ShapeLayout", "RuntimeLayout",
    "RefLayout", "FuseBlockConfig", "config_id", "LaunchInput", "LaunchOutput", "LaunchPlan",
    "Launch", "LaunchError", "FusedContext", "context_of", "plan_launch",
]

RefLayout = RefLayout
cdef object _DROP = OpKind.DROP
cdef object _HIGHLY_PERMUTED = MatrixBatchLayout.HighlyPermuted
cdef object _SCALAR = FieldKind.SCALAR
cdef tuple _IS_DROP = tuple([op.kind is OpKind.DROP for op in OPS])


def config_id(config):
    """A stable kernel-cache key: sha256 of the config's repr, first 16 hex digits.

    Mirrors refimpl.planner.launch.launch.config_id.
    """
    return hashlib.sha256(repr(config).encode("utf-8")).hexdigest()[:16]


cdef list _scalar_dtypes(object op):
    """The dtype each scalar field of ``op`` is converted to (refimpl's ``_scalar_dtypes``)."""
    desc = op.desc
    target = desc.lhs.dtype if isinstance(desc, ScalarOpIr) else desc.out.dtype
    return [target for _, kind in desc.SCHEMA if kind is _SCALAR]


def context_of(segment, global2relative, shapes, scalars):
    """The context of a segment. Snapshots come from the ops (a ``Drop`` snapshot only when

    Mirrors refimpl.planner.launch.launch.context_of.
    """
    return context_of_c(segment, global2relative, shapes, scalars)


cdef object context_of_c(object segment, object global2relative, object shapes,
                         object scalars):
    """``context_of`` as a C call (the stream walk makes one context per execution)."""
    cdef dict tensors = {}
    cdef list dtypes = []
    cdef int64_t code, struct_code
    cdef const StructInfo* info
    cdef Py_ssize_t f
    for op in segment:
        if not exact_codes(op, &code, &struct_code):
            _note_any(op, global2relative, tensors, dtypes)
            continue
        desc = slot(op, slots().desc)
        info = struct_info(struct_code)
        if _IS_DROP[code]:
            dropped = desc.tensor
            tensors.setdefault(global2relative[tensor_id(dropped)], dropped)
            continue
        # op.nodes(): the inputs in field order, then ``out``
        for f in range(info.n_fields):
            if f != info.out_field:
                if info.kinds[f] == F_TENSOR:
                    _note(slot(desc, info.offsets[f]), global2relative, tensors)
                elif info.kinds[f] == F_TENSORS:
                    for tensor in slot(desc, info.offsets[f]):
                        _note(tensor, global2relative, tensors)
        if info.out_field >= 0:
            _note(slot(desc, info.offsets[info.out_field]), global2relative, tensors)
        if info.out_field >= 0 and not _SCALAR_STRUCT[struct_code] and \
                not _has_scalars(info):
            out = slot(desc, info.offsets[info.out_field])
            if type(out) is tensor_type() and _slot_set(out, slots().dtype):
                continue  # no scalar dtype to note, and refimpl's ``desc.out.dtype`` reads
        target = desc.lhs.dtype if isinstance(desc, ScalarOpIr) else desc.out.dtype
        for f in range(info.n_fields):
            if info.kinds[f] == F_SCALAR:
                dtypes.append(target)
    if type(shapes) is dict:
        shapes = PyDict_Copy(shapes)  # dict(shapes), without the call through the type
    else:
        shapes = dict(shapes)
    if not dtypes and type(scalars) is tuple:  # zip stops at the shorter: nothing to pair
        pairs = ()
    else:
        pairs = tuple(zip(scalars, dtypes))
    return new_frozen(FusedContext, (tensors, shapes, pairs))


# Per operand struct (by its code, the index in OP_IR_STRUCTS): whether it is a ScalarOpIr,
# whose scalar fields take the lhs dtype (``_scalar_dtypes``).
cdef tuple _SCALAR_STRUCT = tuple([issubclass(s, ScalarOpIr) for s in OP_IR_STRUCTS])


cdef inline bint _has_scalars(const StructInfo* info) noexcept:
    cdef Py_ssize_t f
    for f in range(info.n_fields):
        if info.kinds[f] == F_SCALAR:
            return True
    return False


cdef inline bint _slot_set(object obj, Py_ssize_t offset) noexcept:
    """Whether the slot at ``offset`` of ``obj`` (of the exact type the caller checked) is
    set."""
    return (<PyObject**>((<char*><PyObject*>obj) + offset))[0] != NULL


cdef FieldRead _SHAPE = field_read("shape")
cdef FieldRead _ID = field_read("id")  # a TensorIr's
cdef FieldRead _RESOURCES = field_read("resources")  # a FuseTrace's
cdef FieldRead _BLOCKS = field_read("blocks")
cdef FieldRead _VIEWS = field_read("views")  # its resources'
cdef FieldRead _READS = field_read("reads")  # a FuseBlock's
cdef FieldRead _WRITES = field_read("writes")
cdef FieldRead _SHAPE_REF = field_read("shape_ref")


cdef inline int _note(object tensor, object global2relative, dict tensors) except -1:
    rid = global2relative[tensor_id(tensor)]
    known = tensors.get(rid)
    if known is None:
        tensors[rid] = tensor
        return 0
    if known is tensor:  # the same TensorIr again: its shape equals itself
        return 0
    known_shape, shape = field(known, &_SHAPE), field(tensor, &_SHAPE)
    # a tuple equals itself (its items compared by identity first); anything else is asked
    if (known_shape is not shape or type(shape) is not tuple) and known_shape != shape:
        tensors[rid] = tensor
    return 0


cdef int _note_any(object op, object global2relative, dict tensors, list dtypes) except -1:
    """``context_of``'s step for an op of any class answering ``op``/``desc``/``nodes()``."""
    if op.op.kind is _DROP:
        dropped = op.desc.tensor
        tensors.setdefault(global2relative[dropped.id], dropped)
        return 0
    for tensor in op_nodes(op):
        rid = global2relative[tensor.id]
        known = tensors.get(rid)
        if known is None or known.shape != tensor.shape:
            tensors[rid] = tensor
    dtypes.extend(_scalar_dtypes(op))
    return 0


# --- LaunchPlanExecutor ---------------------------------------------------------------------


cdef object _ref_layout(ReferenceSelection reference, object width):
    kind = reference.kind
    if kind == "Concrete":
        return new_frozen(ConcreteLayout, (reference.arg,))
    if kind == "VirtualShape":
        return new_frozen(ShapeLayout, (reference.arg, width))
    if kind == "SwapDims":
        return new_frozen(SwapDimsLayout, (reference.arg, reference.dims))
    if kind == "Reshaped":
        return new_frozen(ReshapedLayout, (reference.pos, width))
    if kind == "Runtime":
        return new_frozen(RuntimeLayout, (reference.pos,))
    raise LaunchError("ReferenceNotFound: no reference layout for a block")


cdef tuple _configs(PlanningState state):
    cdef list configs = []
    cdef list ops
    cdef BlockPlan block
    cdef ReferenceSelection reference
    cdef Py_ssize_t i
    cdef list blocks = state.blocks
    fuse_blocks = field(state.trace, &_BLOCKS)
    rank = state.rank
    for i in range(min(len(blocks), len(fuse_blocks))):  # zip's pairs
        block = block_at(blocks, i)
        reference = block.reference
        axis = None
        if reference.kind == "Concrete":
            axis = permuted_innermost_axis_t(reference.shape, reference.strides)
        vector_axis = axis if axis is not None else max(rank - 1, 0)
        ops = []
        reads, writes = block.reads, block.writes
        for rid in sorted(reads):
            ops.extend(reads[rid])
        ops.extend(fuse_blocks[i].ops)
        for rid in sorted(writes):
            ops.extend(writes[rid])
        configs.append(new_frozen(FuseBlockConfig, (rank, _ref_layout(reference, block.width),
                                                    tuple(ops), block.width, vector_axis)))
    return tuple(configs)


cdef object _freeze(PlanningState state):
    cdef Py_ssize_t num_writes = 0, i
    cdef HandleInput item
    cdef HandleOutput out
    cdef list blocks = state.blocks, state_inputs = state.inputs, state_outputs = state.outputs
    for i in range(len(blocks)):
        for ops in block_at(blocks, i).writes.values():
            num_writes += len(ops)
    skipped = num_writes == 0  # burn returns before building configs: no reference needed
    configs = () if skipped else _configs(state)
    cdef list inputs = []
    for i in range(len(state_inputs)):
        item = input_at(state_inputs, i)
        inputs.append(new_frozen(LaunchInput, (item.glob.id, item.precision, item.glob.shape,
                                               item.strides, item.vector_size,
                                               item.broadcasted)))
    cdef list outputs = []
    for i in range(len(state_outputs)):
        out = output_at(state_outputs, i)
        vs = out.vectorization if out.kind == "owned" else \
            input_at(state_inputs, out.input_pos).vector_size
        outputs.append(new_frozen(LaunchOutput, (out.glob.id, out.precision, out.glob.shape,
                                                 out.handle.strides, vs, out.kind,
                                                 out.input_pos)))
    cdef dict sizes = {}
    for launch_input in inputs:
        sizes[launch_input.tensor] = launch_input.vector_size
    aliases, views = [], []
    for o in outputs:
        sizes[o.tensor] = o.vector_size
        if o.kind == "inplace":
            aliases.append((o.tensor, inputs[o.input_pos].tensor))
        elif o.kind == "view":
            views.append((o.tensor, inputs[o.input_pos].tensor))
    tensors = state.context.tensors
    reshapes = tuple([d for view in state.trace.resources.views if type(view) is ReshapeView
                      for d in tensors[view.reshaped].shape])
    plan = new_frozen(LaunchPlan, (
        state.rank,  # rank
        configs,  # configs
        tuple(inputs),  # inputs
        tuple(outputs),  # outputs
        tuple(sorted(aliases)),  # aliases
        tuple(sorted(views)),  # views
        tuple(sorted(sizes.items())),  # vector_sizes
        reshapes,  # reshapes
        tuple(state.runtime_layouts),  # runtime_layouts
        skipped,  # skipped
    ))
    return new_frozen(Launch, (plan, tuple([(<HandleInput>x).handle for x in state_inputs]),
                               tuple([(<HandleOutput>x).handle for x in state_outputs])))


# The C cores compute with int64 (strides as products of dims, offsets as sums of dims times
# strides); refimpl's Python ints never wrap. A launch whose tensors reach past this bound is
# refimpl's to plan.
cdef object _EXTENT_LIMIT = 1 << 62
cdef Py_ssize_t _H_SHAPE = field_offset(_Handle, "shape")
cdef Py_ssize_t _H_STRIDES = field_offset(_Handle, "strides")
cdef Py_ssize_t _H_OFFSET = field_offset(_Handle, "offset")


def _extents_fit(context, memory):
    """Whether every tensor of ``context`` has fewer than 2**62 elements and its live handle in
    ``memory`` (if any) a buffer extent below 2**62: what the C cores can plan exactly."""
    return extents_fit(context, memory)


cdef bint extents_fit(object context, object memory) except -1:
    """``_extents_fit`` as a C call (the stream walk checks every fused step)."""
    cdef int fast
    if type(memory) is Memory:  # its live entries, without a snapshot of its handles
        fast = _extents_fit_c(context.tensors, None, <Memory>memory)
    else:
        fast = _extents_fit_c(context.tensors, memory.handles, None)
    if fast >= 0:
        return fast == 1
    handles = memory.handles
    for tensor in context.tensors.values():
        numel = 1
        for d in tensor.shape:
            numel *= d
        if not -_EXTENT_LIMIT < numel < _EXTENT_LIMIT:
            return False
        h = handles.get(tensor.id)
        if h is None:
            continue
        extent = h.offset
        for d, stride in zip(h.shape, h.strides):
            extent += abs(d * stride)
        if not extent < _EXTENT_LIMIT:
            return False
    return True


cdef extern from *:
    """
    static inline int fastplan_mul_ovf(long long a, long long b, long long *r) {
        return __builtin_mul_overflow(a, b, r);
    }
    static inline int fastplan_add_ovf(long long a, long long b, long long *r) {
        return __builtin_add_overflow(a, b, r);
    }
    """
    bint _mul_ovf "fastplan_mul_ovf"(long long a, long long b, long long* r) noexcept
    bint _add_ovf "fastplan_add_ovf"(long long a, long long b, long long* r) noexcept


cdef long long _LIMIT = (<long long>1) << 62


cdef extern from *:
    # fastplan._keys' ``compact_int`` on a borrowed pointer (its C function, emitted with the
    # cimport)
    int _compact_at "fastplan_compact_int"(PyObject* o, long long* v) noexcept
    PyTypeObject* _type_at "Py_TYPE"(PyObject* o) noexcept
    PyTypeObject PyLong_Type
    PyTypeObject PyTuple_Type


cdef inline PyObject* _slot_at(PyObject* obj, Py_ssize_t offset) noexcept:
    """The slot at ``offset`` of ``obj`` (borrowed; NULL: not set)."""
    return (<PyObject**>((<char*>obj) + offset))[0]


cdef int _extents_fit_c(object tensors, object handles, Memory live) except -2:
    """``_extents_fit`` in C arithmetic: 1 (fits), 0 (does not), or -1 where it cannot decide
    exactly (a dict subclass, a tensor or handle of another class, a value that is no exact
    int, a product or sum past a C long long): the caller's Python loop then decides.
    The handles: ``handles`` (tensor id -> handle), or ``live``'s (a fastplan ``Memory``)."""
    cdef long long numel, extent, d, stride, term
    cdef tuple shape, strides
    cdef Py_ssize_t i
    cdef const Slots* at = slots()
    cdef PyObject* entry = NULL
    cdef Py_ssize_t pos = 0
    cdef PyObject* key_at
    cdef PyObject* tensor_at
    cdef PyObject* item
    cdef PyObject* value_at
    tensor_class = tensor_type()
    if type(tensors) is not dict or (live is None and type(handles) is not dict):
        return -1
    # the dict's values, its shapes' dims and the ids read through borrowed pointers (the dict
    # and the frozen tensors hold them; nothing here changes either), one-digit ints in place
    while PyDict_Next(tensors, &pos, &key_at, &tensor_at):
        if _type_at(tensor_at) != <PyTypeObject*>tensor_class:
            return -1
        item = _slot_at(tensor_at, at.shape)
        if item == NULL or _type_at(item) != &PyTuple_Type:
            return -1
        numel = 1
        for i in range(PyTuple_GET_SIZE(<tuple>item)):
            value_at = _tuple_item(item, i)
            if not (_type_at(value_at) == &PyLong_Type and _compact_at(value_at, &d)) and \
                    not exact_long_long(<object>value_at, &d):
                return -1
            if _mul_ovf(numel, d, &numel):
                return -1
        if not -_LIMIT < numel < _LIMIT:
            return 0
        if live is not None:
            item = _slot_at(tensor_at, at.tid)
            if item == NULL or _type_at(item) != &PyLong_Type:
                return -1
            if _compact_at(item, &d) and d >= 0:  # its own key (handles.tensor_key)
                entry = live_find(live, d)
            else:
                entry = live.live_entry(<object>item)
            if entry == NULL or (<_Live>entry).extent_fits:  # no handle, or checked before
                continue
            h = live_handle(<_Live>entry)
        else:
            h = (<dict>handles).get(slot(<object>tensor_at, at.tid))
            if h is None:
                continue
        if type(h) is not _Handle:
            return -1
        shape, strides = slot(h, _H_SHAPE), slot(h, _H_STRIDES)
        if not exact_long_long(slot(h, _H_OFFSET), &extent):
            return -1
        for i in range(min(len(shape), len(strides))):  # zip's pairs
            if (not exact_long_long(shape[i], &d) or not exact_long_long(strides[i], &stride)
                    or _mul_ovf(d, stride, &term)):
                return -1
            if term < 0:
                if term == -_LIMIT * 2:  # no positive twin in a long long
                    return -1
                term = -term
            if _add_ovf(extent, term, &extent):
                return -1
        if not extent < _LIMIT:
            return 0
        if entry != NULL:
            (<_Live>entry).extent_fits = True
    return 1


def plan_launch(trace, context, memory, device, matmul_operands=None):
    """burn ``FuseTraceLauncher::launch`` up to the kernel: plan inputs, outputs, vector sizes

    Mirrors refimpl.planner.launch.launch.plan_launch. A launch past int64 extents
    (``_extents_fit``) is planned by refimpl's ``plan_launch``, on the same memory.
    """
    if not _extents_fit(context, memory):
        return _ref_plan_launch(trace, context, memory, device, matmul_operands)
    return _plan_launch(trace, context, memory, device, matmul_operands)


def _plan_launch(trace, context, memory, device, matmul_operands=None):
    """``plan_launch`` for a launch whose extents fit int64 (the walk checks them per step)."""
    return _freeze(_planned(trace, context, memory, device, matmul_operands, False))


@cython.freelist(64)  # one per launch of the walk
cdef class _WalkLaunch:
    """What the stream walk (``fastplan.launch.execute``) reads of a launch, built instead of
    the ``Launch``: the plan's ``aliases``, each block's width (``widths``, the configs' in
    order), ``skipped``, and what burn's fused matmul checks (``walk_matmul_refused``). The
    configs' ops with their layout marks, the vector sizes, views, reshapes and runtime
    layouts are the kernel's: the walk reads none of them. (Fields in launch.pxd: the
    state's inputs and outputs, whose vector sizes and strides ``walk_matmul_refused`` reads,
    and the first config's ``ConcreteLayout`` arg, ``None`` for any other layout.)"""


cdef _WalkLaunch plan_launch_walk(object trace, object context, object memory, object device,
                                  object matmul_operands):
    """``_plan_launch`` for the stream walk: the same passes on the same memory, without the
    layout marks, frozen as a ``_WalkLaunch``. It raises where ``_plan_launch`` does."""
    return _freeze_walk(_planned(trace, context, memory, device, matmul_operands, True))


cdef PlanningState _planned(object trace, object context, object memory, object device,
                            object matmul_operands, bint walk):
    """The four passes (burn ``LaunchPlanExecutor``'s planners) run on a fresh state."""
    cdef list blocks = []
    cdef BlockPlan block
    cdef PlanningState state = PlanningState.__new__(PlanningState)
    cdef Py_ssize_t rank = 0
    for b in field(trace, &_BLOCKS):
        block = BlockPlan.__new__(BlockPlan)
        block.reads = _tensor_ops(field(b, &_READS), walk)
        block.writes = _tensor_ops(field(b, &_WRITES), walk)
        block.reference = new_reference("Searching", None, (), (), _NO_DIMS, 0)
        block.width, block.inplaces, block.potential_ref = 0, [], None
        blocks.append(block)
    for b in field(trace, &_BLOCKS):
        if len(field(b, &_SHAPE_REF)) > rank:
            rank = len(field(b, &_SHAPE_REF))
    state.trace, state.context, state.memory, state.rank, state.blocks = (
        trace, context, memory, rank, blocks)
    state.inputs, state.outputs, state.runtime_layouts, state.vectorizations = [], [], [], {}
    state.walk = walk
    plan_inputs_c(state)
    plan_outputs_c(state)
    plan_vectorization_c(state, device, matmul_operands)
    return state


cdef tuple _NO_DIMS = (0, 0)


cdef dict _tensor_ops(object pairs, bint walk):
    """A block's ``{rid: list(ops) for rid, ops in pairs}`` (its reads or writes). For the
    stream walk a tuple of ops is kept as it is instead of copied: the walk's passes mark no
    op (``launch_planners._mark``) and replace a list rather than change it
    (``_remove_concrete_write``), so they only read it."""
    cdef dict found = {}
    cdef tuple pair
    if walk and type(pairs) is tuple:
        for item in <tuple>pairs:
            if type(item) is tuple and len(<tuple>item) == 2 and \
                    type((<tuple>item)[1]) is tuple:
                pair = <tuple>item
                found[pair[0]] = pair[1]
            else:
                rid, ops = item
                found[rid] = list(ops)
        return found
    for rid, ops in pairs:
        found[rid] = list(ops)
    return found


cdef _WalkLaunch _freeze_walk(PlanningState state):
    """``_freeze``'s values that the walk reads, with ``_freeze``'s failures: a block without
    a reference layout is burn's ``ReferenceNotFound``, and the plan's tensor ids are sorted
    (its aliases, views and vector sizes). Ids that are all exact ints always sort; any other
    ids go through ``_freeze`` itself first, so that a set of them that does not order fails
    as refimpl's plan does. The vector sizes and strides ``walk_matmul_refused`` reads are
    read from the state's inputs and outputs when it asks (only a matmul launch does)."""
    cdef Py_ssize_t num_writes = 0, i, n
    cdef HandleOutput out
    cdef BlockPlan block
    cdef ReferenceSelection reference
    cdef list blocks = state.blocks, state_inputs = state.inputs, state_outputs = state.outputs
    cdef list aliases = []
    cdef tuple widths
    cdef object width  # a Python int: the tuple takes a reference to it
    cdef _WalkLaunch found = _WalkLaunch.__new__(_WalkLaunch)
    if not _int_ids(state_inputs, state_outputs):
        _freeze(state)
    for i in range(len(blocks)):
        for ops in block_at(blocks, i).writes.values():
            num_writes += len(ops)
    found.skipped = num_writes == 0
    if found.skipped:
        found.widths = ()
    else:
        fuse_blocks = field(state.trace, &_BLOCKS)
        n = min(len(blocks), len(fuse_blocks))  # _configs' pairs
        widths = PyTuple_New(n)
        for i in range(n):
            block = block_at(blocks, i)
            reference = block.reference
            kind = reference.kind
            if kind == "Concrete":
                # _configs' vector axis fails where plan_vectorization's (_vector_axes, on this
                # same reference of every block) failed first: not taken again
                if i == 0:  # the first config's ConcreteLayout arg
                    found.ref_arg = reference.arg
            elif kind not in _OTHER_LAYOUTS:
                _ref_layout(reference, block.width)  # burn's ReferenceNotFound
            width = block.width
            Py_INCREF(width)
            PyTuple_SET_ITEM(widths, i, width)
        found.widths = widths
    found.inputs, found.outputs = state_inputs, state_outputs
    for i in range(len(state_outputs)):
        out = output_at(state_outputs, i)
        if out.kind != "owned":  # _freeze reads the vector size of the input it aliases
            input_at(state_inputs, out.input_pos)
        if out.kind == "inplace":
            aliases.append((field(out.glob, &_ID),
                            field(input_at(state_inputs, out.input_pos).glob, &_ID)))
    if len(aliases) > 1:
        aliases.sort()
    found.aliases = tuple(aliases)
    views = field(field(state.trace, &_RESOURCES), &_VIEWS)
    if views:  # _freeze's reshape dims, for their failures
        tensors = state.context.tensors
        for view in views:
            if type(view) is ReshapeView:
                tuple(tensors[view.reshaped].shape)
    return found


# The reference kinds other than "Concrete" that _ref_layout turns into a layout.
cdef tuple _OTHER_LAYOUTS = ("VirtualShape", "SwapDims", "Reshaped", "Runtime")


cdef bint _int_ids(list inputs, list outputs) except -1:
    """Whether every input and output is in place and its global tensor id an exact ``int``
    (false for anything else: ``_freeze`` then decides)."""
    cdef Py_ssize_t i
    for i in range(len(inputs)):
        item = inputs[i]
        if type(item) is not HandleInput or \
                type(field((<HandleInput>item).glob, &_ID)) is not int:
            return False
    for i in range(len(outputs)):
        item = outputs[i]
        if type(item) is not HandleOutput or \
                type(field((<HandleOutput>item).glob, &_ID)) is not int:
            return False
    return True


cdef bint walk_matmul_refused(_WalkLaunch launch, Py_ssize_t lhs, Py_ssize_t rhs) except -1:
    """``refimpl.interpreter._matmul_refused`` on a ``_WalkLaunch``: burn's fused matmul
    refuses a highly permuted operand, or an output vector size of 1 while an operand is
    vectorized."""
    sizes = (_input(launch, lhs).vector_size, _input(launch, rhs).vector_size)
    for pos in (lhs, rhs):
        if matrix_batch_layout_o(_input(launch, pos).strides) is _HIGHLY_PERMUTED:
            return True
    out = 1
    arg = launch.ref_arg
    if arg is not None:
        if isinstance(arg, Input):
            out = _input(launch, arg.pos).vector_size
        else:
            out = _output_size(launch, arg.pos)
    return out == 1 and (sizes[0] > 1 or sizes[1] > 1)


cdef Py_ssize_t _index(Py_ssize_t i, Py_ssize_t n) except -1:
    """``i`` as Python indexes a tuple of ``n`` (from the end when negative; ``IndexError``
    past it, as refimpl's plan's tuples raise): the build turns bounds checks off."""
    if i < 0:
        i += n
    if not 0 <= i < n:
        raise IndexError("tuple index out of range")
    return i


cdef HandleInput _input(_WalkLaunch launch, object pos):
    """The plan's input ``pos`` (the launch's ``LaunchInput``: its vector size and strides)."""
    return input_at(launch.inputs, _index(pos, len(launch.inputs)))


cdef object _output_size(_WalkLaunch launch, object pos):
    """The vector size of the plan's output ``pos`` (``_freeze``'s: an owned output's own, else
    that of the input it aliases)."""
    cdef HandleOutput out = output_at(launch.outputs, _index(pos, len(launch.outputs)))
    if out.kind == "owned":
        return out.vectorization
    return input_at(launch.inputs, out.input_pos).vector_size
