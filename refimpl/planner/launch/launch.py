"""Launch planning for one fused step: what a kernel generator needs, in global terms.

burn counterpart: ``crates/burn-cubecl-fusion/src/engine/launch/{base,plan,input,output,
executor}.rs`` (``FuseTraceLauncher``, ``LaunchPlan``, ``InputPlanner``, ``OutputPlanner``,
``LaunchPlanExecutor``) and ``engine/codegen/ir.rs`` (``FuseBlockConfig``, ``RefLayout``,
``VirtualLayout``); the input/output passes are ``refimpl.planner.launch.launch_planners``, the
vector-size pass ``refimpl.planner.launch.launch_vectorize``. Notes §6–§7.

``plan_launch(trace, context, memory, device)`` runs burn's four passes on a ``FuseTrace``
(relative ids) with the real handles of ``memory`` (``refimpl.planner.launch.handles``), which it
changes as burn changes its ``Context``: ``ReadWrite`` inputs are taken out, outputs are registered
(fresh, written in place into an input, or metadata views of an input), dropped tensors are
released. It returns a ``Launch``: the frozen ``LaunchPlan`` — one ``FuseBlockConfig`` per
block, the bindings with their vector sizes, the in-place ``aliases`` (output id → input id) —
and the handles the kernel reads and writes.

A ``FuseBlockConfig`` holds no ids and no sizes: its op list (reads by ascending relative id,
the block's ops, writes by ascending id, ``LayoutInfo`` filled), width, reference layout and
vector axis. ``config_id`` hashes it: the seed's ``(a*b+c).exp()`` on ``[4, 6]`` and on
``[2, 2]`` give the same id (the same kernel; shapes and strides are run-time values).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Mapping, Union

from refimpl.dtypes import DType
from refimpl.ir import FieldKind, OperationIr, Scalar, ScalarOpIr, TensorIr
from refimpl.ops import OpKind
from refimpl.planner.engine.trace import FuseArg, FuseOp, FuseTrace, FuseType, ReshapeView
from refimpl.planner.launch.handles import Handle, Memory
from refimpl.planner.launch.launch_planners import (
    BlockPlan, PlanningState, ReferenceSelection, plan_inputs, plan_outputs,
)
from refimpl.planner.launch.layout import permuted_innermost_axis

__all__ = [
    "ConcreteLayout", "ReshapedLayout", "SwapDimsLayout", "ShapeLayout", "RuntimeLayout",
    "RefLayout", "FuseBlockConfig", "config_id", "LaunchInput", "LaunchOutput", "LaunchPlan",
    "Launch", "LaunchError", "FusedContext", "context_of", "plan_launch",
]


# --- the kernel config (burn codegen/ir.rs) ---------------------------------------------------


@dataclass(frozen=True, slots=True)
class ConcreteLayout:
    """``RefLayout::Concrete``: the reference is a bound tensor (``arg`` is its Input/Output)."""

    arg: FuseArg


@dataclass(frozen=True, slots=True)
class ReshapedLayout:
    """``VirtualLayout::Reshaped``: a fused reshape's shape, contiguous strides."""

    reshape_pos: int
    vector_size: int


@dataclass(frozen=True, slots=True)
class SwapDimsLayout:
    """``VirtualLayout::SwapDims``: an input's shape with two dims swapped, contiguous."""

    arg: FuseArg
    dims: tuple[int, int]


@dataclass(frozen=True, slots=True)
class ShapeLayout:
    """``VirtualLayout::Shape``: an input's shape with contiguous strides."""

    arg: FuseArg
    vector_size: int


@dataclass(frozen=True, slots=True)
class RuntimeLayout:
    """``VirtualLayout::Runtime``: shape and strides passed by the host (``pos``-th pair)."""

    pos: int


RefLayout = Union[ConcreteLayout, ReshapedLayout, SwapDimsLayout, ShapeLayout, RuntimeLayout]


@dataclass(frozen=True, slots=True)
class FuseBlockConfig:
    """burn ``FuseBlockConfig``: everything a block's kernel is specialised on."""

    rank: int
    ref_layout: RefLayout
    ops: tuple[FuseOp, ...]
    width: int
    vector_axis: int

    def view_replicated(self, broadcasted: bool) -> bool:
        """Whether a view read (``InputSwapDims``/``InputReshaped``, ``broadcasted`` when its
        last dim is size 1) replicates its first lane. burn replicates on the flag alone, which
        holds while the lanes run along the last dim; along another vector axis the view can
        vary across lanes, so fuselab reads it lane by lane there."""
        return broadcasted and self.vector_axis == self.rank - 1


