# cython: language_level=3
"""The vector-size pass of a launch: per-tensor vector sizes, then each block's width.

burn counterpart: ``burn-cubecl-fusion``'s ``engine/launch/vectorization/{planner,axis}.rs``.
Mirrors ``refimpl/planner/launch/launch_vectorize.py``: same names, same order, same results, on
fastplan.launch.launch_planners' working state (the ``cdef class`` twins of
``refimpl.planner.launch.launch_planners.PlanningState`` and its records).

Differs from refimpl:

* vector sizes are ``int64_t`` codes (``fastplan.launch.vectorization``: 0 is ``Broadcasted``) from
  the per-tensor cores (``vectorization_input_c`` / ``_output_c`` / ``_reshape_c`` /
  ``_swapped_c``) and become refimpl's ``Vect`` only where refimpl keeps one; the candidates
  are loaded once per launch;
* an axis that is an exact one-digit ``int`` is checked as a C integer (``_checked_axis``), and
  a launch without pinned axes takes each tensor's last axis without a dict lookup
  (``_axis_of``);
* the blocks' votes are not lists of tuples: each binding's size code is read once into a C
  array and each block applies the codes of the inputs it reads and the owned outputs it
  writes, in refimpl's order (``_apply_votes``).
"""

from cpython.mem cimport PyMem_Free, PyMem_Malloc
from libc.stdint cimport int64_t

from fastplan._keys cimport FieldRead, compact_int, field, field_read
from fastplan.launch.layout cimport (
    Dims, dims_free, dims_load, matrix_batch_layout_o, permuted_innermost_axis_t,
)
from fastplan.launch.vectorization cimport (
    VECT_BROADCASTED, vectorization_input_c, vectorization_output_c, vectorization_reshape_c,
    vectorization_swapped_c,
)

from fastplan.launch.launch_planners cimport (
    BlockPlan, HandleInput, HandleOutput, PlanningState, ReferenceSelection, block_at, input_at,
    output_at, storage_bytes,
)

from refimpl.devices import DeviceProfile
from refimpl.planner.engine.settings import VectorizationMode
from refimpl.planner.engine.trace import NhwcStridesView, ReshapeView, SwapDimsView
from refimpl.planner.launch.layout import MatrixBatchLayout
from refimpl.planner.launch.vectorization import (
    VECTORIZATION_MAX, VectorAxisAction, axis_action, merge_axis_actions,
)

__all__ = ["plan_vectorization"]

# Attribute reads of the hot paths, served from the slot of the type last read (_keys.field).
cdef FieldRead _ID = field_read("id")
cdef FieldRead _SHAPE = field_read("shape")
cdef FieldRead _DTYPE = field_read("dtype")
cdef FieldRead _RESOURCES = field_read("resources")  # FuseTrace's
cdef FieldRead _BLOCKS = field_read("blocks")
cdef FieldRead _VIEWS = field_read("views")  # its resources'
cdef FieldRead _INDEXED = field_read("indexed")
cdef FieldRead _UNHANDLED = field_read("inputs_unhandled")
cdef FieldRead _TENSORS = field_read("tensors")  # the launch context's
cdef FieldRead _SETTINGS = field_read("settings")  # a FuseBlock's
cdef FieldRead _VECTORIZATION = field_read("vectorization")
cdef FieldRead _MODE = field_read("mode")
cdef FieldRead _BLOCK_POS = field_read("block_pos")
cdef FieldRead _SIZES_BY_BYTES = field_read("vector_sizes_by_bytes")  # a DeviceProfile's
cdef object _TRANSPOSED = MatrixBatchLayout.MildlyPermutedTransposed
cdef object _ALONG = VectorAxisAction.Along
cdef object _REFUSE_ACTION = VectorAxisAction.Refuse
cdef object _ACTIVATED = VectorizationMode.Activated
cdef object _DEACTIVATED = VectorizationMode.Deactivated
cdef object _SMALLER = VectorizationMode.SmallerOrEqualThanPreviousBlock
cdef object _EQUAL = VectorizationMode.EqualThanPreviousBlock
cdef int64_t _MAX = VECTORIZATION_MAX
cdef frozenset _NO_IDS = frozenset()


