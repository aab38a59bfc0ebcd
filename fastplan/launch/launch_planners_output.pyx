# cython: language_level=3
"""burn's ``OutputPlanner``: where each output of a launch goes (a fresh buffer, in place on an
input, or a view), then the block's reference layout.

burn counterpart: ``crates/burn-cubecl-fusion/src/engine/launch/output.rs``.
Part of fastplan's twin of ``refimpl/planner/launch/launch_planners.py``, split along burn's
seam: the working state and ``InputPlanner`` stay in ``fastplan.launch.launch_planners``, whose
``plan_outputs`` and ``may_permute_layout`` call ``plan_outputs_c`` and ``may_permute`` here.
"""

cimport cython

from dataclasses import replace

from cpython.object cimport PyTypeObject
from cpython.ref cimport PyObject
from cpython.tuple cimport PyTuple_GET_SIZE

from fastplan._keys cimport FieldRead, _tuple_item, field, field_read

cdef extern from *:
    # fastplan._keys' ``compact_int`` on a borrowed pointer (its C function, emitted with the
    # cimport)
    int _compact_at "fastplan_compact_int"(PyObject* o, long long* v) noexcept
    PyTypeObject PyLong_Type
from fastplan.launch.handles cimport Memory as PlanningMemory
from fastplan.launch.handles_layouts cimport buffer_length
from fastplan.launch.launch_planners cimport (
    BlockPlan, HandleInput, HandleOutput, PlanningState, ReferenceSelection, block_at, input_at,
    _type_of, new_reference, storage_bytes,
)
from fastplan.stream.relative cimport make_frozen, new_frozen
from fastplan.launch.layout cimport (
    contiguous_strides_t, dim_order_t, is_contiguous_t, is_dense_t, strides_for_t,
)

from refimpl.ir import TensorIr, TensorStatus
from refimpl.planner.engine.settings import RefLayoutMode
from refimpl.planner.engine.trace import (
    FuseOp, Input, LayoutInfo, NhwcStridesView, Output, ReshapeView, SwapDimsView,
    UnaryFuseArgs,
)
from refimpl.planner.launch.handles import Handle, Memory
from refimpl.planner.launch.layout import relayout_strides, reshape_action


# Attribute reads of the hot paths, served from the slot of the type last read (_keys.field).
cdef FieldRead _ID = field_read("id")
cdef FieldRead _SHAPE = field_read("shape")
cdef FieldRead _DTYPE = field_read("dtype")
cdef FieldRead _STATUS = field_read("status")
cdef FieldRead _BUFFER = field_read("buffer")
cdef FieldRead _STRIDES = field_read("strides")
cdef FieldRead _TENSOR = field_read("tensor")
cdef FieldRead _TY = field_read("ty")
cdef FieldRead _SHAPE_REF = field_read("shape_ref")
cdef FieldRead _NAME = field_read("name")
cdef FieldRead _SETTINGS = field_read("settings")
cdef FieldRead _OPS = field_read("ops")
cdef FieldRead _OFFSET = field_read("offset")  # a Handle's
cdef FieldRead _RESOURCES = field_read("resources")  # a FuseTrace's
cdef FieldRead _BLOCKS = field_read("blocks")
cdef FieldRead _INPUTS = field_read("inputs")  # its resources'
cdef FieldRead _OUTPUTS = field_read("outputs")
cdef FieldRead _VIEWS = field_read("views")
cdef FieldRead _INDEXED = field_read("indexed")
cdef FieldRead _UNHANDLED = field_read("inputs_unhandled")
cdef FieldRead _DROPPED = field_read("dropped")
cdef FieldRead _TENSORS = field_read("tensors")  # the launch context's
cdef FieldRead _INPLACE = field_read("inplace")  # a FuseBlock's settings'
cdef FieldRead _REF_LAYOUT = field_read("ref_layout")
cdef FieldRead _REF_MODE = field_read("mode")  # the ref_layout setting's
cdef FieldRead _REF_BLOCK_POS = field_read("block_pos")
cdef FieldRead _CHOOSE_OUTPUT = field_read("choose_output_layout")
cdef object _READ_WRITE = TensorStatus.ReadWrite
cdef object _ANY = RefLayoutMode.Any
cdef object _SAME_AS_BLOCK = RefLayoutMode.SameAsBlock
cdef object _ONLY_CONTIGUOUS = RefLayoutMode.OnlyContiguous
cdef object _IS_REF = LayoutInfo.IsRef
cdef object _SAME_AS_REF = LayoutInfo.SameAsRef
cdef object _UNKNOWN = LayoutInfo.Unknown
cdef tuple _INDEXING = ("Gather", "Select", "Cat")
cdef frozenset _INDEXING_NAMES = frozenset(_INDEXING)  # one hash probe for an exact str
cdef tuple _FUSE_OP_FIELDS = ("name", "args")
# Input, Output, UnaryFuseArgs, Handle and TensorIr are frozen slots dataclasses whose
# ``__init__`` only assigns: built with ``new_frozen`` (the same objects, without the frozen
# ``__init__``'s ``object.__setattr__`` per field).
cdef tuple _NO_DIMS = (0, 0)


