"""Input and output planning of a launch: handles, in-place candidates, output layouts, the
reference layout of every block.

burn counterpart: ``crates/burn-cubecl-fusion/src/engine/launch/input.rs`` (``InputPlanner``:
fetch handles — a ``ReadWrite`` fetch takes the tensor out of the context — find in-place and
reference candidates) and ``launch/output.rs`` (``OutputPlanner``: outputs by descending
relative shape, in place / fresh / metadata views, ``chosen_strides`` and
``preferred_dim_order``, ``may_permute_layout``, reference selection, ``SameAsRef`` hints);
``launch/plan.rs`` for the working state (``LaunchPlan``, ``BlockPlan``,
``ReferenceSelection``). Notes §6.4–§6.7. Driven by
``refimpl.planner.launch.launch.plan_launch``.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from refimpl.ir import TensorIr, TensorStatus
from refimpl.planner.engine.settings import RefLayoutMode
from refimpl.planner.engine.trace import (
    FuseArg, FuseOp, FuseTrace, FuseType, Input, LayoutInfo, NhwcStridesView, Output,
    ReshapeView, SwapDimsView, UnaryFuseArgs,
)
from refimpl.planner.launch.handles import Handle, Memory
from refimpl.planner.launch.layout import (
    contiguous_strides, dim_order, is_contiguous, is_contiguous_order, is_dense,
    relayout_strides, reshape_action, strides_for, unsqueezed,
)

__all__ = ["PlanningState", "BlockPlan", "ReferenceSelection", "plan_inputs", "plan_outputs",
           "may_permute_layout"]


# --- working state (burn LaunchPlan / BlockPlan / handles) --------------------------------------


@dataclass
class HandleInput:
    """burn ``HandleInput``: an input's handle as the launch fetched it."""

    relative: TensorIr
    glob: TensorIr  # shape unsqueezed to the plan rank
    precision: FuseType
    handle: Handle
    strides: tuple[int, ...]  # unsqueezed
    vector_size: int = 1
    broadcasted: bool = False


@dataclass
class HandleOutput:
    """burn ``HandleOutput``: an output's handle as the launch placed it."""

    relative: TensorIr
    glob: TensorIr
    precision: FuseType
    handle: Handle
    kind: str
    input_pos: int | None = None
    vectorization: int = 1


@dataclass
class ReferenceSelection:
    """burn ``ReferenceSelection``; ``kind`` names the variant."""

    kind: str = "Searching"
    arg: FuseArg | None = None
    shape: tuple[int, ...] = ()
    strides: tuple[int, ...] = ()
    dims: tuple[int, int] = (0, 0)
    pos: int = 0

    def found(self) -> bool:
        return self.kind != "Searching"

    def concrete(self) -> tuple[tuple[int, ...], tuple[int, ...]] | None:
        return (self.shape, self.strides) if self.kind == "Concrete" else None


@dataclass
class BlockPlan:
    """burn ``BlockPlan``: one block's reads and writes, reference layout and width."""

    reads: dict[int, list[FuseOp]]
    writes: dict[int, list[FuseOp]]
    reference: ReferenceSelection = field(default_factory=ReferenceSelection)
    width: int = 0
    inplaces: list[tuple[int, TensorIr, tuple[int, ...]]] = field(default_factory=list)
    potential_ref: tuple | None = None  # ("Normal", pos) | ("SwapDims", pos, dims) | ...


@dataclass
class PlanningState:
    """burn ``LaunchPlan`` while it is planned: the trace, its context and memory, the blocks."""

    trace: FuseTrace
    context: object  # refimpl.planner.launch.launch.FusedContext
    memory: Memory
    rank: int
    blocks: list[BlockPlan]
    inputs: list[HandleInput] = field(default_factory=list)
    outputs: list[HandleOutput | None] = field(default_factory=list)
    runtime_layouts: list[tuple[tuple[int, ...], tuple[int, ...]]] = field(default_factory=list)
    vectorizations: dict = field(default_factory=dict)


def _with_layout(arg: FuseArg, layout: LayoutInfo) -> FuseArg:
    """burn ``FuseArg::add_layout_info``: only plain inputs and outputs carry one."""
    return replace(arg, layout=layout) if isinstance(arg, (Input, Output)) else arg


def _mark(ops: list[FuseOp], side: str, layout: LayoutInfo, first_only: bool) -> None:
    """Set ``layout`` on the input (``side="input"``) or output of the ``Assign`` ops."""
    for i, op in enumerate(ops):
        if op.name != "Assign":
            continue
        args = op.args
        if side == "input":
            args = UnaryFuseArgs(_with_layout(args.input, layout), args.out)
        else:
            args = UnaryFuseArgs(args.input, _with_layout(args.out, layout))
        ops[i] = FuseOp("Assign", args)
        if first_only:
            return