cdef object _vector_sizes(object device, int64_t elem_bytes):
    """``device.vector_sizes(elem_bytes)``, read straight from a ``DeviceProfile``'s table."""
    if type(device) is DeviceProfile:
        for size, widths in field(device, &_SIZES_BY_BYTES):
            if size == elem_bytes:
                return widths
    return device.vector_sizes(elem_bytes)  # another device, or refimpl's KeyError


cdef dict _runner_axes(PlanningState state, object matmul_operands):
    """The matmul runner measures a transposed operand along ``rank - 2``."""
    cdef dict axes = {}
    cdef HandleInput item
    cdef Py_ssize_t i
    if matmul_operands is None:
        return axes
    for i in range(len(state.inputs)):
        item = input_at(state.inputs, i)
        if field(item.relative, &_ID) in matmul_operands and \
                matrix_batch_layout_o(item.strides) is _TRANSPOSED:
            axes[item.glob.id] = len(item.strides) - 2
    return axes


cdef void _record(dict actions, object tensor, object pinned, object decision) except *:
    found = actions.get(tensor)
    if found is not None:
        current, first_pinned = found
        actions[tensor] = (merge_axis_actions(current, decision), first_pinned)
    else:
        actions[tensor] = (decision, pinned)


cdef tuple _vector_axes(PlanningState state, object matmul_operands):
    """(tensor id → axis, tensor ids refused) — burn ``VectorAxes::resolve``."""
    axes = _runner_axes(state, matmul_operands)
    cdef list block_axes = []
    cdef bint any_axis = False
    cdef Py_ssize_t b, i
    cdef BlockPlan block
    cdef ReferenceSelection reference
    cdef HandleInput item
    cdef HandleOutput out
    cdef list blocks = state.blocks, inputs = state.inputs, outputs = state.outputs
    for b in range(len(blocks)):
        reference = block_at(blocks, b).reference
        if reference.kind == "Concrete":
            axis = permuted_innermost_axis_t(reference.shape, reference.strides)
        else:
            axis = None
        any_axis = any_axis or axis is not None
        block_axes.append(axis)
    if not any_axis:
        return axes, []
    cdef dict actions = {}
    tensors = field(state.context, &_TENSORS)
    for b in range(len(blocks)):
        block, axis = block_at(blocks, b), block_axes[b]
        reads, writes = block.reads, block.writes
        for i in range(len(inputs)):
            item = input_at(inputs, i)
            if item.relative.id in reads:
                _record(actions, item.glob.id, item.glob.id,
                        axis_action(axis, len(item.glob.shape), None))
        for i in range(len(outputs)):
            out = output_at(outputs, i)
            if out.kind == "owned" and out.relative.id in writes:
                strides = out.handle.strides
                stride = strides[axis] if axis is not None and axis < len(strides) else None
                _record(actions, out.glob.id, out.glob.id,
                        axis_action(axis, len(out.glob.shape), stride))
        for view in field(field(state.trace, &_RESOURCES), &_VIEWS):
            t = type(view)
            if t is NhwcStridesView:
                continue
            view_id = view.reshaped if t is ReshapeView else view.swapped
            if view.original not in reads:
                continue
            view_glob = tensors[view_id]
            original_glob = tensors[view.original]
            _record(actions, view_glob.id, original_glob.id,
                    axis_action(axis, len(view_glob.shape), None))
    cdef list refused = []
    for tensor in sorted(actions):
        decision, pinned = actions[tensor]
        if tensor in axes:
            continue
        if decision.action is _ALONG:
            axes[tensor] = decision.axis
        elif decision.action is _REFUSE_ACTION:
            refused.append(pinned)
    return axes, refused