def config_id(config: FuseBlockConfig) -> str:
    """A stable kernel-cache key: sha256 of the config's repr, first 16 hex digits."""
    return hashlib.sha256(repr(config).encode("utf-8")).hexdigest()[:16]


# --- the launch plan ----------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class LaunchInput:
    """One input binding: the global tensor, unsqueezed to the plan rank."""

    tensor: int
    precision: FuseType
    shape: tuple[int, ...]
    strides: tuple[int, ...]
    vector_size: int
    broadcasted: bool


@dataclass(frozen=True, slots=True)
class LaunchOutput:
    """One output binding. ``kind``: ``"owned"`` (fresh buffer), ``"inplace"`` (written into
    input ``input_pos``'s buffer) or ``"view"`` (metadata alias of input ``input_pos``, never
    written). An aliased output is declared with its input's vector size."""

    tensor: int
    precision: FuseType
    shape: tuple[int, ...]
    strides: tuple[int, ...]
    vector_size: int
    kind: str
    input_pos: int | None = None


@dataclass(frozen=True, slots=True)
class LaunchPlan:
    """The launch of one trace, in global terms (real ids, shapes, strides)."""

    rank: int
    configs: tuple[FuseBlockConfig, ...]
    inputs: tuple[LaunchInput, ...]
    outputs: tuple[LaunchOutput, ...]
    aliases: tuple[tuple[int, int], ...]  # (output id, input id), in-place writes only
    views: tuple[tuple[int, int], ...]  # (output id, original id), metadata-only outputs
    vector_sizes: tuple[tuple[int, int], ...]  # (tensor id, binding vector size), by id
    reshapes: tuple[int, ...]  # real dims of every fused reshape, in view order
    runtime_layouts: tuple[tuple[tuple[int, ...], tuple[int, ...]], ...]
    skipped: bool  # nothing to write: burn skips the launch

    def widths(self) -> tuple[int, ...]:
        return tuple(config.width for config in self.configs)


@dataclass(frozen=True, slots=True)
class Launch:
    """A plan plus the handles its bindings point at (buffers, offsets)."""

    plan: LaunchPlan
    input_handles: tuple[Handle, ...]
    output_handles: tuple[Handle, ...]


class LaunchError(RuntimeError):
    """burn ``TraceError::ReferenceNotFound`` (or a runner refusal): the launch cannot run."""


# --- the context: relative ids -> global tensors ------------------------------------------------


@dataclass(frozen=True, slots=True)
class FusedContext:
    """burn ``Context`` as one optimization sees it: relative id → global snapshot (real
    shape), relative shape id → dim, scalar placeholder → (value, dtype it is converted to)."""

    tensors: Mapping[int, TensorIr]
    shapes: Mapping[int, int]
    scalars: tuple[tuple[Scalar, DType], ...]


def _scalar_dtypes(op: OperationIr) -> list[DType]:
    """The dtype each scalar field of ``op`` is converted to: the lhs dtype for ``*Scalar`` /
    ``*Elem`` ops, the output dtype for ``Clamp``, ``MaskFill``, ``Full``."""
    target = op.desc.lhs.dtype if isinstance(op.desc, ScalarOpIr) else op.desc.out.dtype
    return [target for _, kind in op.desc.SCHEMA if kind is FieldKind.SCALAR]


def context_of(segment: tuple[OperationIr, ...], global2relative: Mapping[int, int],
               shapes: Mapping[int, int], scalars: tuple[Scalar, ...]) -> FusedContext:
    """The context of a segment. Snapshots come from the ops (a ``Drop`` snapshot only when
    nothing else names the tensor), so every relative id maps to its real shape."""
    tensors: dict[int, TensorIr] = {}
    dtypes: list[DType] = []
    for op in segment:
        if op.op.kind is OpKind.DROP:
            dropped = op.desc.tensor
            tensors.setdefault(global2relative[dropped.id], dropped)
            continue
        for tensor in op.nodes():
            rid = global2relative[tensor.id]
            if rid not in tensors or tensors[rid].shape != tensor.shape:
                tensors[rid] = tensor
        dtypes.extend(_scalar_dtypes(op))
    return FusedContext(tensors, dict(shapes), tuple(zip(scalars, dtypes)))


