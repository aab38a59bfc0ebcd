"""The vector-size pass of a launch: per-tensor vector sizes, then each block's width.

burn counterpart: ``crates/burn-cubecl-fusion/src/engine/launch/vectorization/planner.rs``
(``VectorizationPlanner::run``), ``vectorization/axis.rs`` (``VectorAxes::resolve``,
``Refusals``) and the matmul runner's ``Vectorization::axis``
(``optim/matmul/optimization.rs``); notes §6.1–§6.3, §6.8. The rules for one tensor live in
``refimpl.planner.launch.vectorization``; this module applies them to a launch in burn's order:

1. candidates from the smallest element size among inputs and outputs;
2. the vector axis of each tensor (runner overrides, then the line-up policy when a block
   iterates in a permuted order);
3. a ``Vect`` per tensor: inputs (swap-dims originals by the swapped rule), reshape views
   merged into their originals, every output; indexed inputs and NHWC outputs pinned to 1,
   refused tensors pinned to 1 unless broadcast;
4. per block, the inputs it reads and the fresh outputs it writes vote: each binding takes
   its size (or 1 above the block's cap) and the block width is the maximum, with the
   ``VectorizationSetting`` caps and defaults.
"""

from __future__ import annotations

from refimpl.planner.engine.settings import VectorizationMode
from refimpl.planner.engine.trace import NhwcStridesView, ReshapeView, SwapDimsView
from refimpl.planner.launch.launch_planners import BlockPlan, PlanningState
from refimpl.planner.launch.layout import MatrixBatchLayout, matrix_batch_layout
from refimpl.planner.launch.vectorization import (
    VECTORIZATION_MAX, AxisDecision, Vect, VectorAxisAction, axis_action, block_axis,
    merge_axis_actions, merge_multi_reads, smallest_elem_bytes, vectorization_input,
    vectorization_output, vectorization_reshape, vectorization_swapped,
)

__all__ = ["plan_vectorization"]


def _runner_axes(state: PlanningState,
                 matmul_operands: tuple[int, int] | None) -> dict[int, int]:
    """The matmul runner measures a transposed operand along ``rank - 2``."""
    axes: dict[int, int] = {}
    if matmul_operands is None:
        return axes
    for item in state.inputs:
        if item.relative.id in matmul_operands and \
                matrix_batch_layout(item.strides) is MatrixBatchLayout.MildlyPermutedTransposed:
            axes[item.glob.id] = len(item.strides) - 2
    return axes


def _record(actions: dict, tensor: int, pinned: int, decision: AxisDecision) -> None:
    if tensor in actions:
        current, first_pinned = actions[tensor]
        actions[tensor] = (merge_axis_actions(current, decision), first_pinned)
    else:
        actions[tensor] = (decision, pinned)


def _vector_axes(state: PlanningState,
                 matmul_operands: tuple[int, int] | None) -> tuple[dict[int, int], list[int]]:
    """(tensor id → axis, tensor ids refused) — burn ``VectorAxes::resolve``."""
    axes = _runner_axes(state, matmul_operands)
    block_axes = [block_axis(*(block.reference.concrete() or (None, None)))
                  for block in state.blocks]
    if all(axis is None for axis in block_axes):
        return axes, []
    actions: dict[int, tuple[AxisDecision, int]] = {}
    for block, axis in zip(state.blocks, block_axes):
        for item in state.inputs:
            if item.relative.id in block.reads:
                _record(actions, item.glob.id, item.glob.id,
                        axis_action(axis, len(item.glob.shape), None))
        for out in state.outputs:
            if out.kind == "owned" and out.relative.id in block.writes:
                strides = out.handle.strides
                stride = strides[axis] if axis is not None and axis < len(strides) else None
                _record(actions, out.glob.id, out.glob.id,
                        axis_action(axis, len(out.glob.shape), stride))
        for view in state.trace.resources.views:
            if isinstance(view, NhwcStridesView):
                continue
            view_id = view.reshaped if isinstance(view, ReshapeView) else view.swapped
            if view.original not in block.reads:
                continue
            view_glob = state.context.tensors[view_id]
            original_glob = state.context.tensors[view.original]
            _record(actions, view_glob.id, original_glob.id,
                    axis_action(axis, len(view_glob.shape), None))
    refused = []
    for tensor in sorted(actions):
        decision, pinned = actions[tensor]
        if tensor in axes:
            continue
        if decision.action is VectorAxisAction.Along:
            axes[tensor] = decision.axis
        elif decision.action is VectorAxisAction.Refuse:
            refused.append(pinned)
    return axes, refused


