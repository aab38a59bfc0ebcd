"""numpy semantics of burn's module ops (pooling, interpolation) on NCHW tensors.

burn counterpart: ``ModuleOperationIr`` (``crates/burn-ir/src/operation.rs``) as computed by
burn-cubecl's ``kernel/pool`` and ``kernel/interpolate``; the index formulas are PyTorch's,
which burn follows. Part of ``refimpl.semantics`` (its ``NUMPY_IMPL`` holds these entries and
its docstring states the rules); split out to keep each module short.

Every kernel loops over the kernel window (or the output grid for adaptive pooling), never
over single elements. f16 inputs accumulate in f32 and round back once.
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

from refimpl.errors import FieldTypeError

__all__ = ["MODULE_IMPL", "INTERPOLATE_TAPS"]


def _accumulator(dtype: np.dtype) -> np.dtype:
    return np.dtype(np.float32) if dtype == np.float16 else dtype


def _pad_hw(x: np.ndarray, pad_h: int, pad_w: int, value: Any) -> np.ndarray:
    return np.pad(x, ((0, 0),) * (x.ndim - 2) + ((pad_h, pad_h), (pad_w, pad_w)),
                  constant_values=value)


def _window(padded: np.ndarray, top: int, left: int, stride: tuple[int, ...],
            out_hw: tuple[int, ...]) -> np.ndarray:
    """The padded elements kernel offset (top, left) touches for every output position."""
    (sh, sw), (oh, ow) = stride, out_hw
    return padded[..., top:top + sh * (oh - 1) + 1:sh, left:left + sw * (ow - 1) + 1:sw]


def _offsets(desc, dilation: tuple[int, int] = (1, 1)):
    kh, kw = desc.kernel_size
    return [(i * dilation[0], j * dilation[1]) for i in range(kh) for j in range(kw)]


def _max_pool2d(desc, env):
    x = env[desc.x.id]
    lowest = -np.inf if x.dtype.kind == "f" else np.iinfo(x.dtype).min
    padded = _pad_hw(x, *desc.padding, lowest)
    out = np.full(desc.out.shape, lowest, dtype=x.dtype)
    for top, left in _offsets(desc, tuple(desc.dilation)):
        out = np.maximum(out, _window(padded, top, left, desc.stride, desc.out.shape[2:]))
    return out


def _window_sum(values: np.ndarray, desc, shape: tuple[int, ...]) -> np.ndarray:
    padded = _pad_hw(values, *desc.padding, 0)
    total = np.zeros(shape, dtype=values.dtype)
    for top, left in _offsets(desc):
        total = total + _window(padded, top, left, desc.stride, desc.out.shape[2:])
    return total


def _avg_pool2d(desc, env):
    x = env[desc.x.id]
    acc = _accumulator(x.dtype)
    total = _window_sum(x.astype(acc), desc, desc.out.shape)
    if desc.count_include_pad:
        kh, kw = desc.kernel_size
        count = acc.type(kh * kw)
    else:
        count = _window_sum(np.ones(x.shape[2:], dtype=acc), desc, desc.out.shape[2:])
    return (total / count).astype(x.dtype)


def _adaptive_windows(in_size: int, out_size: int) -> list[tuple[int, int]]:
    """PyTorch: ``[floor(i*in/out), ceil((i+1)*in/out))``."""
    return [(i * in_size // out_size, -(-(i + 1) * in_size // out_size))
            for i in range(out_size)]


def _adaptive_avg_pool2d(desc, env):
    x = env[desc.x.id]
    acc = _accumulator(x.dtype)
    wide = x.astype(acc)
    out = np.zeros(desc.out.shape, dtype=acc)
    rows = _adaptive_windows(x.shape[2], desc.out.shape[2])
    cols = _adaptive_windows(x.shape[3], desc.out.shape[3])
    for oi, (h0, h1) in enumerate(rows):
        for oj, (w0, w1) in enumerate(cols):
            block = wide[:, :, h0:h1, w0:w1].reshape(x.shape[0], x.shape[1], -1)
            out[:, :, oi, oj] = np.sum(block, axis=-1, dtype=acc) / acc.type(block.shape[-1])
    return out.astype(x.dtype)


# --- interpolate: per axis, a list of (source index, weight) taps -------------------------

Taps = list[tuple[np.ndarray, np.ndarray | None]]


def _nearest_taps(in_size: int, out_size: int) -> Taps:
    source = np.minimum(np.arange(out_size) * in_size // out_size, in_size - 1)
    return [(source, None)]


def _half_pixel_source(in_size: int, out_size: int) -> np.ndarray:
    return (np.arange(out_size, dtype=np.float64) + 0.5) * (in_size / out_size) - 0.5


def _bilinear_taps(in_size: int, out_size: int) -> Taps:
    source = np.maximum(_half_pixel_source(in_size, out_size), 0.0)
    first = np.minimum(np.floor(source).astype(np.int64), in_size - 1)
    second = np.minimum(first + 1, in_size - 1)
    frac = source - first
    return [(first, 1.0 - frac), (second, frac)]


# One entry per mode of ``refimpl.shapes.INTERPOLATE_MODES`` (a test checks the two agree).
INTERPOLATE_TAPS: dict[str, Callable[[int, int], Taps]] = {
    "nearest": _nearest_taps,
    "bilinear": _bilinear_taps,
}


def _resample(values: np.ndarray, axis: int, taps: Taps) -> np.ndarray:
    """``sum_k weight_k * values[taps_k]`` along ``axis``, left to right."""
    total = None
    for index, weight in taps:
        picked = np.take(values, index, axis=axis)
        if weight is not None:
            shape = [1] * values.ndim
            shape[axis] = weight.size
            picked = picked * weight.astype(values.dtype).reshape(shape)
        total = picked if total is None else total + picked
    return total


def _interpolate(desc, env):
    if desc.mode not in INTERPOLATE_TAPS:
        raise FieldTypeError(f"unknown interpolate mode {desc.mode!r} (one of "
                             f"{', '.join(INTERPOLATE_TAPS)})", field="mode")
    x = env[desc.x.id]
    taps_for = INTERPOLATE_TAPS[desc.mode]
    wide = x.astype(_accumulator(x.dtype))
    out_h, out_w = desc.out.shape[2:]
    across = _resample(wide, 3, taps_for(x.shape[3], out_w))
    return _resample(across, 2, taps_for(x.shape[2], out_h)).astype(x.dtype)


MODULE_IMPL = {
    "MaxPool2d": _max_pool2d,
    "AvgPool2d": _avg_pool2d,
    "AdaptiveAvgPool2d": _adaptive_avg_pool2d,
    "Interpolate": _interpolate,
}
