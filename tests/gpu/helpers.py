"""Shared helpers of the GPU tests: one element-wise case run on the GPU and checked against
the numpy oracle (the case builders are in ``cases.py``)."""

from __future__ import annotations

import numpy as np

from refimpl.semantics import NUMPY_IMPL
from gpu.check.tolerance import assert_close_ulp
from gpu.runtime.unfused import run_op
from tests.gpu.cases import (ARITY, build_op, device_input, fix_powf_domain, operand,
                             scalar_arrays, scalar_operands)


def _shapes(rng, shape, count: int, layout: str) -> list[tuple[int, ...]]:
    if layout != "broadcast":
        return [tuple(shape)] * count
    shapes = []
    for _ in range(count):
        keep = rng.random(len(shape)) < 0.5
        shapes.append(tuple(d if k else 1 for d, k in zip(shape, keep)))
    if count == 1:
        shapes[0] = tuple(shape)
    return shapes


def run_case(device, case, seed, shape, layout, perm, pad):
    """Build the op, run GPU and oracle, compare; returns nothing, asserts."""
    rng = np.random.default_rng(seed)
    n_tensors, n_scalars = ARITY[case.op.struct]
    shapes = _shapes(rng, shape, n_tensors, layout)
    if case.op.variant == "Powf":  # the domain fix is per element: only the exponent broadcasts
        shapes[0] = tuple(shape)
    scalars = scalar_operands(rng, case, n_scalars)
    op = build_op(case, shapes, scalars, out_shape=shape)
    values = [operand(rng, case, j, t.shape, t.dtype) for j, t in enumerate(op.inputs())]
    if case.op.variant == "Powf":
        values[0] = fix_powf_domain(values[0], np.broadcast_to(values[1], values[0].shape))
    if case.op.variant == "PowfScalar":
        values[0] = fix_powf_domain(values[0], np.asarray(scalar_arrays(op)[0]))
    env = {t.id: v for t, v in zip(op.inputs(), values)}
    expected = NUMPY_IMPL[op.name](op.desc, env)
    rt = device.runtime
    gpu_inputs = values if layout == "dense" else [
        device_input(rt, v, t.dtype, perm, pad) for v, t in zip(values, op.inputs())]
    actual = run_op(device, op, gpu_inputs)
    assert_close_ulp(actual, expected, op.name, values + scalar_arrays(op))
