"""GPU ≈ interpreter on random streams built around reductions: a read chain, a reduction on
any axis (sum, mean, prod, max, min, argmax, argmin), a write chain, sometimes a read value
synced too, or a softmax / layer-norm chain over the last axis; run with the unit, cube or
plane routine (plane: the adapter's ``subgroup`` feature; without it the step falls back) or
autotune's choice. Agreement is ``gpu.check.agreement.compare``: the
reductions' reordering bound (n·ε·Σ|x| for a sum, ``gpu.check.tolerance.reduction_bound``)
carried along each chain. The ``ci`` profile draws 120 streams, ``FUSELAB_REDUCE_STREAMS=N``
any number."""

from __future__ import annotations

import os
from contextlib import contextmanager

import pytest
from hypothesis import HealthCheck, event, given, note, settings
from hypothesis import strategies as st

from refimpl.frontend import Session
from gpu.check.agreement import compare
from tests.gpu.helpers import run_both

pytestmark = pytest.mark.gpu

DIMS = (1, 2, 3, 4, 5, 7, 8, 12, 16, 33)
REDUCTIONS = ("sum_dim", "mean_dim", "prod_dim", "max_dim", "min_dim", "argmax", "argmin")
FLOAT_OPS = ("add", "mul", "tanh", "abs", "neg", "exp", "sub_other")
INT_OPS = ("add", "mul", "abs", "neg", "sub_other")
# 120 in the ci profile; FUSELAB_REDUCE_STREAMS=N for a longer run (a device's 2000)
EXAMPLES = int(os.environ.get("FUSELAB_REDUCE_STREAMS", min(settings.default.max_examples, 120)))


@contextmanager
def _routine(name: str):
    old = os.environ.get("FUSELAB_REDUCE_ROUTINE")
    if name == "autotune":
        os.environ.pop("FUSELAB_REDUCE_ROUTINE", None)
    else:
        os.environ["FUSELAB_REDUCE_ROUTINE"] = name
    try:
        yield
    finally:
        if old is None:
            os.environ.pop("FUSELAB_REDUCE_ROUTINE", None)
        else:
            os.environ["FUSELAB_REDUCE_ROUTINE"] = old


def _apply(x, other, op: str, k: float):
    if op == "add":
        return x + k
    if op == "mul":
        return x * k
    if op == "sub_other":
        return x - other
    return getattr(x, op)() if op != "neg" else -x


@st.composite
def reduce_streams(draw, has_f16: bool):
    rank = draw(st.integers(1, 3))
    shape = tuple(draw(st.sampled_from(DIMS)) for _ in range(rank))
    dtype = draw(st.sampled_from(["f32", "f32", "i32"] + (["f16"] if has_f16 else [])))
    s = Session(executor=None)
    x = s.random(shape, dtype=dtype, seed=draw(st.integers(0, 1000)))
    if draw(st.booleans()) and dtype != "i32":
        x = x * 2  # a reduction as a block's first op closes the fuser: usually one before
    axis = draw(st.integers(0, rank - 1))
    if dtype != "i32" and draw(st.integers(0, 3)) == 0:  # softmax / layer norm
        last = rank - 1
        if draw(st.booleans()):
            e = (x - x.max_dim(last)).exp()
            y = e / e.sum_dim(last)
        else:
            d = x - x.mean_dim(last)
            y = d / ((d * d).mean_dim(last) + 1e-5).sqrt()
        s.sync(y)
        return s.stream, "broadcasted"
    other = s.random(tuple(n if draw(st.booleans()) else 1 for n in shape), dtype=dtype)
    ops = FLOAT_OPS if dtype != "i32" else INT_OPS
    value = x
    for _ in range(draw(st.integers(0, 3))):
        k = draw(st.sampled_from([0.5, 2.0, 3.0])) if dtype != "i32" else \
            draw(st.sampled_from([1, 2, 3]))
        value = _apply(value, other, draw(st.sampled_from(ops)), k)
    reduction = draw(st.sampled_from(REDUCTIONS))
    if reduction == "prod_dim" and dtype != "i32":
        value = value.tanh() * 0.1 + 1  # products of many factors near 1 stay finite
    y = getattr(value, reduction)(axis)
    for _ in range(draw(st.integers(0, 2))):
        y = y + 1 if reduction in ("argmax", "argmin") or dtype == "i32" else y.tanh() * 2
    if draw(st.booleans()):
        s.sync(y, value)
    else:
        s.sync(y)
    return s.stream, reduction


@pytest.fixture(scope="module")
def device(gpu_adapter):
    from gpu.runtime.device import default_device

    return default_device()


@settings(max_examples=EXAMPLES, suppress_health_check=[HealthCheck.too_slow,
                                                        HealthCheck.data_too_large])
@given(data=st.data(), routine=st.sampled_from(["unit", "cube", "plane", "autotune"]))
def test_fused_reduce_streams_agree_with_the_interpreter(device, data, routine):
    stream, kind = data.draw(reduce_streams(device.has_f16))
    note(stream.to_json())
    with _routine(routine):
        expected, got, executor = run_both(device, stream)
    paths = sorted({f"{r.step.fuser if r.step else None}: {r.path}" for r in executor.records})
    event(f"{kind}: {paths}")
    agreement = compare(stream, expected, got)
    assert agreement.ok, agreement.summary()