def _tensor_vects(state: PlanningState, sizes: tuple[int, ...], axes: dict[int, int],
                  refused: list[int]) -> dict[int, Vect]:
    """burn ``vectorization_default`` plus the planner's pins, by global id."""
    resources, tensors = state.trace.resources, state.context.tensors
    indexed = {rid for rid, _ in resources.indexed}

    def multi_reads(rid: int) -> bool:
        return sum(len(block.reads.get(rid, ())) for block in state.blocks) > 1

    swaps = [(tensors[v.swapped], tensors[v.original], multi_reads(v.original), v.dims)
             for v in resources.views if isinstance(v, SwapDimsView)]
    vects: dict[int, Vect] = {}
    for item in state.inputs:
        if item.relative.id in indexed:
            continue
        swap = next((s for s in swaps if s[1].id == item.glob.id), None)
        if swap is None:
            axis = axes.get(item.glob.id, len(item.strides) - 1)
            vects[item.glob.id] = vectorization_input(item.glob.shape, item.strides, axis, sizes)
            continue
        swapped, original, multi, dims = swap
        axis = axes.get(swapped.id, len(swapped.shape) - 1)
        vect = vectorization_swapped(item.strides, swapped.shape, original.shape, multi, dims,
                                     axis, sizes, VECTORIZATION_MAX)
        vects[original.id] = merge_multi_reads(vects.get(original.id), vect)
    for view in resources.views:
        if isinstance(view, ReshapeView):
            reshaped, original = tensors[view.reshaped], tensors[view.original]
            axis = axes.get(reshaped.id, len(reshaped.shape) - 1)
            vect = vectorization_reshape(reshaped.shape, original.shape,
                                         multi_reads(view.original), axis, sizes,
                                         VECTORIZATION_MAX)
            vects[original.id] = merge_multi_reads(vects.get(original.id), vect)
    for out in state.outputs:
        axis = axes.get(out.glob.id, len(out.glob.shape) - 1)
        vects[out.glob.id] = vectorization_output(out.glob.shape, axis, sizes, VECTORIZATION_MAX)
    for rid in sorted(indexed):
        vects[tensors[rid].id] = Vect(1)
    for view in resources.views:
        if isinstance(view, NhwcStridesView):
            vects[tensors[view.id].id] = Vect(1)
    for tensor in refused:
        if not vects.get(tensor, Vect(1)).broadcast:
            vects[tensor] = Vect(1)
    return vects


def _cap(mode: VectorizationMode, block_pos: int, previous: list[int]) -> int:
    if mode is VectorizationMode.Activated:
        return VECTORIZATION_MAX
    if mode is VectorizationMode.Deactivated:
        return 1
    return previous[block_pos]


def plan_vectorization(state: PlanningState, device: object,
                       matmul_operands: tuple[int, int] | None) -> None:
    """Set every binding's vector size and every block's width (mutates ``state``)."""
    dtypes = [item.glob.dtype for item in state.inputs] + [o.glob.dtype for o in state.outputs]
    sizes = device.vector_sizes(smallest_elem_bytes(d.storage_bytes for d in dtypes))
    axes, refused = _vector_axes(state, matmul_operands)
    vects = _tensor_vects(state, sizes, axes, refused)
    votes: list[list[tuple[str, int, Vect]]] = [[] for _ in state.blocks]
    for pos, item in enumerate(state.inputs):
        vect = vects[item.glob.id]
        for b, block in enumerate(state.blocks):
            if item.relative.id in block.reads:
                votes[b].append(("input", pos, vect))
    for pos, out in enumerate(state.outputs):
        if out.kind != "owned":
            continue
        for b, block in enumerate(state.blocks):
            if out.relative.id in block.writes:
                votes[b].append(("output", pos, Vect(vects[out.glob.id].size)))
    for rid in state.trace.resources.inputs_unhandled:
        pos = next(p for p, item in enumerate(state.inputs) if item.relative.id == rid)
        vect = vects[state.inputs[pos].glob.id]
        if not vect.broadcast:
            state.inputs[pos].vector_size = vect.size
    previous: list[int] = []
    for block, fuse_block, block_votes in zip(state.blocks, state.trace.blocks, votes):
        setting = fuse_block.settings.vectorization
        cap = _cap(setting.mode, setting.block_pos, previous)
        _apply_block(state, block, block_votes, cap)
        if setting.mode is VectorizationMode.SmallerOrEqualThanPreviousBlock and block.width == 0:
            block.width = previous[setting.block_pos]
        elif setting.mode is VectorizationMode.EqualThanPreviousBlock:
            block.width = previous[setting.block_pos]
        elif setting.mode is VectorizationMode.Deactivated:
            block.width = 1
        if block.width == 0:
            block.width = previous[-1] if previous else 1
        previous.append(block.width)


def _apply_block(state: PlanningState, block: BlockPlan,
                 block_votes: list[tuple[str, int, Vect]], cap: int) -> None:
    """burn ``apply_vectorization_block``: sizes above the cap become 1; width = maximum."""
    for side, pos, vect in block_votes:
        fits = vect.size <= cap
        size = vect.size if fits else 1
        if side == "input":
            state.inputs[pos].vector_size = size
            state.inputs[pos].broadcasted = vect.broadcast if fits else False
        else:
            state.outputs[pos].vectorization = size
        block.width = max(block.width, size)