# --- LaunchPlanExecutor ---------------------------------------------------------------------


def _ref_layout(reference: ReferenceSelection, width: int) -> RefLayout:
    kind = reference.kind
    if kind == "Concrete":
        return ConcreteLayout(reference.arg)
    if kind == "VirtualShape":
        return ShapeLayout(reference.arg, width)
    if kind == "SwapDims":
        return SwapDimsLayout(reference.arg, reference.dims)
    if kind == "Reshaped":
        return ReshapedLayout(reference.pos, width)
    if kind == "Runtime":
        return RuntimeLayout(reference.pos)
    raise LaunchError("ReferenceNotFound: no reference layout for a block")


def _configs(state: PlanningState) -> tuple[FuseBlockConfig, ...]:
    configs = []
    for block, fuse_block in zip(state.blocks, state.trace.blocks):
        concrete = block.reference.concrete()
        axis = permuted_innermost_axis(*concrete) if concrete is not None else None
        vector_axis = axis if axis is not None else max(state.rank - 1, 0)
        ops = [op for rid in sorted(block.reads) for op in block.reads[rid]]
        ops.extend(fuse_block.ops)
        ops.extend(op for rid in sorted(block.writes) for op in block.writes[rid])
        configs.append(FuseBlockConfig(state.rank, _ref_layout(block.reference, block.width),
                                       tuple(ops), block.width, vector_axis))
    return tuple(configs)


def _freeze(state: PlanningState) -> Launch:
    num_writes = sum(len(ops) for block in state.blocks for ops in block.writes.values())
    skipped = num_writes == 0  # burn returns before building configs: no reference needed
    configs = () if skipped else _configs(state)
    inputs = tuple(LaunchInput(i.glob.id, i.precision, i.glob.shape, i.strides, i.vector_size,
                               i.broadcasted) for i in state.inputs)
    outputs = []
    for out in state.outputs:
        vs = out.vectorization if out.kind == "owned" else state.inputs[out.input_pos].vector_size
        outputs.append(LaunchOutput(out.glob.id, out.precision, out.glob.shape,
                                    out.handle.strides, vs, out.kind, out.input_pos))
    sizes = {i.tensor: i.vector_size for i in inputs}
    sizes.update({o.tensor: o.vector_size for o in outputs})
    reshapes = tuple(d for view in state.trace.resources.views if isinstance(view, ReshapeView)
                     for d in state.context.tensors[view.reshaped].shape)
    plan = LaunchPlan(
        rank=state.rank,
        configs=configs,
        inputs=inputs,
        outputs=tuple(outputs),
        aliases=tuple(sorted((o.tensor, inputs[o.input_pos].tensor) for o in outputs
                             if o.kind == "inplace")),
        views=tuple(sorted((o.tensor, inputs[o.input_pos].tensor) for o in outputs
                           if o.kind == "view")),
        vector_sizes=tuple(sorted(sizes.items())),
        reshapes=reshapes,
        runtime_layouts=tuple(state.runtime_layouts),
        skipped=skipped,
    )
    return Launch(plan, tuple(i.handle for i in state.inputs),
                  tuple(o.handle for o in state.outputs))


def plan_launch(trace: FuseTrace, context: FusedContext, memory: Memory, device: object,
                matmul_operands: tuple[int, int] | None = None) -> Launch:
    """burn ``FuseTraceLauncher::launch`` up to the kernel: plan inputs, outputs, vector sizes
    and configs, updating ``memory`` like burn's context. ``matmul_operands`` (relative lhs and
    rhs ids) selects the matmul runner's vector-axis rule. Raises ``LaunchError`` when a block
    has no reference (run it on ``memory.fork()`` to roll back)."""
    from refimpl.planner.launch.launch_vectorize import plan_vectorization

    blocks = [BlockPlan({rid: list(ops) for rid, ops in b.reads},
                        {rid: list(ops) for rid, ops in b.writes}) for b in trace.blocks]
    rank = max((len(b.shape_ref) for b in trace.blocks), default=0)
    state = PlanningState(trace, context, memory, rank, blocks)
    plan_inputs(state)
    plan_outputs(state)
    plan_vectorization(state, device, matmul_operands)
    return _freeze(state)
