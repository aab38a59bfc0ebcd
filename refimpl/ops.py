"""The op table: every op fuselab knows, defined once. Every other table is keyed by it.

burn counterpart: the variants of ``OperationIr`` in ``crates/burn-ir/src/operation.rs``
(``BaseOperationIr``, ``NumericOperationIr``, ``FloatOperationIr``, ``IntOperationIr``,
``BoolOperationIr``, ``ModuleOperationIr``, ``Init``, ``Drop``) and, for the ``fuse`` column,
the ``fuse_*`` methods of ``burn-cubecl-fusion/src/engine/fuser.rs`` (notes §2.3).

An op is named ``"Category.Variant"`` exactly as in the stream format. Burn shares variant sets
between categories (``BaseFloat``/``BaseInt``/``BaseBool`` all carry ``BaseOperationIr``;
``NumericFloat``/``NumericInt`` carry ``NumericOperationIr``); the table below is written per
shared variant set and expanded per category, so ``NumericFloat.Add`` and ``NumericInt.Add``
are two ops with one definition.

Columns of an ``Op``:

* ``struct``    — the burn-ir operand struct (``refimpl.ir``): fields, names, JSON shape.
* ``kind``      — the planner-facing class (``OpKind``); passes test kinds, never names.
* ``fuse``      — the ``FuseOp`` the element-wise trace fuser emits, or ``None`` when the
  op closes it (views, reductions, matmul and modules have their own kinds).
* ``family``    — the dtype class of the main operands (Float / Int / Bool), from the category.
* ``out_dtype`` — the rule for the output dtype (``OutDType``).
* ``shape``     — the rule for the output shape (``ShapeRule``, implemented in
  ``refimpl.shapes``).

Where each kind of fact about an op lives: this table for the columns above, and one module
for each other kind. A list of ops that restates a column is read from this table, not written
out (``UNARY_FUSE_OPS``, the generators' lists); per-op tables are keyed by op name or variant,
and tests check the semantics, shape, FuseOp, WGSL, tolerance and domain tables against it:

* numpy semantics: ``refimpl.semantics`` (``NUMPY_IMPL``); shape rules: ``refimpl.shapes``;
* FuseOp vocabulary and args structs: ``refimpl.planner.engine.fuse_ir`` (``FUSE_OP_ARGS``; its unary
  and binary groups are read from the ``fuse`` column);
* WGSL expression: ``gpu.codegen.ops`` (``FUSE_EXPR`` per FuseOp, ``OP_EXPR`` per variant,
  ``WGSL_EXPR`` per op);
* GPU tolerance: ``gpu.check.tolerance`` (``GPU_ULP_TOLERANCE``); accuracy-measurement domain:
  ``gpu.check.accuracy`` (``DOMAINS``);
* frontend method or operator: ``refimpl.frontend`` (``tensor``, ``dims``, ``session``; the
  operator table in ``operands``);
* stream generator: ``refimpl.strategies.generators``.

``Op.code`` is the dense index used by fastplan's C tables; codes are not persisted anywhere
(golden files store names), so the order may change.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from types import MappingProxyType

from refimpl import ir
from refimpl.dtypes import DTypeClass

__all__ = [
    "Category",
    "OpKind",
    "OutDType",
    "ShapeRule",
    "Op",
    "OPS",
    "OP_BY_NAME",
    "op_named",
    "ops_of_kind",
    "FUSED_CATEGORIES",
]


class Category(enum.Enum):
    """burn's top-level ``OperationIr`` variants (the part of the op name before the dot)."""

    BaseFloat = "BaseFloat"
    BaseInt = "BaseInt"
    BaseBool = "BaseBool"
    NumericFloat = "NumericFloat"
    NumericInt = "NumericInt"
    Float = "Float"
    Int = "Int"
    Bool = "Bool"
    Module = "Module"
    Init = "Init"
    Drop = "Drop"

    @property
    def family(self) -> DTypeClass | None:
        """Dtype class of the main operands, ``None`` where the category fixes none."""
        return _FAMILY.get(self)


