"""The vocabulary of a fused kernel: ``FuseType``, ``FuseArg`` variants and ``FuseOp``.

burn counterpart: ``crates/burn-cubecl-fusion/src/engine/codegen/ir.rs`` (``FuseType``,
``LayoutInfo``, ``FuseArg``, ``MultiBlockPos``, ``FuseOp``, ``UnaryFuseArgs``,
``BinaryFuseArgs``); notes §3.1. ``refimpl.planner.engine.trace`` re-exports every name.

Where burn has an enum with payloads, Python has one frozen class per variant: the ``FuseArg``
variants are ``Input``, ``Output``, ``BlockLocal``, ``MultiBlockLocal``, ``MultiBlockGlobal``,
``Scalar``, ``ScalarShape``, ``Literal``, ``InputReshaped``, ``InputSwapDims``; a ``FuseOp`` is
its variant name plus one args struct (``FUSE_OP_ARGS`` says which).
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from types import MappingProxyType

from refimpl import ir
from refimpl.dtypes import DType
from refimpl.ops import OPS

__all__ = [
    "FuseType", "fuse_type_of", "LayoutInfo", "MultiBlockPos", "FuseArg", "Input", "Output",
    "BlockLocal", "MultiBlockLocal", "MultiBlockGlobal", "Scalar", "ScalarShape", "Literal",
    "InputReshaped", "InputSwapDims", "UnaryFuseArgs", "BinaryFuseArgs", "ClampArgs",
    "ConditionalAssignArgs", "GatherArgs", "SelectArgs", "CatArgs", "FUSE_OP_ARGS",
    "UNARY_FUSE_OPS", "BINARY_FUSE_OPS", "FuseOp",
]


class FuseType(enum.IntEnum):
    """burn ``FuseType``; the values follow burn's declaration order, which is the order its
    derived ``Ord`` (and so every BTreeMap keyed by it) uses."""

    F64 = 0
    F32 = 1
    Flex32 = 2
    F16 = 3
    BF16 = 4
    I64 = 5
    I32 = 6
    I16 = 7
    I8 = 8
    U64 = 9
    U32 = 10
    U16 = 11
    U8 = 12


# burn ``impl From<DType> for FuseType``; bool is ``BoolStore::Native`` on cubecl-wgpu: u32.
_FUSE_TYPE = MappingProxyType({
    DType.F64: FuseType.F64, DType.F32: FuseType.F32, DType.F16: FuseType.F16,
    DType.I64: FuseType.I64, DType.I32: FuseType.I32, DType.I16: FuseType.I16,
    DType.I8: FuseType.I8, DType.U64: FuseType.U64, DType.U32: FuseType.U32,
    DType.U16: FuseType.U16, DType.U8: FuseType.U8, DType.BOOL: FuseType.U32,
})


def fuse_type_of(dtype: DType) -> FuseType:
    """The kernel type a tensor of ``dtype`` is computed in."""
    return _FUSE_TYPE[dtype]


class LayoutInfo(enum.Enum):
    """burn ``LayoutInfo``: how a global read/write indexes its tensor. Always ``Unknown`` in a
    planned trace; launch planning marks the reference tensor ``IsRef``/``SameAsRef``."""

    SameAsRef = "SameAsRef"
    IsRef = "IsRef"
    Unknown = "Unknown"


@dataclass(frozen=True, slots=True, order=True)
class MultiBlockPos:
    """Where a value shared between blocks was created: its block and write slot."""

    block_pos: int
    block_local_pos: int


class FuseArg:
    """Base of the ``FuseArg`` variants (burn ``FuseArg``)."""

    __slots__ = ()

    def precision(self) -> FuseType:
        """The kernel type of the value (burn ``FuseArg::precision``)."""
        return self.ty  # type: ignore[attr-defined]


@dataclass(frozen=True, slots=True)
class Input(FuseArg):
    """A global input tensor, by position in the trace's ``inputs``."""

    pos: int
    ty: FuseType
    layout: LayoutInfo = LayoutInfo.Unknown


@dataclass(frozen=True, slots=True)
class Output(FuseArg):
    """A global output tensor, by position in the trace's ``outputs``."""

    pos: int
    ty: FuseType
    layout: LayoutInfo = LayoutInfo.Unknown


@dataclass(frozen=True, slots=True)
class BlockLocal(FuseArg):
    """A register local to one block; ``pos`` counts locals of the same type."""

    pos: int
    ty: FuseType


@dataclass(frozen=True, slots=True)
class MultiBlockLocal(FuseArg):
    """A value written by one block and read by a later one, in the same scope."""

    pos: MultiBlockPos
    ty: FuseType


