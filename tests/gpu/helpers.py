"""Shared helpers of the GPU tests: one element-wise case run on the GPU and checked against
the numpy oracle (the case builders are in ``cases.py``); one fused block run on the tier-0
kernel (``tier0_block``)."""

from __future__ import annotations

import numpy as np

from refimpl.frontend import Session
from refimpl.interpreter import Interpreter, executed_steps
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


# --- fused reduce streams (tests/gpu/test_fused_reduce*.py) ------------------------------------


def reduce_chain(s: Session, x, name: str, axis: int):
    """A read block, the reduction, a write block (bool and index results cast back)."""
    if name in ("argmax", "argmin"):
        return getattr((x + 5).log().tanh() * 3, name)(axis) + 1
    if name == "prod_dim":
        return (x * 0.1 + 1).prod_dim(axis).tanh() * 3
    return getattr(x + 5, name)(axis).tanh() * 3


def run_both(device, stream, profile=None):
    """(interpreter results, GPU results, executor) for ``stream``."""
    from gpu.runtime.executor import GpuExecutor

    profile, executed = executed_steps(stream, profile or device.profile())
    expected = Interpreter(stream, profile).run(executed)
    executor = GpuExecutor(stream, device, profile)
    return expected, executor.run(executed), executor


def reduce_stream(shape, name, axis, dtype="f32", extra=False):
    s = Session(executor=None)
    x = s.random(shape, seed=3, dtype=dtype)
    y = reduce_chain(s, x, name, axis)
    if extra:  # a read-block value synced too: fuse-on-read writes an output
        z = x * 2 + 1
        s.sync(y, z)
    else:
        s.sync(y)
    return s.stream


def broadcasted_stream(shape, kind: str, seed: int = 3):
    """Softmax as burn writes it (max_dim, sub, exp, sum_dim, div) or a layer norm, over the
    last axis of ``x * 2`` (a reduction as a block's first op closes the fuser)."""
    s = Session(executor=None)
    x = s.random(shape, seed=seed) * 2
    axis = len(shape) - 1
    if kind == "softmax":
        e = (x - x.max_dim(axis)).exp()
        y = e / e.sum_dim(axis)
    else:
        d = x - x.mean_dim(axis)
        y = d / ((d * d).mean_dim(axis) + 1e-5).sqrt()
    s.sync(y)
    return s.stream
def tier0_block(device, memory, launch, scalars, unroll: int | None = None,
                registers: str | None = None) -> dict:
    """Upload every buffer of a block's launch as ``memory`` holds it, run the block's tier-0
    program (``unroll`` positions per invocation, the ``registers`` file; default: the
    device's), read every buffer back: ``{buffer: values}`` (test_emit's ``_gpu_block`` on
    tier 0)."""
    from refimpl.dtypes import DType
    from gpu.codegen.render import scalar_word
    from gpu.codegen.tier0_program import compile_block
    from gpu.runtime.buffers import STORAGE_NUMPY
    from gpu.runtime.fused_launch import signature_of
    from gpu.runtime.tiers import tiers_for

    rt = device.runtime
    handles = launch.input_handles + launch.output_handles
    buffers = {b: rt.upload_buffer(memory.data[b], next(h.dtype for h in handles
                                                       if h.buffer == b))
               for b in sorted({h.buffer for h in handles})}
    program = compile_block(launch.plan.configs[0], signature_of(launch))

    class Bound:
        def buffer(self, handle):
            return buffers[handle.buffer]
    tiers = tiers_for(device)
    kept = tiers.unroll, tiers.registers
    tiers.unroll = unroll if unroll is not None else kept[0]
    tiers.registers = registers if registers is not None else kept[1]
    try:
        tiers.run_tier0(Bound(), program, launch, [scalar_word(v, DType.F32) for v in scalars])
    finally:
        tiers.unroll, tiers.registers = kept
    result = {}
    for b, buffer in buffers.items():
        dtype = next(h.dtype for h in handles if h.buffer == b)
        raw = np.frombuffer(device.queue.read_buffer(buffer), dtype=STORAGE_NUMPY[dtype])
        result[b] = raw[: memory.sizes[b]]
    return result