_FAMILY = {
    Category.BaseFloat: DTypeClass.FLOAT,
    Category.NumericFloat: DTypeClass.FLOAT,
    Category.Float: DTypeClass.FLOAT,
    Category.Module: DTypeClass.FLOAT,
    Category.BaseInt: DTypeClass.INT,
    Category.NumericInt: DTypeClass.INT,
    Category.Int: DTypeClass.INT,
    Category.BaseBool: DTypeClass.BOOL,
    Category.Bool: DTypeClass.BOOL,
}

# The categories ``TraceOperationFuser::fuse`` dispatches on (seed page); every other top-level
# variant closes the fuser with "unsupported op variant".
FUSED_CATEGORIES = frozenset(
    {
        Category.BaseFloat,
        Category.BaseInt,
        Category.BaseBool,
        Category.Float,
        Category.Int,
        Category.NumericFloat,
        Category.NumericInt,
    }
)


class OpKind(enum.IntEnum):
    """Planner-facing classes. Fusion *policy* per kind lives in the planner, not here."""

    ELEMENTWISE = 0  # one output element per (broadcast) input element
    VIEW = 1  # reshape / swap_dims: fused only as a second view of a block input
    INDEXED = 2  # gather / select / cat: element-wise, but reads its sources by index
    REDUCE_DIM = 3  # per-axis reduction, keeps the axis with size 1 (ReduceFuser)
    REDUCE_FULL = 4  # reduction of every element to shape [1]: never fused
    MATMUL = 5  # Float.Matmul (MatmulFuser's first op)
    MOVEMENT = 6  # permute, flip, expand, slice: run eagerly
    MODULE = 7  # pooling / interpolate (NHWCRelayoutFuser's last op)
    INIT = 8  # tensor from host data
    DROP = 9  # release without a ReadWrite use
    OTHER = 10  # computes values but no fuser takes it (Round, Neg, Int.Matmul, ...)


class OutDType(enum.Enum):
    """How the output dtype follows from the operands."""

    SAME = "same"  # the main operands' dtype
    BOOL = "bool"  # comparisons, logical reductions
    INT = "int"  # any integer dtype (argmax, into_int)
    FLOAT = "float"  # any float dtype (into_float)
    FAMILY = "family"  # any dtype of the category's class (cast, creation, init)


class ShapeRule(enum.Enum):
    """How the output shape follows from the operands (implemented in ``refimpl.shapes``)."""

    SAME = "same"
    BROADCAST = "broadcast"  # equal ranks, each dim equal or 1
    REDUCE_DIM = "reduce_dim"  # input shape with ``axis`` set to 1
    REDUCE_FULL = "reduce_full"  # [1]
    RESHAPE = "reshape"  # any shape with the same number of elements
    EXPAND = "expand"  # size-1 dims grow, rank may grow on the left
    SWAP_DIMS = "swap_dims"
    PERMUTE = "permute"
    SLICE = "slice"
    CAT = "cat"
    GATHER = "gather"  # the indices' shape
    SELECT = "select"  # input shape with ``dim`` set to len(indices)
    MASK = "mask"  # broadcast of tensor, mask (and value tensor)
    MATMUL = "matmul"
    POOL2D = "pool2d"
    ADAPTIVE_POOL2D = "adaptive_pool2d"
    INTERPOLATE = "interpolate"
    CREATION = "creation"  # the out snapshot is the definition
    NONE = "none"  # no output (Drop)


@dataclass(frozen=True, slots=True, eq=False)
class Op:
    """One entry of the op table. Compared by identity; look up with ``op_named``."""

    code: int
    name: str
    category: Category
    variant: str
    struct: type
    kind: OpKind
    fuse: str | None
    out_dtype: OutDType
    shape: ShapeRule

    @property
    def family(self) -> DTypeClass | None:
        return self.category.family

    @property
    def is_scalar_op(self) -> bool:
        """A ``*Scalar`` / ``*Elem`` variant: its rhs is a number."""
        return self.struct is ir.ScalarOpIr

    def __repr__(self) -> str:
        return f"Op({self.name})"


# --- The variant sets, written once ----------------------------------------------------------
# (variant, struct, kind, FuseOp or None, out dtype rule, shape rule)