cdef object _assign(object args):
    # FuseOp("Assign", args) for UnaryFuseArgs: FuseOp.__post_init__ only checks that pairing,
    # so the object is built without it (same fields, same object)
    if type(args) is not UnaryFuseArgs:
        return FuseOp("Assign", args)
    return make_frozen(FuseOp, _FUSE_OP_FIELDS, ("Assign", args))


cdef object _alloc(object memory, tuple shape, object dtype, tuple strides):
    """``memory.alloc(shape, dtype, strides)``; inlined for a planning-only ``Memory`` (no
    values): the same buffer number, size entry and handle."""
    if type(memory) is PlanningMemory and len(strides) == len(shape):
        return (<PlanningMemory>memory)._alloc(shape, dtype, strides)
    if type(memory) is not Memory or memory.with_values or len(strides) != len(shape):
        return memory.alloc(shape, dtype, strides)
    buffer = memory.next_buffer
    memory.next_buffer = buffer + 1
    memory.sizes[buffer] = buffer_length(shape, strides)
    return new_frozen(Handle, (buffer, shape, strides, 0, dtype))


cdef int _register(object memory, object tensor_id, object handle) except -1:
    """``memory.register(tensor_id, handle)``: a C call on a planning-only ``Memory``."""
    if type(memory) is PlanningMemory:
        (<PlanningMemory>memory).register(tensor_id, handle)
    else:
        memory.register(tensor_id, handle)
    return 0


cdef object _with_layout(object arg, object layout):
    """burn ``FuseArg::add_layout_info``: only plain inputs and outputs carry one."""
    cdef type t = type(arg)
    if t is Input:
        return new_frozen(Input, (arg.pos, arg.ty, layout))
    if t is Output:
        return new_frozen(Output, (arg.pos, arg.ty, layout))
    if isinstance(arg, (Input, Output)):  # a subclass: refimpl's replace
        return replace(arg, layout=layout)
    return arg


cdef void _mark(PlanningState state, object marked, bint input_side, object layout,
                bint first_only) except *:
    """Set ``layout`` on the input (``input_side``) or output of the ``Assign`` ops. Not for
    a state planned for the stream walk (``state.walk``): the marked ops are the kernel's, and
    nothing the walk reads (widths, aliases, the memory) depends on them (a walk's blocks
    keep the trace's tuples of ops: ``fastplan.launch.launch._tensor_ops``)."""
    cdef Py_ssize_t i
    cdef list ops
    if state.walk:
        return
    ops = marked
    for i in range(len(ops)):
        op = ops[i]
        if op.name != "Assign":
            continue
        args = op.args
        if input_side:
            args = new_frozen(UnaryFuseArgs, (_with_layout(args.input, layout), args.out))
        else:
            args = new_frozen(UnaryFuseArgs, (args.input, _with_layout(args.out, layout)))
        ops[i] = _assign(args)
        if first_only:
            return