# --- InputPlanner ------------------------------------------------------------------------------


def plan_inputs(state: PlanningState) -> None:
    """burn ``InputPlanner::run``: fetch every input's handle, find in-place and reference
    candidates (mutates ``state``)."""
    resources = state.trace.resources
    fetched: list[Handle] = []
    for pos, entry in enumerate(resources.inputs):
        relative = entry.tensor
        glob = state.context.tensors[relative.id]
        handle = state.memory.take(glob.id, relative.status)
        can_mut = state.memory.users(handle.buffer) == 0 and \
            all(other.buffer != handle.buffer for other in fetched)
        fetched.append(handle)
        if relative.id not in resources.inputs_unhandled:
            _analyze(state, pos, relative, handle, can_mut)
        shape, strides = unsqueezed(glob.shape, handle.strides, state.rank)
        state.inputs.append(HandleInput(relative, replace(glob, shape=shape), entry.ty, handle,
                                   strides))


def _analyze(state: PlanningState, pos: int, relative: TensorIr, handle: Handle,
             can_mut: bool) -> None:
    is_a_view = False
    for view in state.trace.resources.views:
        for block, fuse_block in zip(state.blocks, state.trace.blocks):
            if not is_a_view:
                is_a_view = _analyze_view(pos, relative, fuse_block.shape_ref, block, view)
    if not is_a_view:
        _analyze_normal(state, pos, relative, handle, can_mut)


def _analyze_view(pos: int, relative: TensorIr, shape_ref: tuple[int, ...], block: BlockPlan,
                  view: object) -> bool:
    if isinstance(view, ReshapeView):
        if relative.id in (view.original, view.reshaped):
            if block.potential_ref is None and view.shape_relative == shape_ref:
                block.potential_ref = ("Reshaped", view.reshape_pos)
            return True
    elif isinstance(view, SwapDimsView):
        if view.swapped == relative.id:
            return True
        if view.original == relative.id:
            shape = list(relative.shape)
            a, b = view.dims
            shape[a], shape[b] = shape[b], shape[a]
            if block.potential_ref is None and tuple(shape) == shape_ref:
                block.potential_ref = ("SwapDims", pos, view.dims)
            return True
    return False


def _analyze_normal(state: PlanningState, pos: int, relative: TensorIr, handle: Handle,
                    can_mut: bool) -> None:
    readers = [i for i, block in enumerate(state.blocks) if relative.id in block.reads]
    if len(readers) != 1:
        return
    idx = readers[0]
    fuse_block = state.trace.blocks[idx]
    if fuse_block.shape_ref != relative.shape:
        return
    block = state.blocks[idx]
    if relative.status is TensorStatus.ReadWrite and fuse_block.settings.inplace and can_mut:
        block.inplaces.append((pos, relative, handle.strides))
    block.potential_ref = ("Normal", pos)


# --- OutputPlanner -----------------------------------------------------------------------------


def may_permute_layout(settings: object, ops: tuple[FuseOp, ...]) -> bool:
    """burn ``may_permute_layout``: a free reference, an opted-in runner, no indexing op."""
    if settings.ref_layout.mode is not RefLayoutMode.Any or not settings.choose_output_layout:
        return False
    return not any(op.name in ("Gather", "Select", "Cat") for op in ops)


def _view_of(state: PlanningState, relative_id: int) -> object | None:
    for view in state.trace.resources.views:
        target = {ReshapeView: "reshaped", SwapDimsView: "swapped", NhwcStridesView: "id"}
        if getattr(view, target[type(view)]) == relative_id:
            return view
    return None


def _inplace_candidate(state: PlanningState, idx: int, glob: TensorIr, relative: TensorIr) -> int | None:
    block, fuse_block = state.blocks[idx], state.trace.blocks[idx]
    permute = may_permute_layout(fuse_block.settings, fuse_block.ops)
    for k, (_, candidate, strides) in enumerate(block.inplaces):
        if candidate.dtype != glob.dtype or candidate.shape != relative.shape:
            continue
        if dim_order(glob.shape, strides) is None:
            continue
        if block.reference.found():
            ok = block.reference.kind == "Concrete" and block.reference.strides == strides
        elif permute:
            ok = True
        else:
            ok = fuse_block.settings.ref_layout.mode is not RefLayoutMode.SameAsBlock and \
                is_contiguous(glob.shape, strides)
        if ok:
            return k
    return None