E = OpKind.ELEMENTWISE
_BIN = (ir.BinaryOpIr, ShapeRule.BROADCAST)
_SCA = (ir.ScalarOpIr, ShapeRule.SAME)
_UNA = (ir.UnaryOpIr, ShapeRule.SAME)


def _row(variant, struct_shape, kind, fuse, out=OutDType.SAME):
    struct, shape = struct_shape
    return (variant, struct, kind, fuse, out, shape)


# BaseOperationIr: shared by BaseFloat, BaseInt and BaseBool.
_BASE = (
    # comparisons: Equal is fused, NotEqual is not (notes §2.3)
    _row("Equal", _BIN, E, "Equal", OutDType.BOOL),
    _row("EqualElem", _SCA, E, "Equal", OutDType.BOOL),
    _row("NotEqual", _BIN, OpKind.OTHER, None, OutDType.BOOL),
    _row("NotEqualElem", _SCA, OpKind.OTHER, None, OutDType.BOOL),
    # views, fused only as a second view of a block input
    _row("Reshape", (ir.ShapeOpIr, ShapeRule.RESHAPE), OpKind.VIEW, None),
    _row("SwapDims", (ir.SwapDimsOpIr, ShapeRule.SWAP_DIMS), OpKind.VIEW, None),
    # movement that always runs eagerly
    _row("Permute", (ir.PermuteOpIr, ShapeRule.PERMUTE), OpKind.MOVEMENT, None),
    _row("Flip", (ir.FlipOpIr, ShapeRule.SAME), OpKind.MOVEMENT, None),
    _row("Expand", (ir.ShapeOpIr, ShapeRule.EXPAND), OpKind.MOVEMENT, None),
    _row("Slice", (ir.SliceOpIr, ShapeRule.SLICE), OpKind.MOVEMENT, None),
    # indexed reads
    _row("Gather", (ir.GatherOpIr, ShapeRule.GATHER), OpKind.INDEXED, "Gather"),
    _row("Select", (ir.SelectOpIr, ShapeRule.SELECT), OpKind.INDEXED, "Select"),
    _row("Cat", (ir.CatOpIr, ShapeRule.CAT), OpKind.INDEXED, "Cat"),
    # conditional assignment
    _row("MaskWhere", (ir.MaskWhereOpIr, ShapeRule.MASK), E, "ConditionalAssign"),
    _row("MaskFill", (ir.MaskFillOpIr, ShapeRule.MASK), E, "ConditionalAssign"),
    # creation: Assign of a literal 1 / 0
    _row("Ones", (ir.CreationOpIr, ShapeRule.CREATION), E, "Assign", OutDType.FAMILY),
    _row("Zeros", (ir.CreationOpIr, ShapeRule.CREATION), E, "Assign", OutDType.FAMILY),
    # logical reductions: per-axis ones belong to the Reduce fuser
    _row("AnyDim", (ir.ReduceDimOpIr, ShapeRule.REDUCE_DIM), OpKind.REDUCE_DIM, None,
         OutDType.BOOL),
    _row("AllDim", (ir.ReduceDimOpIr, ShapeRule.REDUCE_DIM), OpKind.REDUCE_DIM, None,
         OutDType.BOOL),
    _row("Any", (ir.UnaryOpIr, ShapeRule.REDUCE_FULL), OpKind.REDUCE_FULL, None, OutDType.BOOL),
    _row("All", (ir.UnaryOpIr, ShapeRule.REDUCE_FULL), OpKind.REDUCE_FULL, None, OutDType.BOOL),
)
# Cast changes precision inside a class (f32 -> f16, i32 -> i64); burn has none for bool.
_BASE_CAST = (_row("Cast", _UNA, E, "Assign", OutDType.FAMILY),)

