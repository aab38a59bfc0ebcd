"""The fused kernel's description: ``FuseBlock``, ``FuseTrace`` and their resources.

burn counterpart: ``crates/burn-cubecl-fusion/src/engine/trace/{base,block}.rs``
(``FuseTrace``, ``FuseResources``, ``RegisteredTensors``, ``TensorView``, ``FuseBlock``);
notes §3.1. The kernel vocabulary (``FuseType``, the ``FuseArg`` variants, ``FuseOp``; burn's
``codegen/ir.rs``) lives in ``refimpl.planner.engine.fuse_ir`` and is re-exported here.

Everything here is a frozen value except ``RegisteredTensors``, which the builders
(``refimpl.planner.engine.builder``) grow while fusing and freeze into ``FuseResources`` at
``finish``. Tensor ids are *relative* ids (notes §2.4). burn's BTreeMaps (block reads/writes,
indexed inputs, registers) become tuples of pairs sorted by tensor id, so the order of the read
and write ops in a kernel is burn's.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Union

from refimpl.ir import TensorIr
from refimpl.planner.engine.fuse_ir import (
    FUSE_OP_ARGS, UNARY_FUSE_OPS, BINARY_FUSE_OPS, BinaryFuseArgs, BlockLocal, CatArgs,
    ClampArgs, ConditionalAssignArgs, FuseArg, FuseOp, FuseType, GatherArgs, Input,
    InputReshaped, InputSwapDims, LayoutInfo, Literal, MultiBlockGlobal, MultiBlockLocal,
    MultiBlockPos, Output, Scalar, ScalarShape, SelectArgs, UnaryFuseArgs, fuse_type_of,
)
from refimpl.planner.engine.settings import FuseSettings

__all__ = [
    # re-exported from fuse_ir
    "FuseType", "fuse_type_of", "LayoutInfo", "MultiBlockPos", "FuseArg", "Input", "Output",
    "BlockLocal", "MultiBlockLocal", "MultiBlockGlobal", "Scalar", "ScalarShape", "Literal",
    "InputReshaped", "InputSwapDims", "UnaryFuseArgs", "BinaryFuseArgs", "ClampArgs",
    "ConditionalAssignArgs", "GatherArgs", "SelectArgs", "CatArgs", "FUSE_OP_ARGS",
    "UNARY_FUSE_OPS", "BINARY_FUSE_OPS", "FuseOp",
    # defined here
    "ReshapeView", "SwapDimsView", "NhwcStridesView", "TensorView", "RegisteredTensor",
    "RegisteredTensors", "FuseResources", "FuseBlock", "FuseTrace",
]

# --- Views ---------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ReshapeView:
    """burn ``TensorView::Reshape``: ``reshaped`` is ``original`` under another shape."""

    reshaped: int
    original: int
    reshape_pos: int
    shape_relative: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class SwapDimsView:
    """burn ``TensorView::SwapDims``: ``swapped`` is ``original`` with two dims exchanged."""

    swapped: int
    original: int
    dims: tuple[int, int]


@dataclass(frozen=True, slots=True)
class NhwcStridesView:
    """burn ``TensorView::NhwcStrides``: write tensor ``id`` channels-last."""

    id: int
    stride_relayout: tuple[int, ...]


TensorView = Union[ReshapeView, SwapDimsView, NhwcStridesView]


# --- Registered tensors and resources ---------------------------------------------------------


@dataclass(frozen=True, slots=True)
class RegisteredTensor:
    """burn ``RegisterTensor::Normal``: a global tensor (latest snapshot) and its kernel type."""

    tensor: TensorIr
    ty: FuseType


class RegisteredTensors:
    """burn ``RegisteredTensors``: an ordered, id-deduplicated list of global tensors whose
    position is the binding position. Mutable; ``clone`` before speculative changes."""

    __slots__ = ("_entries",)

    def __init__(self, entries: list[RegisteredTensor] | None = None) -> None:
        self._entries: list[RegisteredTensor] = entries if entries is not None else []

    def clone(self) -> RegisteredTensors:
        return RegisteredTensors(list(self._entries))

    def __len__(self) -> int:
        return len(self._entries)

    def __iter__(self):
        return iter(self._entries)

    def get_index(self, tensor_id: int) -> int | None:
        """Position of tensor ``tensor_id``, or ``None``."""
        for pos, entry in enumerate(self._entries):
            if entry.tensor.id == tensor_id:
                return pos
        return None

    def get(self, tensor_id: int) -> RegisteredTensor | None:
        """The entry of tensor ``tensor_id``, or ``None``."""
        pos = self.get_index(tensor_id)
        return None if pos is None else self._entries[pos]

    def insert(self, ty: FuseType, tensor: TensorIr) -> int:
        """Register ``tensor`` unless its id is already there; its position either way."""
        pos = self.get_index(tensor.id)
        if pos is not None:
            return pos
        self._entries.append(RegisteredTensor(tensor, ty))
        return len(self._entries) - 1

    def update(self, tensor: TensorIr) -> None:
        """Take ``tensor``'s status as the registered tensor's latest status (if registered)."""
        pos = self.get_index(tensor.id)
        if pos is not None:
            entry = self._entries[pos]
            self._entries[pos] = RegisteredTensor(entry.tensor.with_status(tensor.status), entry.ty)

    def ids(self) -> tuple[int, ...]:
        return tuple(entry.tensor.id for entry in self._entries)

    def freeze(self) -> tuple[RegisteredTensor, ...]:
        return tuple(self._entries)


@dataclass(frozen=True, slots=True)
class FuseResources:
    """The global resources of a finished trace (burn ``FuseResources``, frozen).

    ``outputs`` are exactly the tensors written to global memory (buffers first, then block by
    block); ``inputs`` include the unhandled (matmul/reduce) and indexed operands.
    """

    outputs: tuple[RegisteredTensor, ...]
    inputs: tuple[RegisteredTensor, ...]
    scalars: tuple[tuple[FuseType, int], ...]
    views: tuple[TensorView, ...]
    indexed: tuple[tuple[int, FuseArg], ...]
    inputs_unhandled: tuple[int, ...]
    outputs_unhandled: tuple[FuseArg, ...]
    num_reshaped: int
    dropped: tuple[int, ...]
    buffers: tuple[RegisteredTensor, ...]
    registers: tuple[tuple[int, FuseArg], ...]

    def input_ids(self) -> tuple[int, ...]:
        return tuple(entry.tensor.id for entry in self.inputs)

    def output_ids(self) -> tuple[int, ...]:
        return tuple(entry.tensor.id for entry in self.outputs)


# --- Blocks and traces ---------------------------------------------------------------------------

TensorOps = tuple[tuple[int, tuple[FuseOp, ...]], ...]


@dataclass(frozen=True, slots=True)
class FuseBlock:
    """burn ``FuseBlock``: the data ops of one block, its reference shape, and its global reads
    and writes (``Assign`` ops) per tensor id, sorted by id."""

    settings: FuseSettings
    ops: tuple[FuseOp, ...]
    shape_ref: tuple[int, ...]
    reads: TensorOps
    writes: TensorOps

    def op_names(self) -> tuple[str, ...]:
        """The FuseOp names of the data ops, reads and writes excluded."""
        return tuple(op.name for op in self.ops)

    def read_ops(self) -> tuple[FuseOp, ...]:
        """Every read op, in kernel order (by tensor id, then registration)."""
        return tuple(op for _, ops in self.reads for op in ops)

    def write_ops(self) -> tuple[FuseOp, ...]:
        """Every write op, in kernel order (by tensor id, then registration)."""
        return tuple(op for _, ops in self.writes for op in ops)

    def kernel_ops(self) -> tuple[FuseOp, ...]:
        """Reads, then data ops, then writes: the op list a kernel config holds."""
        return self.read_ops() + self.ops + self.write_ops()


@dataclass(frozen=True, slots=True)
class FuseTrace:
    """burn ``FuseTrace``: the blocks of one kernel and the resources they share."""

    blocks: tuple[FuseBlock, ...]
    resources: FuseResources

    def max_relative_shape_id(self) -> int | None:
        """The highest relative shape id any block names as its reference shape."""
        ids = [d for block in self.blocks for d in block.shape_ref]
        return max(ids) if ids else None

    def input_ids(self) -> tuple[int, ...]:
        """Relative ids read from global memory, in binding order."""
        return self.resources.input_ids()

    def output_ids(self) -> tuple[int, ...]:
        """Relative ids written to global memory, in binding order."""
        return self.resources.output_ids()