# --- OutputPlanner -----------------------------------------------------------------------------




cdef bint may_permute(object settings, object ops) except -1:
    if field(field(settings, &_REF_LAYOUT), &_REF_MODE) is not _ANY or \
            not field(settings, &_CHOOSE_OUTPUT):
        return False
    for op in ops:
        name = field(op, &_NAME)
        if name in _INDEXING_NAMES if type(name) is str else name in _INDEXING:
            return False
    return True


cdef bint _block_may_permute(BlockPlan block, object fuse_block) except -1:
    """``may_permute_layout`` of ``fuse_block`` (the trace's block planned by ``block``), kept
    on ``block`` for the rest of the launch: the output planner asks it once per output, and
    a ``FuseBlock`` (frozen, its ops a tuple of frozen ``FuseOp``s) gives the same answer
    every time."""
    if block.permute_of is not fuse_block:
        block.permute = may_permute(field(fuse_block, &_SETTINGS), field(fuse_block, &_OPS))
        block.permute_of = fuse_block
    return block.permute


cdef inline object _ref_mode(object fuse_block):
    """``fuse_block.settings.ref_layout.mode``, read at the slots."""
    return field(field(field(fuse_block, &_SETTINGS), &_REF_LAYOUT), &_REF_MODE)


cdef object _view_of(PlanningState state, object relative_id):
    for view in field(field(state.trace, &_RESOURCES), &_VIEWS):
        t = type(view)
        if t is ReshapeView:
            target = view.reshaped
        elif t is SwapDimsView:
            target = view.swapped
        elif t is NhwcStridesView:
            target = view.id
        else:
            raise KeyError(t)  # refimpl's table lookup fails the same way
        if target == relative_id:
            return view
    return None


cdef Py_ssize_t _inplace_candidate(PlanningState state, Py_ssize_t idx, object glob,
                                   object relative) except -2:
    cdef Py_ssize_t k
    cdef bint permute, ok
    cdef BlockPlan block = block_at(state.blocks, idx)
    cdef ReferenceSelection reference = block.reference
    fuse_block = field(state.trace, &_BLOCKS)[idx]
    permute = _block_may_permute(block, fuse_block)
    k = 0
    for _, candidate, strides in block.inplaces:
        if field(candidate, &_DTYPE) != field(glob, &_DTYPE) or \
                field(candidate, &_SHAPE) != field(relative, &_SHAPE):
            k += 1
            continue
        if dim_order_t(field(glob, &_SHAPE), strides) is None:
            k += 1
            continue
        if reference.kind != "Searching":
            ok = reference.kind == "Concrete" and reference.strides == strides
        elif permute:
            ok = True
        else:
            ok = _ref_mode(fuse_block) is not _SAME_AS_BLOCK and \
                is_contiguous_t(glob.shape, strides)
        if ok:
            return k
        k += 1
    return -1




