"""Movement and indexed ops on the GPU (Reshape, SwapDims, Permute, Flip, Expand, Slice, Cat,
Gather, Select) against the numpy oracle: exact, on strided and padded inputs."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from refimpl import ir
from refimpl.dtypes import DType
from refimpl.ops import op_named
from refimpl.semantics import NUMPY_IMPL
from gpu.runtime.unfused import run_op
from tests.gpu.cases import device_input, operand, OpCase, tensor

DTYPES = (DType.F32, DType.F16, DType.I32, DType.BOOL)
CATEGORY = {DType.F32: "BaseFloat", DType.F16: "BaseFloat", DType.I32: "BaseInt",
            DType.BOOL: "BaseBool"}
CHEAP = settings(max_examples=min(settings().max_examples, 10))

shapes3 = st.tuples(st.integers(1, 4), st.integers(1, 5), st.integers(1, 6))


def _values(rng, dtype: DType, shape) -> np.ndarray:
    case = OpCase(op_named(f"{CATEGORY[dtype]}.Reshape"), dtype, dtype)
    return operand(rng, case, 0, shape, dtype)


def _reshape(rng, x):
    a, b, c = x.shape
    shape = [(c, a * b), (a * b * c,), (b, 1, a, c)][int(rng.integers(0, 3))]
    return ir.ShapeOpIr(x, tensor(9, shape, x.dtype, True))


def _swap(rng, x):
    d1, d2 = (int(v) for v in rng.choice(3, 2, replace=False))
    shape = list(x.shape)
    shape[d1], shape[d2] = shape[d2], shape[d1]
    return ir.SwapDimsOpIr(x, tensor(9, shape, x.dtype, True), d1, d2)


def _permute(rng, x):
    axes = tuple(int(a) for a in rng.permutation(3))
    return ir.PermuteOpIr(x, tensor(9, [x.shape[a] for a in axes], x.dtype, True), axes)


def _flip(rng, x):
    axes = tuple(a for a in range(3) if rng.random() < 0.6)
    return ir.FlipOpIr(x, tensor(9, x.shape, x.dtype, True), axes)


def _slice(rng, x):
    ranges = []
    for size in x.shape[: int(rng.integers(1, 4))]:
        start = int(rng.integers(0, size))
        ranges.append((start, int(rng.integers(start + 1, size + 1))))
    shape = [e - s for s, e in ranges] + list(x.shape[len(ranges):])
    return ir.SliceOpIr(x, tuple(ranges), tensor(9, shape, x.dtype, True))


BUILDERS = {"Reshape": _reshape, "SwapDims": _swap, "Permute": _permute, "Flip": _flip,
            "Slice": _slice}


def _run(device, op, values, perm, pad):
    rt = device.runtime
    inputs = [device_input(rt, v, t.dtype, perm, pad) if v.ndim == 3 else v
              for v, t in zip(values, op.inputs())]
    env = {t.id: v for t, v in zip(op.inputs(), values)}
    expected = NUMPY_IMPL[op.name](op.desc, env)
    actual = run_op(device, op, inputs)
    assert actual.dtype == expected.dtype and actual.shape == expected.shape
    np.testing.assert_array_equal(actual, expected)


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: d.value)
@pytest.mark.parametrize("variant", list(BUILDERS))
@CHEAP
@given(seed=st.integers(0, 2**32 - 1), shape=shapes3, perm=st.permutations([0, 1, 2]),
       pad=st.integers(0, 2))
def test_movement_matches_numpy(gpu_device, variant, dtype, seed, shape, perm, pad):
    if not gpu_device.supports(dtype):
        pytest.skip(f"{dtype.value} unsupported")
    rng = np.random.default_rng(seed)
    x = tensor(0, shape, dtype)
    op = ir.OperationIr(op_named(f"{CATEGORY[dtype]}.{variant}"), BUILDERS[variant](rng, x))
    _run(gpu_device, op, [_values(rng, dtype, shape)], perm, pad)


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: d.value)
@CHEAP
@given(seed=st.integers(0, 2**32 - 1), shape=shapes3, grow=st.integers(0, 2),
       perm=st.permutations([0, 1, 2]), pad=st.integers(0, 1))
def test_expand_matches_numpy(gpu_device, dtype, seed, shape, grow, perm, pad):
    rng = np.random.default_rng(seed)
    small = tuple(1 if rng.random() < 0.5 else d for d in shape)
    out = tuple(int(d) for d in rng.integers(1, 4, grow)) + shape
    op = ir.OperationIr(op_named(f"{CATEGORY[dtype]}.Expand"),
                        ir.ShapeOpIr(tensor(0, small, dtype), tensor(9, out, dtype, True)))
    _run(gpu_device, op, [_values(rng, dtype, small)], perm, pad)


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: d.value)
@CHEAP
@given(seed=st.integers(0, 2**32 - 1), shape=shapes3, count=st.integers(1, 5),
       dim=st.integers(0, 2), perm=st.permutations([0, 1, 2]), pad=st.integers(0, 1))
def test_cat_matches_numpy(gpu_device, dtype, seed, shape, count, dim, perm, pad):
    rng = np.random.default_rng(seed)
    shapes = [tuple(int(rng.integers(1, 4)) if d == dim else s for d, s in enumerate(shape))
              for _ in range(count)]
    inputs = tuple(tensor(j, s, dtype) for j, s in enumerate(shapes))
    out_shape = tuple(sum(s[dim] for s in shapes) if d == dim else n for d, n in enumerate(shape))
    op = ir.OperationIr(op_named(f"{CATEGORY[dtype]}.Cat"),
                        ir.CatOpIr(inputs, dim, tensor(9, out_shape, dtype, True)))
    _run(gpu_device, op, [_values(rng, dtype, s) for s in shapes], perm, pad)


def test_cat_uses_three_bindings_per_launch(gpu_device):
    """Cat of more inputs than the portable binding limit still runs (one copy per input)."""
    values = [np.full((2, 3), j, dtype=np.float32) for j in range(12)]
    inputs = tuple(tensor(j, (2, 3), DType.F32) for j in range(12))
    op = ir.OperationIr(op_named("BaseFloat.Cat"),
                        ir.CatOpIr(inputs, 0, tensor(99, (24, 3), DType.F32, True)))
    np.testing.assert_array_equal(run_op(gpu_device, op, values), np.concatenate(values))


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: d.value)
@pytest.mark.parametrize("variant", ["Gather", "Select"])
@CHEAP
@given(seed=st.integers(0, 2**32 - 1), shape=shapes3, dim=st.integers(0, 2),
       picks=st.integers(1, 6), index_dtype=st.sampled_from([DType.I32, DType.U32]),
       perm=st.permutations([0, 1, 2]), pad=st.integers(0, 1))
def test_indexed_matches_numpy(gpu_device, variant, dtype, seed, shape, dim, picks, index_dtype,
                               perm, pad):
    rng = np.random.default_rng(seed)
    if variant == "Gather":
        index_shape = tuple(picks if d == dim else s for d, s in enumerate(shape))
        out_shape = index_shape
    else:
        index_shape = (picks,)
        out_shape = tuple(picks if d == dim else s for d, s in enumerate(shape))
    indices = rng.integers(0, shape[dim], size=index_shape).astype(index_dtype.numpy)
    struct = ir.GatherOpIr if variant == "Gather" else ir.SelectOpIr
    op = ir.OperationIr(op_named(f"{CATEGORY[dtype]}.{variant}"),
                        struct(tensor(0, shape, dtype), dim, tensor(1, index_shape, index_dtype),
                               tensor(9, out_shape, dtype, True)))
    _run(gpu_device, op, [_values(rng, dtype, shape), indices], perm, pad)
