"""The module ops' standalone kernels (max / average / adaptive pooling, nearest and bilinear
interpolation) against the numpy oracle, dense and strided, f32, f16 where the adapter has it
and i32; and a planned stream with module ops on the GPU ≈ the interpreter.

Bounds: max pooling and nearest interpolation move values (bit for bit); an average is a sum
in window order then one WGSL division (2.5 ULP); an adaptive average's sum may be ordered
unlike numpy's pairwise one (``reduction_bound``); bilinear weights are one division and one
subtraction in f32 and the two-tap sums may be contracted (a few ULP of the magnitudes).
Ints are exact."""

from __future__ import annotations

import numpy as np
import pytest

from refimpl import ir
from refimpl.dtypes import DType
from refimpl.frontend import Session
from refimpl.interpreter import Interpreter, executed_steps
from refimpl.ops import op_named
from refimpl.semantics import NUMPY_IMPL
from refimpl.shapes import expected_shape
from gpu.errors import UnsupportedOpError
from gpu.runtime.executor import GpuExecutor
from gpu.runtime.unfused import run_op
from tests.gpu.cases import device_input, tensor

SHAPE = (2, 3, 9, 11)
LAYOUTS = {"dense": ((0, 1, 2, 3), 0), "hw_swapped": ((0, 1, 3, 2), 0),
           "padded": ((0, 1, 2, 3), 1)}


def _struct(variant: str):
    return {"MaxPool2d": ir.MaxPool2dOpIr, "AvgPool2d": ir.AvgPool2dOpIr,
            "AdaptiveAvgPool2d": ir.AdaptiveAvgPool2dOpIr,
            "Interpolate": ir.InterpolateOpIr}[variant]


CASES = {
    "max_3x3_s2_p1": ("MaxPool2d", dict(kernel_size=(3, 3), stride=(2, 2), padding=(1, 1),
                                        dilation=(1, 1))),
    "max_2x3_dilated": ("MaxPool2d", dict(kernel_size=(2, 3), stride=(1, 2), padding=(0, 1),
                                          dilation=(2, 2))),
    "avg_3x3_pad_included": ("AvgPool2d", dict(kernel_size=(3, 3), stride=(2, 2),
                                               padding=(1, 1), count_include_pad=True)),
    "avg_2x2_pad_excluded": ("AvgPool2d", dict(kernel_size=(2, 3), stride=(1, 1),
                                               padding=(1, 1), count_include_pad=False)),
    "adaptive_4x5": ("AdaptiveAvgPool2d", dict(output_size=(4, 5))),
    "adaptive_up_13x3": ("AdaptiveAvgPool2d", dict(output_size=(13, 3))),
    "nearest_up": ("Interpolate", dict(output_size=(14, 20), mode="nearest")),
    "nearest_down": ("Interpolate", dict(output_size=(4, 5), mode="nearest")),
    "bilinear_up": ("Interpolate", dict(output_size=(17, 23), mode="bilinear")),
    "bilinear_down": ("Interpolate", dict(output_size=(5, 4), mode="bilinear")),
}


def _op(variant: str, fields: dict, dtype: DType) -> ir.OperationIr:
    """The op on a ``SHAPE`` input, its output shape from the shape rules."""
    x = tensor(0, SHAPE, dtype)
    probe = ir.OperationIr(op_named(f"Module.{variant}"),
                           _struct(variant)(x=x, out=tensor(9, (1,), dtype, True), **fields))
    out = tensor(9, expected_shape(probe, 0), dtype, True)
    return ir.OperationIr(probe.op, _struct(variant)(x=x, out=out, **fields))