# NumericOperationIr: shared by NumericFloat and NumericInt.
_RD = (ir.ReduceDimOpIr, ShapeRule.REDUCE_DIM)
_RF = (ir.UnaryOpIr, ShapeRule.REDUCE_FULL)
_NUMERIC = (
    _row("Add", _BIN, E, "Add"),
    _row("AddScalar", _SCA, E, "Add"),
    _row("Sub", _BIN, E, "Sub"),
    _row("SubScalar", _SCA, E, "Sub"),
    _row("Mul", _BIN, E, "Mul"),
    _row("MulScalar", _SCA, E, "Mul"),
    _row("Div", _BIN, E, "Div"),
    _row("DivScalar", _SCA, E, "Div"),
    _row("Rem", _BIN, E, "Rem"),
    _row("RemScalar", _SCA, E, "Rem"),
    _row("Abs", _UNA, E, "Abs"),
    _row("Neg", _UNA, OpKind.OTHER, None),
    _row("Sign", _UNA, OpKind.OTHER, None),
    _row("Lower", _BIN, E, "Lower", OutDType.BOOL),
    _row("LowerElem", _SCA, E, "Lower", OutDType.BOOL),
    _row("Greater", _BIN, E, "Greater", OutDType.BOOL),
    _row("GreaterElem", _SCA, E, "Greater", OutDType.BOOL),
    _row("LowerEqual", _BIN, E, "LowerEqual", OutDType.BOOL),
    _row("LowerEqualElem", _SCA, E, "LowerEqual", OutDType.BOOL),
    _row("GreaterEqual", _BIN, E, "GreaterEqual", OutDType.BOOL),
    _row("GreaterEqualElem", _SCA, E, "GreaterEqual", OutDType.BOOL),
    _row("Full", (ir.FullOpIr, ShapeRule.CREATION), E, "Assign", OutDType.FAMILY),
    _row("Clamp", (ir.ClampOpIr, ShapeRule.SAME), E, "Clamp"),
    _row("ClampMin", _SCA, OpKind.OTHER, None),
    _row("ClampMax", _SCA, OpKind.OTHER, None),
    # full reductions: shape [1], never fused (seed: "y.sum() ... runs alone")
    _row("Sum", _RF, OpKind.REDUCE_FULL, None),
    _row("Mean", _RF, OpKind.REDUCE_FULL, None),
    _row("Prod", _RF, OpKind.REDUCE_FULL, None),
    _row("Max", _RF, OpKind.REDUCE_FULL, None),
    _row("Min", _RF, OpKind.REDUCE_FULL, None),
    _row("MaxAbs", _RF, OpKind.REDUCE_FULL, None),
    # per-axis reductions: the Reduce fuser's list
    _row("SumDim", _RD, OpKind.REDUCE_DIM, None),
    _row("MeanDim", _RD, OpKind.REDUCE_DIM, None),
    _row("ProdDim", _RD, OpKind.REDUCE_DIM, None),
    _row("MaxDim", _RD, OpKind.REDUCE_DIM, None),
    _row("MinDim", _RD, OpKind.REDUCE_DIM, None),
    _row("MaxAbsDim", _RD, OpKind.REDUCE_DIM, None),
    _row("ArgMax", _RD, OpKind.REDUCE_DIM, None, OutDType.INT),
    _row("ArgMin", _RD, OpKind.REDUCE_DIM, None, OutDType.INT),
)

# FloatOperationIr.
_FLOAT = (
    _row("Exp", _UNA, E, "Exp"),
    _row("Log", _UNA, E, "Log"),
    _row("Log1p", _UNA, E, "Log1p"),
    _row("Cos", _UNA, E, "Cos"),
    _row("Sin", _UNA, E, "Sin"),
    _row("Tanh", _UNA, E, "Tanh"),
    _row("Erf", _UNA, E, "Erf"),
    _row("Sqrt", _UNA, E, "Sqrt"),
    _row("Recip", _UNA, E, "Recip"),
    _row("Powf", _BIN, E, "Powf"),
    _row("PowfScalar", _SCA, E, "Powf"),
    _row("Matmul", (ir.BinaryOpIr, ShapeRule.MATMUL), OpKind.MATMUL, None),
    # computed but not fused by burn (notes §2.3)
    _row("Tan", _UNA, OpKind.OTHER, None),
    _row("Round", _UNA, OpKind.OTHER, None),
    _row("Floor", _UNA, OpKind.OTHER, None),
    _row("Ceil", _UNA, OpKind.OTHER, None),
    _row("IntoInt", _UNA, OpKind.OTHER, None, OutDType.INT),
    _row("IsNan", _UNA, OpKind.OTHER, None, OutDType.BOOL),
    _row("IsInf", _UNA, OpKind.OTHER, None, OutDType.BOOL),
)

