"""The engine shared by the ElementWise, Matmul and Reduce fusers: ``TraceOperationFuser``
(``OperationIr`` -> ``FuseOp``) on top of ``TryTraceFuser`` (kernel limits).

burn counterpart: ``crates/burn-cubecl-fusion/src/engine/fuser.rs`` (``TraceOperationFuser``,
``TryTraceFuser``), with ``TryTraceFuser::fuse`` as quoted on the seed page (0.22.1: the binding
check applies to the first op too, burn #6049/#6053); notes §2.3, §3.2–§3.6, §4.

The op table decides acceptance: ops of a ``FUSED_CATEGORIES`` category with a ``fuse`` name
(``refimpl.ops``) or of kind ``VIEW`` are handled, by their operand struct; every other op of
those categories closes the fuser ("unsupported op"), every other category too ("unsupported op
variant"). ``closed_reason`` says why a fuser closed; fuselab's reasons are finer than burn's
log ("numeric fuse rejected" covers shape, limit and indexed-input refusals alike).

Invariants:

* A trace holds at most ``MAX_OPS + 1`` = 65 data ops (``>`` checked before adding).
* ``estimate_bindings() <= max_bindings`` after every accepted op, the first included.
* Once closed, a fuser ignores further ops; ``len()`` counts accepted ops, drops and views too.
"""

from __future__ import annotations

from collections.abc import Callable

from refimpl import ir
from refimpl.ir import OperationIr, TensorIr
from refimpl.ops import FUSED_CATEGORIES, Op, OpKind
from refimpl.planner.engine.builder import Refusal, TraceFuser
from refimpl.planner.engine.fuser import FuserProperties, FuserStatus
from refimpl.planner.engine.scoring import Scoring
from refimpl.planner.engine.settings import FuseSettings
from refimpl.planner.engine.trace import (
    BinaryFuseArgs, CatArgs, ClampArgs, ConditionalAssignArgs, FuseArg, FuseOp, FuseTrace,
    GatherArgs, Literal, SelectArgs, UnaryFuseArgs, fuse_type_of,
)

__all__ = [
    "MAX_OPS", "REASON_MAX_OPS", "REASON_SHAPE", "REASON_UNSUPPORTED_OP",
    "REASON_UNSUPPORTED_VARIANT", "REASON_DROP_FIRST", "REASON_RESHAPE_RANK",
    "max_bindings_reason", "TryTraceFuser", "TraceOperationFuser",
]

MAX_OPS = 64  # "a good default, avoid errors with for loops over only memory bound operations"

REASON_MAX_OPS = "max_ops"
REASON_SHAPE = "shape"
REASON_UNSUPPORTED_OP = "unsupported op"
REASON_UNSUPPORTED_VARIANT = "unsupported op variant"
REASON_DROP_FIRST = "drop first"
REASON_RESHAPE_RANK = "reshape rank"  # a rank-decreasing reshape (not supported by burn)

AddOps = Callable[[TraceFuser], object]


def max_bindings_reason(estimate: int, max_bindings: int) -> str:
    """The closing reason for a refused binding count: ``max_bindings est_bindings=9/7``."""
    return f"max_bindings est_bindings={estimate}/{max_bindings}"


def _run(add_ops: AddOps, fuser: TraceFuser) -> str | None:
    try:
        add_ops(fuser)
    except Refusal as refusal:
        return refusal.reason
    return None


class TryTraceFuser:
    """burn ``TryTraceFuser``: adds an op only if the kernel stays within its limits."""

    def __init__(self, max_bindings: int, settings: FuseSettings) -> None:
        self.fuser = TraceFuser(settings)
        self.max_bindings = max_bindings
        self.max_ops = MAX_OPS
        self.added_ops = False

    def clone(self) -> TryTraceFuser:
        other = TryTraceFuser.__new__(TryTraceFuser)
        other.fuser, other.max_bindings = self.fuser.clone(), self.max_bindings
        other.max_ops, other.added_ops = self.max_ops, self.added_ops
        return other

    def _bindings_refusal(self, fuser: TraceFuser) -> str | None:
        estimate = fuser.estimate_bindings()
        if estimate > self.max_bindings:
            return max_bindings_reason(estimate, self.max_bindings)
        return None

    def fuse(self, add_ops: AddOps) -> str | None:
        """Run ``add_ops`` and keep its effect if the limits hold; the refusal reason, or
        ``None`` when the op was added. The first op runs in place (no clone)."""
        if self.fuser.num_ops_fused() > self.max_ops:
            return REASON_MAX_OPS
        if not self.added_ops:
            self.added_ops = True
            return _run(add_ops, self.fuser) or self._bindings_refusal(self.fuser)
        cloned = self.fuser.clone()
        reason = _run(add_ops, cloned) or self._bindings_refusal(cloned)
        if reason is None:
            self.fuser = cloned
        return reason

    def finish(self, shape_ref: tuple[int, ...]) -> FuseTrace:
        return self.fuser.finish(shape_ref)