cdef inline int64_t _merge(object existing, int64_t new):
    # merge_multi_reads on codes (None: no entry yet)
    cdef int64_t old
    if existing is None:
        return new
    old = existing
    if old == VECT_BROADCASTED:
        return old
    if new == VECT_BROADCASTED or new != old:
        return 1
    return old


cdef bint _multi_reads(list blocks, object rid) except -1:
    cdef Py_ssize_t total = 0, b
    for b in range(len(blocks)):
        found = block_at(blocks, b).reads.get(rid)
        if found is not None:
            total += len(found)
    return total > 1


cdef Py_ssize_t _checked_axis(object axis, Py_ssize_t rank) except -1:
    # refimpl indexes with a Python int: an axis outside [0, rank) is refimpl's IndexError (or
    # a negative index, which no launch produces: axes are ranks - 1 or - 2, or block axes)
    cdef long long value
    if type(axis) is int and compact_int(axis, &value):  # read in place, no comparison call
        return _checked_index(value, rank)
    if axis < 0 or axis >= rank:
        raise IndexError("tuple index out of range")
    return axis


cdef inline Py_ssize_t _checked_index(Py_ssize_t axis, Py_ssize_t rank) except -1:
    """``_checked_axis`` for an axis held as a C integer."""
    if axis < 0 or axis >= rank:
        raise IndexError("tuple index out of range")
    return axis


cdef inline Py_ssize_t _axis_of(dict axes, object tensor, Py_ssize_t rank) except -1:
    """``_checked_axis(axes.get(tensor, rank - 1), rank)``, without the lookup or the default
    made an int object where ``axes`` is empty (most launches)."""
    if not axes:
        return _checked_index(rank - 1, rank)
    return _checked_axis(axes.get(tensor, rank - 1), rank)


cdef dict _tensor_vects(PlanningState state, Dims* sizes, dict axes, list refused):
    """burn ``vectorization_default`` plus the planner's pins, by global id (codes)."""
    cdef Dims shape, strides
    cdef Py_ssize_t axis, dim_index, i
    cdef int64_t code
    cdef HandleInput item
    cdef HandleOutput out
    resources = field(state.trace, &_RESOURCES)
    tensors = field(state.context, &_TENSORS)
    blocks = state.blocks
    pairs = field(resources, &_INDEXED)
    # no set made for a trace without indexed inputs (most): the empty frozenset answers alike
    indexed = {rid for rid, _ in pairs} if type(pairs) is not tuple or pairs else _NO_IDS
    cdef list swaps = [(tensors[v.swapped], tensors[v.original], v.original, v.dims)
                       for v in field(resources, &_VIEWS) if type(v) is SwapDimsView]
    cdef dict vects = {}
    cdef list inputs = state.inputs, outputs = state.outputs
    for i in range(len(inputs)):
        item = input_at(inputs, i)
        if indexed is not _NO_IDS and field(item.relative, &_ID) in indexed:
            continue
        gid = field(item.glob, &_ID)
        swap = None
        for s in swaps:
            if field(s[1], &_ID) == gid:
                swap = s
                break
        if swap is None:
            dims_load(&shape, field(item.glob, &_SHAPE))
            try:
                dims_load(&strides, item.strides)
                try:
                    axis = _axis_of(axes, gid, strides.n)
                    _checked_index(axis, shape.n)
                    code = vectorization_input_c(shape.v, strides.v, strides.n, axis, sizes.v,
                                                 sizes.n)
                finally:
                    dims_free(&strides)
            finally:
                dims_free(&shape)
            vects[gid] = code
            continue
        swapped, original, original_rid, dims = swap
        multi = _multi_reads(blocks, original_rid)
        axis = _axis_of(axes, swapped.id, len(swapped.shape))
        _checked_index(axis, len(original.shape))
        dim_index = dims[1] if axis == dims[0] else dims[0] if axis == dims[1] else axis
        dims_load(&strides, item.strides)
        try:
            _checked_index(dim_index, strides.n)
            _checked_index(axis, strides.n)
            code = vectorization_swapped_c(strides.v, strides.n, swapped.shape[axis],
                                           original.shape[axis], dim_index, multi, axis,
                                           sizes.v, sizes.n, _MAX)
        finally:
            dims_free(&strides)
        vects[original.id] = _merge(vects.get(original.id), code)
    for view in field(resources, &_VIEWS):
        if type(view) is ReshapeView:
            reshaped, original = tensors[view.reshaped], tensors[view.original]
            rank = len(reshaped.shape)
            axis = _axis_of(axes, reshaped.id, rank)
            multi = _multi_reads(blocks, view.original)
            if not multi and reshaped.shape[axis] == 1:
                code = VECT_BROADCASTED
            elif axis != rank - 1:
                code = 1
            else:
                _checked_index(0, len(original.shape))  # refimpl reads original[-1]
                code = vectorization_reshape_c(reshaped.shape[axis],
                                               original.shape[len(original.shape) - 1], True,
                                               multi, sizes.v, sizes.n, _MAX)
            vects[original.id] = _merge(vects.get(original.id), code)
    for i in range(len(outputs)):
        out = output_at(outputs, i)
        oshape, oid = field(out.glob, &_SHAPE), field(out.glob, &_ID)
        axis = _axis_of(axes, oid, len(oshape))
        vects[oid] = vectorization_output_c(oshape[axis], sizes.v, sizes.n, _MAX)
    if indexed:
        for rid in sorted(indexed):
            vects[tensors[rid].id] = 1
    for view in field(resources, &_VIEWS):
        if type(view) is NhwcStridesView:
            vects[tensors[view.id].id] = 1
    for tensor in refused:
        if vects.get(tensor, 1) != VECT_BROADCASTED:
            vects[tensor] = 1
    return vects