# IntOperationIr.
_INT = (
    _row("IntoFloat", _UNA, E, "Assign", OutDType.FLOAT),
    _row("BitwiseAnd", _BIN, E, "BitwiseAnd"),
    _row("BitwiseAndScalar", _SCA, E, "BitwiseAnd"),
    _row("BitwiseOr", _BIN, E, "BitwiseOr"),
    _row("BitwiseOrScalar", _SCA, E, "BitwiseOr"),
    _row("BitwiseXor", _BIN, E, "BitwiseXor"),
    _row("BitwiseXorScalar", _SCA, E, "BitwiseXor"),
    _row("BitwiseLeftShift", _BIN, E, "BitwiseLeftShift"),
    _row("BitwiseLeftShiftScalar", _SCA, E, "BitwiseLeftShift"),
    _row("BitwiseRightShift", _BIN, E, "BitwiseRightShift"),
    _row("BitwiseRightShiftScalar", _SCA, E, "BitwiseRightShift"),
    _row("BitwiseNot", _UNA, E, "BitwiseNot"),
    # integer matmul: the Matmul fuser takes Float.Matmul only
    _row("Matmul", (ir.BinaryOpIr, ShapeRule.MATMUL), OpKind.OTHER, None),
)

# BoolOperationIr: a top-level variant the trace fuser never accepts.
_BOOL = (
    _row("IntoFloat", _UNA, OpKind.OTHER, None, OutDType.FLOAT),
    _row("IntoInt", _UNA, OpKind.OTHER, None, OutDType.INT),
    _row("Not", _UNA, OpKind.OTHER, None),
    _row("And", _BIN, OpKind.OTHER, None),
    _row("Or", _BIN, OpKind.OTHER, None),
)

# ModuleOperationIr: the pooling / interpolate ops NHWCRelayout fuses a relayout in front of.
_MODULE = (
    _row("MaxPool2d", (ir.MaxPool2dOpIr, ShapeRule.POOL2D), OpKind.MODULE, None),
    _row("AvgPool2d", (ir.AvgPool2dOpIr, ShapeRule.POOL2D), OpKind.MODULE, None),
    _row("AdaptiveAvgPool2d", (ir.AdaptiveAvgPool2dOpIr, ShapeRule.ADAPTIVE_POOL2D),
         OpKind.MODULE, None),
    _row("Interpolate", (ir.InterpolateOpIr, ShapeRule.INTERPOLATE), OpKind.MODULE, None),
)

_TABLE = (
    (Category.BaseFloat, _BASE + _BASE_CAST),
    (Category.BaseInt, _BASE + _BASE_CAST),
    (Category.BaseBool, _BASE),
    (Category.NumericFloat, _NUMERIC),
    (Category.NumericInt, _NUMERIC),
    (Category.Float, _FLOAT),
    (Category.Int, _INT),
    (Category.Bool, _BOOL),
    (Category.Module, _MODULE),
)


def _build() -> tuple[Op, ...]:
    ops: list[Op] = []
    for category, rows in _TABLE:
        for variant, struct, kind, fuse, out, shape in rows:
            name = f"{category.value}.{variant}"
            ops.append(Op(len(ops), name, category, variant, struct, kind, fuse, out, shape))
    # The two top-level variants without a sub-op: the name is the category.
    ops.append(Op(len(ops), "Init", Category.Init, "", ir.InitOperationIr, OpKind.INIT, None,
                  OutDType.SAME, ShapeRule.CREATION))
    ops.append(Op(len(ops), "Drop", Category.Drop, "", ir.DropOpIr, OpKind.DROP, None,
                  OutDType.SAME, ShapeRule.NONE))
    return tuple(ops)


OPS: tuple[Op, ...] = _build()
OP_BY_NAME = MappingProxyType({op.name: op for op in OPS})


def op_named(name: str) -> Op:
    """The op called ``name`` (``"NumericFloat.Add"``); ``KeyError`` if there is none."""
    return OP_BY_NAME[name]


def ops_of_kind(kind: OpKind) -> tuple[Op, ...]:
    """Every op of one kind, in table order."""
    return tuple(op for op in OPS if op.kind is kind)