class TraceOperationFuser:
    """burn ``TraceOperationFuser``: translates each accepted ``OperationIr`` into ``FuseOp``s
    and tracks the output shape, the score inputs and the fuser status."""

    def __init__(self, max_bindings: int, settings: FuseSettings) -> None:
        self.fuser = TryTraceFuser(max_bindings, settings)
        self.scoring = Scoring()
        self.settings = settings
        self.current_output_shape: tuple[int, ...] = ()
        self._status = FuserStatus.Open
        self.num_ops = 0
        self.num_views = 0
        self.max_bindings = max_bindings
        self.closed_reason: str | None = None
        self.closed_log: str | None = None

    def clone(self) -> TraceOperationFuser:
        other = TraceOperationFuser.__new__(TraceOperationFuser)
        other.__dict__.update(self.__dict__)
        other.fuser, other.scoring = self.fuser.clone(), self.scoring.clone()
        return other

    # --- OperationFuser ----------------------------------------------------------------------

    def fuse(self, op: OperationIr) -> None:
        """Accept ``op`` or close (burn ``OperationFuser::fuse``)."""
        if self._status is FuserStatus.Closed:
            return
        num_ops_before = self.num_ops
        reason = self._fuse_op(op)
        if reason is not None:
            self.close(reason, op, num_ops_before)
            return
        self._status = FuserStatus.Open
        self.scoring.register(op)
        self.num_ops += 1

    def finish(self) -> FuseTrace:
        return self.fuser.finish(self.current_output_shape)

    def len(self) -> int:
        return self.num_ops

    def reset(self) -> None:
        self.num_ops = self.num_views = 0
        self.scoring.reset()
        self._status = FuserStatus.Open
        self.fuser = TryTraceFuser(self.max_bindings, self.settings)
        self.current_output_shape = ()
        self.closed_reason = self.closed_log = None

    def status(self) -> FuserStatus:
        return self._status

    def properties(self) -> FuserProperties:
        trace = self.fuser.fuser.clone().finish(self.current_output_shape)
        return FuserProperties(score=self.scoring.evaluate(trace), ready=self.num_ops > 0)

    # --- used by the fusers built on this one --------------------------------------------------

    def close(self, reason: str, op: OperationIr | None = None, num_ops_before: int = 0) -> None:
        """Close, recording why (and burn's log line when an op caused it)."""
        self._status = FuserStatus.Closed
        self.closed_reason = reason
        if op is not None:
            estimate = self.fuser.fuser.estimate_bindings()
            self.closed_log = (f"[fuser] closed on {op.name} ({reason}); had {num_ops_before} "
                               f"ops, est_bindings={estimate}/{self.max_bindings}")

    def can_fuse(self, op: OperationIr) -> bool:
        """Whether ``op`` would be accepted (tried on a clone)."""
        return self.refusal(op) is None

    def refusal(self, op: OperationIr) -> str | None:
        """Why ``op`` would be refused (tried on a clone), or ``None`` if it would be accepted."""
        trial = self.clone()
        trial.fuse(op)
        if trial.len() > self.len():
            return None
        return trial.closed_reason or self.closed_reason

    def estimate_bindings(self) -> int:
        return self.fuser.fuser.estimate_bindings()

    def input_unhandled(self, tensor: TensorIr) -> FuseArg:
        return self.fuser.fuser.input_unhandled(tensor)

    def output_unhandled(self, tensor: TensorIr) -> FuseArg:
        """Declare an output the runner writes; the largest such shape becomes the reference."""
        if not self.current_output_shape or sum(self.current_output_shape) < sum(tensor.shape):
            self.current_output_shape = tensor.shape
        return self.fuser.fuser.output_unhandled(tensor)

    def next_block(self, arguments: tuple[TensorIr, ...], settings: FuseSettings,
                   global_: bool) -> list[FuseArg]:
        """Close the current block and open one with ``settings``; ``arguments`` flow from the
        closed block into the new one."""
        block_pos = self.fuser.fuser.num_previous_blocks()
        shape, self.current_output_shape = self.current_output_shape, ()
        self.fuser.fuser.next_block(shape, settings)
        self.settings = settings
        self._status = FuserStatus.Open
        return [self.fuser.fuser.block_local_input(t, block_pos, global_) for t in arguments]

    def block_local_input(self, tensor: TensorIr, block_pos: int, global_: bool) -> None:
        self.fuser.fuser.block_local_input(tensor, block_pos, global_)

    def output_nhwc_layout(self, tensor: TensorIr, permutation: tuple[int, ...]) -> None:
        self.fuser.fuser.output_nhwc_layout(tensor, permutation)

    # --- dispatch ------------------------------------------------------------------------------

    def _fuse_op(self, op: OperationIr) -> str | None:
        if op.op.kind is OpKind.DROP:
            if self.num_ops == 0:
                return REASON_DROP_FIRST
            self.fuser.fuser.fuse_dropped(op.desc.tensor)
            return None
        if op.op.category not in FUSED_CATEGORIES:
            return REASON_UNSUPPORTED_VARIANT
        handler = _handler_for(op.op)
        if handler is None:
            return REASON_UNSUPPORTED_OP
        return handler(self, op.desc, op.op)

    def output_is_compatible(self, out: TensorIr) -> bool:
        """Whether ``out`` fits the block's reference shape (relative ids, 0 == size 1),
        growing the reference along size-1 dims when the settings allow (notes §3.4)."""
        current = self.current_output_shape
        if not current:
            self.current_output_shape = out.shape
            return True
        if len(current) != len(out.shape):
            return False
        updated, should_update = list(current), False
        for i, (curr, new) in enumerate(zip(current, out.shape)):
            if curr == new or (self.settings.broadcast and new == 0):
                continue
            if not self.settings.broadcast:
                return False
            if curr == 0 and self.settings.output_shape_updates:
                updated[i], should_update = new, True
                continue
            return False
        if should_update:
            if tuple(updated) != out.shape:
                return False
            self.current_output_shape = out.shape
        return True

    def _data_op(self, out: TensorIr, add_ops: AddOps) -> str | None:
        if not self.output_is_compatible(out):
            return REASON_SHAPE
        return self.fuser.fuse(add_ops)

    def _view_op(self, out: TensorIr, add_ops: AddOps) -> str | None:
        reason = self._data_op(out, add_ops)
        if reason is None:
            self.num_views += 1
        return reason

    def fuse_unary_op(self, input: TensorIr, out: TensorIr, name: str) -> str | None:
        def add(b: TraceFuser) -> None:
            args = UnaryFuseArgs(b.input(input), b.output(out))
            b.fuse_operation(FuseOp(name, args))
        return self._data_op(out, add)