@dataclass(frozen=True, slots=True)
class MultiBlockGlobal(FuseArg):
    """A value shared between blocks in a globally visible scope."""

    pos: MultiBlockPos
    ty: FuseType


@dataclass(frozen=True, slots=True)
class Scalar(FuseArg):
    """A scalar operand, by position in the trace's ``scalars``."""

    index: int
    ty: FuseType


@dataclass(frozen=True, slots=True)
class ScalarShape(FuseArg):
    """One dimension of a fused reshape, passed at run time (u32)."""

    index: int

    def precision(self) -> FuseType:
        return FuseType.U32


@dataclass(frozen=True, slots=True)
class Literal(FuseArg):
    """A compile-time constant (only 0 and 1: ``Zeros``/``Ones``)."""

    value: int
    ty: FuseType


@dataclass(frozen=True, slots=True)
class InputReshaped(FuseArg):
    """An input read through a reshape view; ``broadcasted`` when its last dim is size 1."""

    original: Input
    shape: tuple[ScalarShape, ...]
    broadcasted: bool

    def precision(self) -> FuseType:
        return self.original.ty


@dataclass(frozen=True, slots=True)
class InputSwapDims(FuseArg):
    """An input read through a swap_dims view; ``broadcasted`` when its last dim is size 1."""

    original: Input
    dims: tuple[int, int]
    broadcasted: bool

    def precision(self) -> FuseType:
        return self.original.ty


# --- FuseOp ------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class UnaryFuseArgs:
    input: FuseArg
    out: FuseArg


@dataclass(frozen=True, slots=True)
class BinaryFuseArgs:
    lhs: FuseArg
    rhs: FuseArg
    out: FuseArg


@dataclass(frozen=True, slots=True)
class ClampArgs:
    input: FuseArg
    min: FuseArg
    max: FuseArg
    out: FuseArg


@dataclass(frozen=True, slots=True)
class ConditionalAssignArgs:
    """``out = cond ? lhs : rhs``."""

    cond: FuseArg
    lhs: FuseArg
    rhs: FuseArg
    out: FuseArg


@dataclass(frozen=True, slots=True)
class GatherArgs:
    input: FuseArg
    indices: FuseArg
    output: FuseArg
    dim: int


@dataclass(frozen=True, slots=True)
class SelectArgs:
    input: FuseArg
    indices: FuseArg
    output: FuseArg
    dim: int


@dataclass(frozen=True, slots=True)
class CatArgs:
    inputs: tuple[FuseArg, ...]
    output: FuseArg
    dim: int


def _fuse_ops_of(*structs: type) -> tuple[str, ...]:
    """The FuseOps (the op table's ``fuse`` column) of the ops whose operand struct is one of
    ``structs``, in table order, each once."""
    return tuple(dict.fromkeys(op.fuse for op in OPS
                               if op.fuse is not None and op.struct in structs))


# The FuseOp variants (burn's, less Dequantize: fuselab has no quantized dtypes), grouped by the
# args struct they carry. The unary and binary ones are the ``fuse`` column of ``refimpl.ops``:
# an op with one tensor operand emits a unary FuseOp, one with a tensor or scalar rhs a binary
# one (creation ops emit ``Assign`` too). tests/planner/test_fuse_ir.py checks the groups.
UNARY_FUSE_OPS = _fuse_ops_of(ir.UnaryOpIr)
BINARY_FUSE_OPS = _fuse_ops_of(ir.BinaryOpIr, ir.ScalarOpIr)
FUSE_OP_ARGS = MappingProxyType({
    **{name: UnaryFuseArgs for name in UNARY_FUSE_OPS},
    **{name: BinaryFuseArgs for name in BINARY_FUSE_OPS},
    "Clamp": ClampArgs,
    "ConditionalAssign": ConditionalAssignArgs,
    "Gather": GatherArgs,
    "Select": SelectArgs,
    "Cat": CatArgs,
})


@dataclass(frozen=True, slots=True)
class FuseOp:
    """One operation of a fused block (burn ``FuseOp``): ``FuseOp("Mul", BinaryFuseArgs(..))``."""

    name: str
    args: object

    def __post_init__(self) -> None:
        if type(self.args) is not FUSE_OP_ARGS.get(self.name):
            raise TypeError(f"FuseOp {self.name!r} cannot carry {type(self.args).__name__}")

    @staticmethod
    def assign(input: FuseArg, out: FuseArg) -> FuseOp:
        """``Assign``: the op every read and write is made of."""
        return FuseOp("Assign", UnaryFuseArgs(input, out))