def plan_outputs(state: PlanningState) -> None:
    """burn ``OutputPlanner::run``: place every output (fresh, in place or a view), then pick
    each block's reference layout (mutates ``state``)."""
    resources = state.trace.resources
    state.outputs = [None] * len(resources.outputs)
    order = sorted(range(len(resources.outputs)),
                   key=lambda pos: -sum(resources.outputs[pos].tensor.shape))
    for pos in order:
        entry = resources.outputs[pos]
        relative, glob = entry.tensor, state.context.tensors[entry.tensor.id]
        idx = next(i for i, block in enumerate(state.blocks) if relative.id in block.writes)
        view = _view_of(state, relative.id)
        if isinstance(view, ReshapeView):
            _reshaped_output(state, pos, entry.ty, relative, glob, view.original, idx)
        elif isinstance(view, SwapDimsView):
            _swapped_output(state, pos, entry.ty, relative, glob, view.original, view.dims, idx)
        elif isinstance(view, NhwcStridesView):
            strides, changed = relayout_strides(contiguous_strides(glob.shape), glob.shape,
                                                view.stride_relayout)
            base = LayoutInfo.Unknown if changed else LayoutInfo.IsRef
            _normal_output(state, pos, entry.ty, relative, glob, strides, base, idx)
        else:
            k = _inplace_candidate(state, idx, glob, relative)
            if k is None:
                strides = _chosen_strides(state, idx, glob.shape, relative.shape)
                _normal_output(state, pos, entry.ty, relative, glob, strides,
                               LayoutInfo.IsRef, idx)
            else:
                _inplace_output(state, pos, entry.ty, relative, glob, k, idx)
    for i, block in enumerate(state.blocks):
        if not block.reference.found():
            _select_reference(state, i)
        else:
            _layout_info_inputs(state, block)
    for rid in resources.dropped:
        tensor = state.context.tensors.get(rid)
        if tensor is not None:
            state.memory.remove(tensor.id)


def _chosen_strides(state: PlanningState, idx: int, shape: tuple[int, ...],
                    relative_shape: tuple[int, ...]) -> tuple[int, ...]:
    concrete = state.blocks[idx].reference.concrete()
    if concrete is not None and len(concrete[0]) == len(shape):
        order = dim_order(*concrete)
        if order is not None:
            return strides_for(shape, order)
    if state.trace.blocks[idx].shape_ref != relative_shape:
        return contiguous_strides(shape)
    order = _preferred_dim_order(state, idx, shape)
    return contiguous_strides(shape) if order is None else strides_for(shape, order)


def _preferred_dim_order(state: PlanningState, idx: int, shape: tuple[int, ...]):
    fuse_block, block = state.trace.blocks[idx], state.blocks[idx]
    if not may_permute_layout(fuse_block.settings, fuse_block.ops):
        return None
    resources = state.trace.resources
    indexed = {rid for rid, _ in resources.indexed}
    votes: list[list] = []
    for item in state.inputs:
        rid = item.relative.id
        if rid not in block.reads or rid in indexed or rid in resources.inputs_unhandled:
            continue
        if item.glob.shape != shape:
            continue
        order = dim_order(shape, item.strides)
        if order is None:
            continue
        numel = 1
        for d in shape:
            numel *= d
        weight = numel * item.glob.dtype.storage_bytes
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
        if (vote[1], is_contiguous_order(vote[0])) >= (best[1], is_contiguous_order(best[0])):
            best = vote
    return None if is_contiguous_order(best[0]) else best[0]


def _normal_output(state: PlanningState, pos: int, ty: FuseType, relative: TensorIr, glob: TensorIr,
                   strides: tuple[int, ...], base: LayoutInfo, idx: int) -> None:
    block, fuse_block = state.blocks[idx], state.trace.blocks[idx]
    mode = fuse_block.settings.ref_layout.mode
    allowed = {RefLayoutMode.SameAsBlock: False,
               RefLayoutMode.OnlyContiguous: is_contiguous(glob.shape, strides)}.get(mode, True)
    writes = block.writes.get(relative.id)
    if not block.reference.found() and fuse_block.shape_ref == relative.shape and \
            base is not LayoutInfo.Unknown and allowed:
        block.reference = ReferenceSelection("Concrete", Output(pos, ty, base), glob.shape, strides)
        if writes is not None:
            _mark(writes, "output", base, True)
    elif block.reference.concrete() == (glob.shape, strides) and writes is not None:
        _mark(writes, "output", LayoutInfo.SameAsRef, True)
    handle = state.memory.alloc(glob.shape, glob.dtype, strides)
    state.rank = max(state.rank, len(glob.shape))
    state.memory.register(glob.id, handle)
    state.outputs[pos] = HandleOutput(relative, glob, ty, handle, "owned")