# --- handlers, one per operand struct (and per view variant) -----------------------------------

Handler = Callable[[TraceOperationFuser, object, Op], "str | None"]


def _unary(f: TraceOperationFuser, d: ir.UnaryOpIr, op: Op) -> str | None:
    return f.fuse_unary_op(d.input, d.out, op.fuse)


def _binary(f: TraceOperationFuser, d: ir.BinaryOpIr, op: Op) -> str | None:
    def add(b: TraceFuser) -> None:
        lhs, rhs = b.input(d.lhs), b.input(d.rhs)
        b.fuse_operation(FuseOp(op.fuse, BinaryFuseArgs(lhs, rhs, b.output(d.out))))
    return f._data_op(d.out, add)


def _scalar(f: TraceOperationFuser, d: ir.ScalarOpIr, op: Op) -> str | None:
    def add(b: TraceFuser) -> None:
        lhs, rhs = b.input(d.lhs), b.scalar(d.rhs, d.lhs.dtype)  # scalar in the lhs precision
        b.fuse_operation(FuseOp(op.fuse, BinaryFuseArgs(lhs, rhs, b.output(d.out))))
    return f._data_op(d.out, add)


_LITERALS = {"Ones": 1, "Zeros": 0}


def _creation(f: TraceOperationFuser, d: ir.CreationOpIr, op: Op) -> str | None:
    literal = Literal(_LITERALS[op.variant], fuse_type_of(d.out.dtype))
    return f._data_op(d.out, lambda b: b.fuse_operation(FuseOp.assign(literal, b.output(d.out))))


