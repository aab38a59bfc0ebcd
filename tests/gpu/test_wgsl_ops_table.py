"""The WGSL expression table: complete over the op table, deterministic bytes, no non-finite
constants, and every entry correct at vector widths 2 and 4 (the fused kernel's form)."""

from __future__ import annotations

import hashlib
import re
import subprocess
import sys
from pathlib import Path

import pytest

from refimpl.dtypes import DType
from refimpl.ops import OPS, OpKind
from gpu.codegen.elementwise import ElementwiseKernel
from gpu.codegen.literals import literal
from gpu.codegen.ops import ELEMENTWISE_OPS, FUSE_EXPR, OP_EXPR, WGSL_EXPR, WGSL_TYPE
from tests.gpu.cases import ARITY, elementwise_cases
from tests.gpu.helpers import run_case

# The complete FuseOp enum of burn 0.22.1 (notes §2.3) minus the ones with their own codegen
# (Gather/Select/Cat read by index, Dequantize has no quantized dtypes here).
ELEMENTWISE_FUSE_OPS = (
    "Add", "Sub", "Mul", "Div", "Powf", "Abs", "Exp", "Log", "Log1p", "Cos", "Sin", "Tanh",
    "Erf", "Sqrt", "Recip", "Assign", "Equal", "Lower", "Greater", "LowerEqual", "Rem",
    "GreaterEqual", "BitwiseAnd", "BitwiseOr", "BitwiseXor", "BitwiseLeftShift",
    "BitwiseRightShift", "BitwiseNot", "Clamp", "ConditionalAssign",
)


def test_wgsl_expr_covers_every_elementwise_op():
    names = {op.name for op in OPS if op.kind is OpKind.ELEMENTWISE}
    assert names <= set(WGSL_EXPR)
    assert set(WGSL_EXPR) == {op.name for op in ELEMENTWISE_OPS}


def test_op_expr_keys_are_variants_of_elementwise_ops():
    # keyed by variant: a key no element-wise op carries would never be used
    assert set(OP_EXPR) <= {op.variant for op in ELEMENTWISE_OPS}


def test_fuse_expr_covers_every_elementwise_fuse_op():
    assert set(ELEMENTWISE_FUSE_OPS) == set(FUSE_EXPR)
    fused = {op.fuse for op in OPS if op.kind is OpKind.ELEMENTWISE}
    assert fused <= set(FUSE_EXPR)


def test_wgsl_type_holds_exactly_the_wgsl_dtypes():
    assert set(WGSL_TYPE) == {DType.F32, DType.F16, DType.I32, DType.U32, DType.BOOL}
    assert WGSL_TYPE[DType.BOOL] == "u32"


def test_literals_are_typed_and_finite():
    assert literal(0.5, DType.F32) == "0.5f"
    assert literal(2147483648.0, DType.F32) == "2147483648.0f"
    assert literal(-3, DType.I32, 4) == "vec4<i32>(-3i)"
    assert literal(-(2**31), DType.I32) == "bitcast<i32>(0x80000000u)"
    assert literal(True, DType.BOOL) == "1u"
    with pytest.raises(ValueError, match="runtime data"):
        literal(float("inf"), DType.F32)


def _kernels():
    """Every element-wise case as a dense width-4 and a strided rank-3 kernel."""
    for case in elementwise_cases():
        n_tensors, n_scalars = ARITY[case.op.struct]
        dtypes = tuple(DType.BOOL if case.op.variant in ("MaskWhere", "MaskFill") and j == 1
                       else case.dtype for j in range(n_tensors))
        scalar = case.dtype if case.op.is_scalar_op else case.out
        for rank, width, dense in ((0, 4, True), (3, 1, False)):
            yield ElementwiseKernel(case.op.name, dtypes, (scalar,) * n_scalars, case.out,
                                    rank, width, dense)


def _digest() -> str:
    sources = "\0".join(k.source() for k in _kernels())
    return hashlib.sha256(sources.encode()).hexdigest()


def test_wgsl_source_is_byte_deterministic_across_processes():
    code = "from tests.gpu.test_wgsl_ops_table import _digest; print(_digest())"
    other = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                           env={"PYTHONHASHSEED": "12345", "PATH": ""},
                           cwd=Path(__file__).resolve().parents[2], check=True)
    assert other.stdout.strip() == _digest()


_NON_FINITE = re.compile(r"\b(inf|infinity|nan)\b|[0-9]e[0-9]{2,}", re.IGNORECASE)


def test_no_kernel_contains_a_non_finite_constant():
    for kernel in _kernels():
        assert not _NON_FINITE.search(kernel.source()), kernel.name


def test_every_expression_is_correct_at_vector_widths(gpu_device):
    """Dense layouts of 4 and 2 elements per invocation for every case (the vecN form)."""
    for case in elementwise_cases():
        if DType.F16 in (case.dtype, case.out) and not gpu_device.has_f16:
            continue
        for shape in ((2, 2, 4), (1, 3, 2)):
            run_case(gpu_device, case, 11, shape, "dense", [0, 1, 2], 0)
