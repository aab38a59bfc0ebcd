# cython: language_level=3
"""Launch planning for one fused step: what a kernel generator needs, in global terms.

Mirrors ``refimpl/planner/launch.py`` (burn ``engine/launch/{base,plan,input,output,
executor}.rs`` and ``codegen/ir.rs``): same names, same order, same results. The plan it
returns is made of refimpl's frozen dataclasses (``LaunchPlan``, ``FuseBlockConfig``, the
``RefLayout`` variants, ``LaunchInput`` / ``LaunchOutput``, ``Launch``), re-exported here, so
``fastplan.launch.plan_launch(...) == refimpl.planner.launch.plan_launch(...)`` is the whole
equivalence check; ``LaunchError`` and ``FusedContext`` are refimpl's too. ``plan_launch``
chains the twins of the four passes (``fastplan.launch_planners``,
``fastplan.launch_vectorize``) on refimpl's ``PlanningState`` and ``refimpl.handles.Memory``
(the memory is the interpreter's and the runtime's: a twin of it would have to be converted
at every step, and launch planning only calls ``take`` / ``alloc`` / ``register`` / ``remove``
on it, a few dict operations per tensor).
"""

import hashlib

from fastplan.handles cimport op_nodes
from fastplan.layout cimport permuted_innermost_axis_t

from fastplan.launch_planners import plan_inputs, plan_outputs
from fastplan.launch_vectorize import plan_vectorization

from refimpl.ir import FieldKind, ScalarOpIr
from refimpl.ops import OpKind
from refimpl.planner.launch import (
    ConcreteLayout, FuseBlockConfig, FusedContext, Launch, LaunchError, LaunchInput,
    LaunchOutput, LaunchPlan, RefLayout, ReshapedLayout, RuntimeLayout, ShapeLayout,
    SwapDimsLayout,
)
from refimpl.planner.launch_planners import BlockPlan, PlanningState
from refimpl.planner.trace import ReshapeView

__all__ = [
    "ConcreteLayout", "ReshapedLayout", "SwapDimsLayout", "ShapeLayout", "RuntimeLayout",
    "RefLayout", "FuseBlockConfig", "config_id", "LaunchInput", "LaunchOutput", "LaunchPlan",
    "Launch", "LaunchError", "FusedContext", "context_of", "plan_launch",
]

RefLayout = RefLayout
cdef object _DROP = OpKind.DROP
cdef object _SCALAR = FieldKind.SCALAR


def config_id(config):
    """A stable kernel-cache key: sha256 of the config's repr, first 16 hex digits.

    Mirrors refimpl.planner.launch.config_id.
    """
    return hashlib.sha256(repr(config).encode("utf-8")).hexdigest()[:16]


cdef list _scalar_dtypes(object op):
    """The dtype each scalar field of ``op`` is converted to (refimpl's ``_scalar_dtypes``)."""
    desc = op.desc
    target = desc.lhs.dtype if isinstance(desc, ScalarOpIr) else desc.out.dtype
    return [target for _, kind in desc.SCHEMA if kind is _SCALAR]


def context_of(segment, global2relative, shapes, scalars):
    """The context of a segment. Snapshots come from the ops (a ``Drop`` snapshot only when

    Mirrors refimpl.planner.launch.context_of.
    """
    cdef dict tensors = {}
    cdef list dtypes = []
    for op in segment:
        if op.op.kind is _DROP:
            dropped = op.desc.tensor
            tensors.setdefault(global2relative[dropped.id], dropped)
            continue
        for tensor in op_nodes(op):
            rid = global2relative[tensor.id]
            known = tensors.get(rid)
            if known is None or known.shape != tensor.shape:
                tensors[rid] = tensor
        dtypes.extend(_scalar_dtypes(op))
    return FusedContext(tensors, dict(shapes), tuple(zip(scalars, dtypes)))


# --- LaunchPlanExecutor ---------------------------------------------------------------------


cdef object _ref_layout(object reference, object width):
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


cdef tuple _configs(object state):
    cdef list configs = []
    cdef list ops
    rank = state.rank
    for block, fuse_block in zip(state.blocks, state.trace.blocks):
        reference = block.reference
        axis = None
        if reference.kind == "Concrete":
            axis = permuted_innermost_axis_t(reference.shape, reference.strides)
        vector_axis = axis if axis is not None else max(rank - 1, 0)
        ops = []
        reads, writes = block.reads, block.writes
        for rid in sorted(reads):
            ops.extend(reads[rid])
        ops.extend(fuse_block.ops)
        for rid in sorted(writes):
            ops.extend(writes[rid])
        configs.append(FuseBlockConfig(rank, _ref_layout(reference, block.width),
                                       tuple(ops), block.width, vector_axis))
    return tuple(configs)


cdef object _freeze(object state):
    cdef Py_ssize_t num_writes = 0
    for block in state.blocks:
        for ops in block.writes.values():
            num_writes += len(ops)
    skipped = num_writes == 0  # burn returns before building configs: no reference needed
    configs = () if skipped else _configs(state)
    inputs = tuple([LaunchInput(i.glob.id, i.precision, i.glob.shape, i.strides,
                                i.vector_size, i.broadcasted) for i in state.inputs])
    cdef list outputs = []
    for out in state.outputs:
        vs = out.vectorization if out.kind == "owned" else state.inputs[out.input_pos].vector_size
        outputs.append(LaunchOutput(out.glob.id, out.precision, out.glob.shape,
                                    out.handle.strides, vs, out.kind, out.input_pos))
    cdef dict sizes = {}
    for i in inputs:
        sizes[i.tensor] = i.vector_size
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
    plan = LaunchPlan(
        rank=state.rank,
        configs=configs,
        inputs=inputs,
        outputs=tuple(outputs),
        aliases=tuple(sorted(aliases)),
        views=tuple(sorted(views)),
        vector_sizes=tuple(sorted(sizes.items())),
        reshapes=reshapes,
        runtime_layouts=tuple(state.runtime_layouts),
        skipped=skipped,
    )
    return Launch(plan, tuple([i.handle for i in state.inputs]),
                  tuple([o.handle for o in state.outputs]))


def plan_launch(trace, context, memory, device, matmul_operands=None):
    """burn ``FuseTraceLauncher::launch`` up to the kernel: plan inputs, outputs, vector sizes

    Mirrors refimpl.planner.launch.plan_launch.
    """
    blocks = [BlockPlan({rid: list(ops) for rid, ops in b.reads},
                        {rid: list(ops) for rid, ops in b.writes}) for b in trace.blocks]
    rank = 0
    for b in trace.blocks:
        if len(b.shape_ref) > rank:
            rank = len(b.shape_ref)
    state = PlanningState(trace, context, memory, rank, blocks)
    plan_inputs(state)
    plan_outputs(state)
    plan_vectorization(state, device, matmul_operands)
    return _freeze(state)