def _full(f: TraceOperationFuser, d: ir.FullOpIr, op: Op) -> str | None:
    def add(b: TraceFuser) -> None:
        value = b.scalar(d.value, d.out.dtype)
        b.fuse_operation(FuseOp.assign(value, b.output(d.out)))
    return f._data_op(d.out, add)


def _clamp(f: TraceOperationFuser, d: ir.ClampOpIr, op: Op) -> str | None:
    def add(b: TraceFuser) -> None:
        tensor = b.input(d.tensor)
        low, high = b.scalar(d.min, d.out.dtype), b.scalar(d.max, d.out.dtype)
        b.fuse_operation(FuseOp("Clamp", ClampArgs(tensor, low, high, b.output(d.out))))
    return f._data_op(d.out, add)


def _indexed(args_type: type) -> Handler:
    def handler(f: TraceOperationFuser, d: ir.GatherOpIr, op: Op) -> str | None:
        def add(b: TraceFuser) -> None:
            source, indices = b.input_indexed(d.tensor), b.input_indexed(d.indices)
            args = args_type(source, indices, b.output(d.out), d.dim)
            b.fuse_operation(FuseOp(op.fuse, args))
        return f._data_op(d.out, add)
    return handler


def _cat(f: TraceOperationFuser, d: ir.CatOpIr, op: Op) -> str | None:
    def add(b: TraceFuser) -> None:
        sources = tuple(b.input_indexed(t) for t in d.tensors)
        b.fuse_operation(FuseOp("Cat", CatArgs(sources, b.output(d.out), d.dim)))
    return f._data_op(d.out, add)


def _mask_where(f: TraceOperationFuser, d: ir.MaskWhereOpIr, op: Op) -> str | None:
    def add(b: TraceFuser) -> None:
        cond, rhs, lhs = b.input(d.mask), b.input(d.tensor), b.input(d.value)
        args = ConditionalAssignArgs(cond, lhs, rhs, b.output(d.out))
        b.fuse_operation(FuseOp("ConditionalAssign", args))
    return f._data_op(d.out, add)


def _mask_fill(f: TraceOperationFuser, d: ir.MaskFillOpIr, op: Op) -> str | None:
    def add(b: TraceFuser) -> None:
        cond, lhs = b.input(d.mask), b.scalar(d.value, d.out.dtype)
        args = ConditionalAssignArgs(cond, lhs, b.input(d.tensor), b.output(d.out))
        b.fuse_operation(FuseOp("ConditionalAssign", args))
    return f._data_op(d.out, add)


def _swap_dims(f: TraceOperationFuser, d: ir.SwapDimsOpIr, op: Op) -> str | None:
    return f._view_op(d.out, lambda b: b.input_swap_dims(d.input, d.out, (d.dim1, d.dim2)))


def _reshape(f: TraceOperationFuser, d: ir.ShapeOpIr, op: Op) -> str | None:
    if d.input.shape == d.out.shape:
        return f.fuse_unary_op(d.input, d.out, "Assign")
    if len(d.input.shape) > len(d.out.shape):
        return REASON_RESHAPE_RANK
    return f._view_op(d.out, lambda b: b.input_reshaped(d.input, d.out))


# Ops with a ``fuse`` name, by operand struct.
_DATA_HANDLERS: dict[type, Handler] = {
    ir.UnaryOpIr: _unary,
    ir.BinaryOpIr: _binary,
    ir.ScalarOpIr: _scalar,
    ir.CreationOpIr: _creation,
    ir.FullOpIr: _full,
    ir.ClampOpIr: _clamp,
    ir.GatherOpIr: _indexed(GatherArgs),
    ir.SelectOpIr: _indexed(SelectArgs),
    ir.CatOpIr: _cat,
    ir.MaskWhereOpIr: _mask_where,
    ir.MaskFillOpIr: _mask_fill,
}
# Views (kind VIEW), by variant: fused only as a second layout of a block input.
_VIEW_HANDLERS: dict[str, Handler] = {"SwapDims": _swap_dims, "Reshape": _reshape}


def _handler_for(op: Op) -> Handler | None:
    if op.kind is OpKind.VIEW:
        return _VIEW_HANDLERS.get(op.variant)
    if op.fuse is None:
        return None
    return _DATA_HANDLERS.get(op.struct)