def _bound(variant: str, fields: dict, x: np.ndarray, want: np.ndarray) -> np.ndarray | float:
    if not np.issubdtype(want.dtype, np.floating):
        return 0.0
    eps = float(np.finfo(want.dtype).eps)
    mags = np.abs(want.astype(np.float64))
    if variant == "AvgPool2d":
        kh, kw = fields["kernel_size"]
        top = np.abs(x.astype(np.float64)).max()
        return 2 * kh * kw * float(np.finfo(np.float32).eps) * top + 3 * eps * mags
    if variant == "AdaptiveAvgPool2d":
        n = (-(-SHAPE[2] // want.shape[2]) + 1) * (-(-SHAPE[3] // want.shape[3]) + 1)
        top = np.abs(x.astype(np.float64)).max()
        return 2 * n * float(np.finfo(np.float32).eps) * top + 3 * eps * mags
    if variant == "Interpolate" and fields["mode"] == "bilinear":
        return 16 * eps * np.abs(x.astype(np.float64)).max()
    return 0.0


def _values(dtype: DType, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    if dtype.is_float:
        return rng.uniform(-4, 4, SHAPE).astype(dtype.numpy)
    return rng.integers(-1000, 1000, SHAPE).astype(dtype.numpy)


@pytest.mark.parametrize("layout", sorted(LAYOUTS))
@pytest.mark.parametrize("dtype", [DType.F32, DType.F16, DType.I32], ids=lambda d: d.value)
@pytest.mark.parametrize("case", sorted(CASES))
def test_module_op_matches_numpy(gpu_device, case, dtype, layout):
    if not gpu_device.supports(dtype):
        pytest.skip(f"{dtype.value} unsupported")
    variant, fields = CASES[case]
    op = _op(variant, fields, dtype)
    x = _values(dtype)
    want = NUMPY_IMPL[op.name](op.desc, {0: x})
    perm, pad = LAYOUTS[layout]
    got = run_op(gpu_device, op, [device_input(gpu_device.runtime, x, dtype, perm, pad)])
    assert got.shape == want.shape and got.dtype == want.dtype
    diff = np.abs(got.astype(np.float64) - want.astype(np.float64))
    bound = _bound(variant, fields, x, want)
    bad = ~(diff <= bound)
    assert not bad.any(), (f"{case} {dtype.value} {layout}: {int(bad.sum())} elements off, "
                           f"worst {diff.max()} (bound {np.max(bound)})")


def test_module_op_max_pool_keeps_padding_out(gpu_device):
    """All-negative input, padding 1: the maximum is never the padding's value."""
    op = _op("MaxPool2d", CASES["max_3x3_s2_p1"][1], DType.F32)
    x = -np.ones(SHAPE, np.float32) - np.arange(np.prod(SHAPE), dtype=np.float32).reshape(SHAPE)
    got = run_op(gpu_device, op, [x])
    np.testing.assert_array_equal(got, NUMPY_IMPL[op.name](op.desc, {0: x}))
    assert (got < 0).all()


def test_module_op_unknown_interpolate_mode_is_a_clear_error(gpu_device):
    op = _op("Interpolate", dict(output_size=(4, 4), mode="nearest"), DType.F32)
    bad = ir.OperationIr(op.op, ir.InterpolateOpIr(op.desc.x, (4, 4), "bicubic", op.desc.out))
    with pytest.raises(UnsupportedOpError, match="bicubic"):
        run_op(gpu_device, bad, [_values(DType.F32)])


def test_module_ops_in_a_planned_stream_match_the_interpreter(gpu_device):
    """Every module op of the table in one stream, between element-wise ops: no op ends in
    'no GPU kernel', and each result is within its bound of the interpreter's."""
    s = Session(executor=None)
    x = s.random((2, 4, 12, 10), seed=1)
    y = (x * 2.0 + 1.0)
    pooled = y.max_pool2d(3, stride=2, padding=1)
    avg = (y.avg_pool2d(2) + 1.0).exp()
    adaptive = y.adaptive_avg_pool2d((3, 4)) * 0.5
    near = pooled.interpolate((12, 10))
    bil = avg.interpolate((9, 7), mode="bilinear")
    s.sync(pooled, avg, adaptive, near, bil)
    stream = s.close()
    profile, executed = executed_steps(stream, gpu_device.profile())
    want = Interpreter(stream, profile).run(executed)
    got = GpuExecutor(stream, gpu_device, profile).run(executed)
    assert sorted(got) == sorted(want)
    for tid in want:
        w, g = want[tid].astype(np.float64), got[tid].astype(np.float64)
        np.testing.assert_allclose(g, w, rtol=2e-5, atol=1e-5, err_msg=f"t{tid}")