cdef int plan_outputs_c(PlanningState state) except -1:
    """``plan_outputs`` as a C call (see ``plan_inputs_c``)."""
    cdef Py_ssize_t pos, i, k, idx
    cdef BlockPlan block
    resources = field(state.trace, &_RESOURCES)
    outputs = field(resources, &_OUTPUTS)
    tensors = field(state.context, &_TENSORS)
    cdef list blocks = state.blocks
    state.outputs = [None] * len(outputs)
    for pos in _output_order(outputs):
        entry = outputs[pos]
        relative = field(entry, &_TENSOR)
        rid = field(relative, &_ID)
        glob = tensors[rid]
        idx = -1
        for i in range(len(blocks)):
            if rid in block_at(blocks, i).writes:
                idx = i
                break
        if idx < 0:
            raise StopIteration  # refimpl's next() on an empty generator
        view = _view_of(state, rid)
        t = type(view)
        if t is ReshapeView:
            _reshaped_output(state, pos, field(entry, &_TY), relative, glob, view.original,
                             idx)
        elif t is SwapDimsView:
            _swapped_output(state, pos, field(entry, &_TY), relative, glob, view.original,
                            view.dims, idx)
        elif t is NhwcStridesView:
            shape = field(glob, &_SHAPE)
            strides, changed = relayout_strides(contiguous_strides_t(shape), shape,
                                                view.stride_relayout)
            base = _UNKNOWN if changed else _IS_REF
            _normal_output(state, pos, field(entry, &_TY), relative, glob, strides, base, idx)
        else:
            k = _inplace_candidate(state, idx, glob, relative)
            if k < 0:
                strides = _chosen_strides(state, idx, field(glob, &_SHAPE),
                                          field(relative, &_SHAPE))
                _normal_output(state, pos, field(entry, &_TY), relative, glob, strides, _IS_REF,
                               idx)
            else:
                _inplace_output(state, pos, field(entry, &_TY), relative, glob, k, idx)
    for i in range(len(blocks)):
        block = block_at(blocks, i)
        if block.reference.kind == "Searching":
            _select_reference(state, i)
        else:
            _layout_info_inputs(state, block)
    memory = state.memory
    for rid in field(resources, &_DROPPED):
        tensor = (<dict>tensors).get(rid) if type(tensors) is dict else tensors.get(rid)
        if tensor is not None:
            if type(memory) is PlanningMemory:
                (<PlanningMemory>memory).remove(field(tensor, &_ID))
            else:
                memory.remove(field(tensor, &_ID))
    return 0


cdef enum:
    _ORDER_INLINE = 16  # outputs ordered in C arrays (a launch has a few)


cdef list _output_order(object outputs):
    """The output positions by decreasing sum of their shape, equal sums in position order:
    refimpl's ``sorted(..., key=lambda p: -sum(shape))`` (a stable sort), without a Python
    call per key. Up to ``_ORDER_INLINE`` outputs whose shapes are tuples of one-digit ints
    are summed and sorted in C (``_shape_sum``); any others as Python does."""
    cdef long long sums[_ORDER_INLINE]
    cdef Py_ssize_t order[_ORDER_INLINE]
    cdef Py_ssize_t n = len(outputs), pos, k
    for pos in range(n if n <= _ORDER_INLINE else 0):
        if not _shape_sum(field(field(outputs[pos], &_TENSOR), &_SHAPE), &sums[pos]):
            break
        k = pos  # insertion: after every earlier position whose sum is at least this one's
        while k > 0 and sums[order[k - 1]] < sums[pos]:
            order[k] = order[k - 1]
            k -= 1
        order[k] = pos
    else:
        if n <= _ORDER_INLINE:
            return [order[k] for k in range(n)]
    return _output_order_py(outputs)


cdef bint _shape_sum(object shape, long long* total) noexcept:
    """The sum of ``shape`` when it is a tuple of one-digit exact ints (no sum of them
    overflows), else false."""
    cdef long long value
    cdef Py_ssize_t i
    cdef PyObject* item
    if type(shape) is not tuple:
        return False
    total[0] = 0
    for i in range(PyTuple_GET_SIZE(shape)):
        item = _tuple_item(<PyObject*>shape, i)
        if _type_of(item) != &PyLong_Type or not _compact_at(item, &value):
            return False
        total[0] += value
    return True


