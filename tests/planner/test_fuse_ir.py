"""The FuseOp vocabulary against the op table: ``UNARY_FUSE_OPS`` and ``BINARY_FUSE_OPS`` are
derived from the ``fuse`` column of ``refimpl.ops``; these tests pin what that derivation gives
to burn's ``FuseOp`` enum, so an op table edit cannot change the vocabulary unnoticed."""

from __future__ import annotations

from refimpl.ops import OPS
from refimpl.planner.engine.trace import (
    BINARY_FUSE_OPS, FUSE_OP_ARGS, UNARY_FUSE_OPS, BinaryFuseArgs, CatArgs, ClampArgs,
    ConditionalAssignArgs, GatherArgs, SelectArgs, UnaryFuseArgs,
)

# burn 0.22.1's FuseOp variants (notes §2.3) less Dequantize, by the args struct they carry.
BURN_FUSE_OP_ARGS = {
    **dict.fromkeys(("Abs", "Exp", "Log", "Log1p", "Cos", "Sin", "Tanh", "Erf", "Sqrt",
                     "Recip", "Assign", "BitwiseNot"), UnaryFuseArgs),
    **dict.fromkeys(("Add", "Sub", "Mul", "Div", "Powf", "Equal", "Lower", "Greater",
                     "LowerEqual", "Rem", "GreaterEqual", "BitwiseAnd", "BitwiseOr",
                     "BitwiseXor", "BitwiseLeftShift", "BitwiseRightShift"), BinaryFuseArgs),
    "Clamp": ClampArgs,
    "ConditionalAssign": ConditionalAssignArgs,
    "Gather": GatherArgs,
    "Select": SelectArgs,
    "Cat": CatArgs,
}


def test_fuse_op_args_is_burns_fuse_op_enum():
    assert dict(FUSE_OP_ARGS) == BURN_FUSE_OP_ARGS


def test_fuse_op_groups_are_disjoint_and_named_once():
    assert len(set(UNARY_FUSE_OPS)) == len(UNARY_FUSE_OPS)
    assert len(set(BINARY_FUSE_OPS)) == len(BINARY_FUSE_OPS)
    assert not set(UNARY_FUSE_OPS) & set(BINARY_FUSE_OPS)


def test_every_fuse_op_is_emitted_by_an_op_of_the_table():
    assert {op.fuse for op in OPS if op.fuse is not None} == set(FUSE_OP_ARGS)