cdef int64_t _cap(object mode, object block_pos, list previous) except -1:
    if mode is _ACTIVATED:
        return _MAX
    if mode is _DEACTIVATED:
        return 1
    return previous[block_pos]


def plan_vectorization(PlanningState state, device, matmul_operands):
    """Set every binding's vector size and every block's width (mutates ``state``).

    Mirrors refimpl.planner.launch.launch_vectorize.plan_vectorization.
    """
    plan_vectorization_c(state, device, matmul_operands)


cdef int plan_vectorization_c(PlanningState state, object device,
                              object matmul_operands) except -1:
    """``plan_vectorization`` as a C call (``fastplan.launch.launch`` chains the passes without
    Python's calling convention)."""
    cdef Dims sizes
    cdef Py_ssize_t pos, i
    cdef int64_t code, size, smallest = 8
    cdef HandleInput item
    cdef HandleOutput out
    cdef list inputs = state.inputs, outputs = state.outputs
    for i in range(len(inputs)):
        item = input_at(inputs, i)
        size = storage_bytes(field(item.glob, &_DTYPE))
        if size < smallest:
            smallest = size
    for i in range(len(outputs)):
        out = output_at(outputs, i)
        size = storage_bytes(field(out.glob, &_DTYPE))
        if size < smallest:
            smallest = size
    candidates = _vector_sizes(device, smallest)
    dims_load(&sizes, candidates)
    try:
        for pos in range(sizes.n):
            if sizes.v[pos] <= 0:
                raise ZeroDivisionError("integer modulo by zero")
        axes, refused = _vector_axes(state, matmul_operands)
        vects = _tensor_vects(state, &sizes, axes, refused)
    finally:
        dims_free(&sizes)
    # each binding's size code (an output not owned: _NO_VOTE), read once as refimpl's votes
    # read them; each block's votes are its reads' inputs then its writes' owned outputs, in
    # position order (``_apply_votes``)
    cdef Py_ssize_t n_in = len(inputs), n_out = len(outputs)
    cdef int64_t inline_codes[_CODES_INLINE]
    cdef int64_t* codes = inline_codes
    if n_in + n_out > _CODES_INLINE:
        codes = <int64_t*>PyMem_Malloc((n_in + n_out) * sizeof(int64_t))
        if codes == NULL:
            raise MemoryError()
    try:
        for pos in range(n_in):
            codes[pos] = vects[field(input_at(inputs, pos).glob, &_ID)]
        for pos in range(n_out):
            out = output_at(outputs, pos)
            code = _NO_VOTE
            if out.kind == "owned":
                code = vects[field(out.glob, &_ID)]
                if code == VECT_BROADCASTED:  # Vect(vect.size): the broadcast flag is dropped
                    code = 1
            codes[n_in + pos] = code
        for rid in field(field(state.trace, &_RESOURCES), &_UNHANDLED):
            for pos in range(len(inputs)):
                if field(input_at(inputs, pos).relative, &_ID) == rid:
                    break
            else:
                raise StopIteration  # refimpl's next() on an empty generator
            item = input_at(inputs, pos)
            code = vects[field(item.glob, &_ID)]
            if code != VECT_BROADCASTED:
                item.vector_size = code
        _apply_votes(state, codes, n_in, n_out)
    finally:
        if codes != inline_codes:
            PyMem_Free(codes)
    return 0