cdef list _output_order_py(object outputs):
    """``_output_order`` with Python's sums and sort."""
    cdef list keyed = []
    cdef Py_ssize_t pos
    if len(outputs) == 1:  # one position: its sum is still taken (and fails) as refimpl's
        total = 0
        for dim in field(field(outputs[0], &_TENSOR), &_SHAPE):
            total = total + dim
        return [0]
    for pos in range(len(outputs)):
        total = 0
        for dim in field(field(outputs[pos], &_TENSOR), &_SHAPE):
            total = total + dim
        keyed.append((-total, pos))
    keyed.sort()
    return [item[1] for item in keyed]


cdef tuple _chosen_strides(PlanningState state, Py_ssize_t idx, tuple shape,
                           tuple relative_shape):
    cdef ReferenceSelection reference = block_at(state.blocks, idx).reference
    if reference.kind == "Concrete" and len(reference.shape) == len(shape):
        order = dim_order_t(reference.shape, reference.strides)
        if order is not None:
            return strides_for_t(shape, order)
    if field(field(state.trace, &_BLOCKS)[idx], &_SHAPE_REF) != relative_shape:
        return contiguous_strides_t(shape)
    order = _preferred_dim_order(state, idx, shape)
    return contiguous_strides_t(shape) if order is None else strides_for_t(shape, order)


cdef bint _is_identity(tuple order):
    cdef Py_ssize_t pos
    for pos in range(len(order)):
        if order[pos] != pos:
            return False
    return True


cdef object _preferred_dim_order(PlanningState state, Py_ssize_t idx, tuple shape):
    cdef Py_ssize_t i
    cdef HandleInput item
    fuse_block = field(state.trace, &_BLOCKS)[idx]
    cdef BlockPlan block = block_at(state.blocks, idx)
    if not _block_may_permute(block, fuse_block):
        return None
    resources = field(state.trace, &_RESOURCES)
    indexed = {rid for rid, _ in field(resources, &_INDEXED)}
    unhandled = field(resources, &_UNHANDLED)
    reads = block.reads
    cdef list votes = []
    cdef list best
    cdef list inputs = state.inputs
    for i in range(len(inputs)):
        item = input_at(inputs, i)
        rid = field(item.relative, &_ID)
        if rid not in reads or rid in indexed or rid in unhandled:
            continue
        if field(item.glob, &_SHAPE) != shape:
            continue
        order = dim_order_t(shape, item.strides)
        if order is None:
            continue
        numel = 1
        for d in shape:
            numel *= d
        weight = numel * storage_bytes(field(item.glob, &_DTYPE))
        for vote in votes:
            if vote[0] == order:
                vote[1] += weight
                break
        else:
            votes.append([order, weight])
    if not votes:
        return None
    best = votes[0]
    for vote in votes[1:]:  # Rust's max_by_key keeps the last of equal maxima
        if (vote[1], _is_identity(vote[0])) >= (best[1], _is_identity(best[0])):
            best = vote
    return None if _is_identity(best[0]) else best[0]


cdef HandleOutput _output(object relative, object glob, object ty, object handle, str kind,
                          object input_pos):
    """``HandleOutput(relative, glob, ty, handle, kind, input_pos)`` without the call."""
    cdef HandleOutput out = HandleOutput.__new__(HandleOutput)
    out.relative, out.glob, out.precision, out.handle = relative, glob, ty, handle
    out.kind, out.input_pos, out.vectorization = kind, input_pos, 1
    return out