def _inplace_output(state: PlanningState, pos: int, ty: FuseType, relative: TensorIr, glob: TensorIr,
                    k: int, idx: int) -> None:
    block = state.blocks[idx]
    input_pos, _, _ = block.inplaces.pop(k)
    source = state.inputs[input_pos]
    writes = block.writes.get(relative.id)
    if not block.reference.found():
        block.reference = ReferenceSelection("Concrete", Output(pos, ty, LayoutInfo.IsRef), glob.shape,
                                     source.strides)
        reads = block.reads.get(source.relative.id)
        if reads is not None:
            _mark(reads, "input", LayoutInfo.IsRef, True)
        if writes is not None:
            _mark(writes, "output", LayoutInfo.IsRef, True)
    elif writes is not None:
        _mark(writes, "output", LayoutInfo.SameAsRef, True)
    handle = replace(source.handle, shape=glob.shape, dtype=glob.dtype)
    state.memory.register(glob.id, handle)
    state.outputs[pos] = HandleOutput(relative, glob, ty, handle, "inplace", input_pos)


def _child_input(state: PlanningState, original: int) -> int:
    return next(i for i, item in enumerate(state.inputs) if item.relative.id == original)


def _remove_concrete_write(block: BlockPlan, relative_id: int, output_pos: int) -> None:
    ops = block.writes.get(relative_id)
    if ops is None:
        return
    block.writes[relative_id] = [
        op for op in ops if op.name == "Assign" and not (
            isinstance(op.args.out, Output) and op.args.out.pos == output_pos)]


def _reshaped_output(state: PlanningState, pos: int, ty: FuseType, relative: TensorIr,
                     glob: TensorIr, original: int, idx: int) -> None:
    input_pos = _child_input(state, original)
    source = state.inputs[input_pos]
    action = reshape_action(source.glob.shape, source.strides, glob.shape)
    if action.kind == "Recompute":
        _normal_output(state, pos, ty, relative, glob, contiguous_strides(glob.shape),
                       LayoutInfo.IsRef, idx)
        return
    _remove_concrete_write(state.blocks[idx], relative.id, pos)
    handle = replace(source.handle, shape=glob.shape, strides=action.strides, dtype=glob.dtype)
    state.memory.register(glob.id, handle)
    state.outputs[pos] = HandleOutput(relative, glob, ty, handle, "view", input_pos)


def _swapped_output(state: PlanningState, pos: int, ty: FuseType, relative: TensorIr, glob: TensorIr,
                    original: int, dims: tuple[int, int], idx: int) -> None:
    input_pos = _child_input(state, original)
    source = state.inputs[input_pos]
    _remove_concrete_write(state.blocks[idx], relative.id, pos)
    strides = list(source.handle.strides)
    strides[dims[0]], strides[dims[1]] = strides[dims[1]], strides[dims[0]]
    handle = replace(source.handle, shape=glob.shape, strides=tuple(strides), dtype=glob.dtype)
    state.memory.register(glob.id, handle)
    state.outputs[pos] = HandleOutput(relative, glob, ty, handle, "view", input_pos)


def _layout_info_inputs(state: PlanningState, block: BlockPlan) -> None:
    """Inputs laid out exactly like a concrete or virtual-shape reference read ``SameAsRef``."""
    if block.reference.kind not in ("Concrete", "VirtualShape"):
        return
    for item in state.inputs:
        if item.strides == block.reference.strides and \
                item.glob.shape == block.reference.shape and item.relative.id in block.reads:
            _mark(block.reads[item.relative.id], "input", LayoutInfo.SameAsRef, False)


def _select_reference(state: PlanningState, i: int) -> None:
    block, fuse_block = state.blocks[i], state.trace.blocks[i]
    setting = fuse_block.settings.ref_layout
    if setting.mode is RefLayoutMode.SameAsBlock:
        source = state.blocks[setting.block_pos].reference
        block.reference = replace(source)
        return
    potential, block.potential_ref = block.potential_ref, None
    if potential is None:
        shape = tuple(state.context.shapes[d] for d in fuse_block.shape_ref)
        block.reference = ReferenceSelection("Runtime", pos=len(state.runtime_layouts))
        state.runtime_layouts.append((shape, contiguous_strides(shape)))
    elif potential[0] == "Normal":
        item = state.inputs[potential[1]]
        shape, strides = item.glob.shape, item.strides
        check = is_dense if setting.mode is RefLayoutMode.Any else is_contiguous
        if check(shape, strides):
            block.reference = ReferenceSelection(
                "Concrete", Input(potential[1], item.precision, LayoutInfo.IsRef), shape, strides)
        else:
            block.reference = ReferenceSelection(
                "VirtualShape", Input(potential[1], item.precision, LayoutInfo.Unknown), shape,
                contiguous_strides(shape))
        _layout_info_inputs(state, block)
    elif potential[0] == "SwapDims":
        item = state.inputs[potential[1]]
        block.reference = ReferenceSelection(
            "SwapDims", Input(potential[1], item.precision, LayoutInfo.Unknown),
            dims=potential[2])
    else:
        block.reference = ReferenceSelection("Reshaped", pos=potential[1])