cdef enum:
    _CODES_INLINE = 32  # bindings whose codes a launch keeps on the stack
cdef int64_t _NO_VOTE = -1  # an output that is not owned casts no vote


cdef int _apply_votes(PlanningState state, const int64_t* codes, Py_ssize_t n_in,
                      Py_ssize_t n_out) except -1:
    """burn ``apply_vectorization_block`` per block, in order: each vote's size above the
    block's cap becomes 1, the block's width is the largest (then its mode's rule); the votes
    (``codes``: the inputs' then the outputs' size codes) of the inputs the block reads and
    the owned outputs it writes, in position order."""
    cdef Py_ssize_t pos, b, nblocks
    cdef int64_t code, size, cap
    cdef bint fits
    cdef HandleInput item
    cdef HandleOutput out
    cdef BlockPlan block
    cdef list blocks = state.blocks, inputs = state.inputs, outputs = state.outputs
    cdef list previous = []
    nblocks = len(blocks)
    fuse_blocks = field(state.trace, &_BLOCKS)
    for b in range(min(nblocks, len(fuse_blocks))):
        block = block_at(blocks, b)
        setting = field(field(fuse_blocks[b], &_SETTINGS), &_VECTORIZATION)
        mode = field(setting, &_MODE)
        cap = _cap(mode, field(setting, &_BLOCK_POS), previous)
        reads, writes = block.reads, block.writes
        for pos in range(n_in + n_out):
            code = codes[pos]
            if pos < n_in:
                item = input_at(inputs, pos)
                if field(item.relative, &_ID) not in reads:
                    continue
            else:
                if code == _NO_VOTE:
                    continue
                out = output_at(outputs, pos - n_in)
                if field(out.relative, &_ID) not in writes:
                    continue
            size = 1 if code == VECT_BROADCASTED else code
            fits = size <= cap
            if not fits:
                size = 1
            if pos < n_in:
                item.vector_size = size
                item.broadcasted = code == VECT_BROADCASTED if fits else False
            else:
                out.vectorization = size
            if size > block.width:
                block.width = size
        if mode is _SMALLER and block.width == 0:
            block.width = previous[field(setting, &_BLOCK_POS)]
        elif mode is _EQUAL:
            block.width = previous[field(setting, &_BLOCK_POS)]
        elif mode is _DEACTIVATED:
            block.width = 1
        if block.width == 0:
            block.width = previous[len(previous) - 1] if previous else 1
        previous.append(block.width)
    return 0