cdef void _normal_output(PlanningState state, Py_ssize_t pos, object ty, object relative,
                         object glob, tuple strides, object base, Py_ssize_t idx) except *:
    cdef bint allowed
    cdef BlockPlan block = block_at(state.blocks, idx)
    fuse_block = field(state.trace, &_BLOCKS)[idx]
    shape = field(glob, &_SHAPE)
    mode = _ref_mode(fuse_block)
    if mode is _SAME_AS_BLOCK:
        allowed = False
    elif mode is _ONLY_CONTIGUOUS:
        allowed = is_contiguous_t(shape, strides)
    else:
        allowed = True
    # the ops to mark (none for the stream walk: ``_mark``)
    writes = None if state.walk else block.writes.get(field(relative, &_ID))
    cdef ReferenceSelection reference = block.reference
    if reference.kind == "Searching" and \
            field(fuse_block, &_SHAPE_REF) == field(relative, &_SHAPE) and \
            base is not _UNKNOWN and allowed:
        block.reference = new_reference("Concrete", new_frozen(Output, (pos, ty, base)),
                                        shape, strides, _NO_DIMS, 0)
        if writes is not None:
            _mark(state, writes, False, base, True)
    elif writes is not None and reference.kind == "Concrete" and reference.shape == shape and \
            reference.strides == strides:
        _mark(state, writes, False, _SAME_AS_REF, True)
    handle = _alloc(state.memory, shape, field(glob, &_DTYPE), strides)
    if len(shape) > state.rank:
        state.rank = len(shape)
    _register(state.memory, field(glob, &_ID), handle)
    state.outputs[pos] = _output(relative, glob, ty, handle, "owned", None)


cdef void _inplace_output(PlanningState state, Py_ssize_t pos, object ty, object relative,
                          object glob, Py_ssize_t k, Py_ssize_t idx) except *:
    cdef BlockPlan block = block_at(state.blocks, idx)
    cdef list inplaces = block.inplaces
    input_pos, _, _ = inplaces[k]
    del inplaces[k]  # list.pop(k), without the method call
    cdef HandleInput source = input_at(state.inputs, input_pos)
    # the ops to mark (none for the stream walk: ``_mark``)
    writes = None if state.walk else block.writes.get(field(relative, &_ID))
    if block.reference.kind == "Searching":
        block.reference = new_reference("Concrete", new_frozen(Output, (pos, ty, _IS_REF)),
                                        field(glob, &_SHAPE), source.strides, _NO_DIMS, 0)
        reads = None if state.walk else block.reads.get(field(source.relative, &_ID))
        if reads is not None:
            _mark(state, reads, True, _IS_REF, True)
        if writes is not None:
            _mark(state, writes, False, _IS_REF, True)
    elif writes is not None:
        _mark(state, writes, False, _SAME_AS_REF, True)
    h = source.handle
    handle = new_frozen(Handle, (field(h, &_BUFFER), field(glob, &_SHAPE), field(h, &_STRIDES),
                                 field(h, &_OFFSET), field(glob, &_DTYPE)))
    _register(state.memory, field(glob, &_ID), handle)
    state.outputs[pos] = _output(relative, glob, ty, handle, "inplace", input_pos)


cdef Py_ssize_t _child_input(PlanningState state, object original) except -1:
    cdef Py_ssize_t i
    cdef list inputs = state.inputs
    for i in range(len(inputs)):
        if input_at(inputs, i).relative.id == original:
            return i
    raise StopIteration  # refimpl's next() on an empty generator


cdef void _remove_concrete_write(BlockPlan block, object relative_id,
                                 Py_ssize_t output_pos) except *:
    ops = block.writes.get(relative_id)
    if ops is None:
        return
    block.writes[relative_id] = [
        op for op in ops if op.name == "Assign" and not (
            isinstance(op.args.out, Output) and op.args.out.pos == output_pos)]


cdef void _reshaped_output(PlanningState state, Py_ssize_t pos, object ty, object relative,
                           object glob, object original, Py_ssize_t idx) except *:
    cdef Py_ssize_t input_pos = _child_input(state, original)
    cdef HandleInput source = input_at(state.inputs, input_pos)
    action = reshape_action(source.glob.shape, source.strides, glob.shape)
    if action.kind == "Recompute":
        _normal_output(state, pos, ty, relative, glob, contiguous_strides_t(glob.shape),
                       _IS_REF, idx)
        return
    _remove_concrete_write(block_at(state.blocks, idx), relative.id, pos)
    h = source.handle
    handle = new_frozen(Handle, (h.buffer, glob.shape, action.strides, h.offset, glob.dtype))
    _register(state.memory, glob.id, handle)
    state.outputs[pos] = _output(relative, glob, ty, handle, "view", input_pos)


cdef void _swapped_output(PlanningState state, Py_ssize_t pos, object ty, object relative,
                          object glob, object original, object dims, Py_ssize_t idx) except *:
    cdef Py_ssize_t input_pos = _child_input(state, original)
    cdef HandleInput source = input_at(state.inputs, input_pos)
    _remove_concrete_write(block_at(state.blocks, idx), relative.id, pos)
    h = source.handle
    strides = list(h.strides)
    strides[dims[0]], strides[dims[1]] = strides[dims[1]], strides[dims[0]]
    handle = new_frozen(Handle, (h.buffer, glob.shape, tuple(strides), h.offset, glob.dtype))
    _register(state.memory, glob.id, handle)
    state.outputs[pos] = _output(relative, glob, ty, handle, "view", input_pos)


cdef void _layout_info_inputs(PlanningState state, BlockPlan block) except *:
    """Inputs laid out exactly like a concrete or virtual-shape reference read ``SameAsRef``
    (layout marks only: nothing for the stream walk)."""
    cdef Py_ssize_t i
    cdef HandleInput item
    cdef ReferenceSelection reference = block.reference
    if state.walk or (reference.kind != "Concrete" and reference.kind != "VirtualShape"):
        return
    reads = block.reads
    cdef list inputs = state.inputs
    for i in range(len(inputs)):
        item = input_at(inputs, i)
        if item.strides == reference.strides and \
                item.glob.shape == reference.shape and item.relative.id in reads:
            _mark(state, reads[item.relative.id], True, _SAME_AS_REF, False)


cdef void _select_reference(PlanningState state, Py_ssize_t i) except *:
    cdef BlockPlan block = block_at(state.blocks, i)
    cdef ReferenceSelection source
    cdef HandleInput item
    fuse_block = field(state.trace, &_BLOCKS)[i]
    setting = field(field(fuse_block, &_SETTINGS), &_REF_LAYOUT)
    if field(setting, &_REF_MODE) is _SAME_AS_BLOCK:
        source = block_at(state.blocks, field(setting, &_REF_BLOCK_POS)).reference
        block.reference = new_reference(source.kind, source.arg, source.shape, source.strides,
                                        source.dims, source.pos)
        return
    potential, block.potential_ref = block.potential_ref, None
    if potential is None:
        shapes = state.context.shapes
        shape = tuple([shapes[d] for d in fuse_block.shape_ref])
        block.reference = new_reference("Runtime", None, (), (), _NO_DIMS,
                                        len(state.runtime_layouts))
        state.runtime_layouts.append((shape, contiguous_strides_t(shape)))
    elif potential[0] == "Normal":
        item = input_at(state.inputs, potential[1])
        shape, strides = item.glob.shape, item.strides
        if setting.mode is _ANY:
            ok = is_dense_t(shape, strides)
        else:
            ok = is_contiguous_t(shape, strides)
        if ok:
            block.reference = new_reference(
                "Concrete", new_frozen(Input, (potential[1], item.precision, _IS_REF)), shape,
                strides, _NO_DIMS, 0)
        else:
            block.reference = new_reference(
                "VirtualShape", new_frozen(Input, (potential[1], item.precision, _UNKNOWN)),
                shape, contiguous_strides_t(shape), _NO_DIMS, 0)
        _layout_info_inputs(state, block)
    elif potential[0] == "SwapDims":
        item = input_at(state.inputs, potential[1])
        block.reference = new_reference(
            "SwapDims", new_frozen(Input, (potential[1], item.precision, _UNKNOWN)), (), (),
            potential[2], 0)
    else:
        block.reference = new_reference("Reshaped", None, (), (), _NO_DIMS, potential[1])
