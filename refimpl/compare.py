"""One run's synced tensors against another's, tensor by tensor, judged by a tolerance.

burn counterpart: none (burn's tests use ``assert_approx_eq``). A tolerance is a ``Judge``:
``exact`` here (bit-equal, any two NaNs equal); the GPU's is ``gpu.check.agreement.judge`` (the WGSL
accuracy bounds). Whatever the judge, every tensor's row carries the same measurements, the
largest absolute difference and ULP distance, and a tensor missing from one side or of another
shape or dtype never passes.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Mapping

import numpy as np

from refimpl.dtypes import DType
from refimpl.stream import Stream

__all__ = ["Judge", "TensorComparison", "ulp_distance", "exact", "dtype_name",
           "compare_results"]

Results = Mapping[int, np.ndarray]
# judge(expected, actual, stream) -> {tensor id: (within, detail)}; it sees only tensors
# present on both sides with one shape and dtype; ``stream`` is None when not given.
Judge = Callable[[Results, Results, "Stream | None"], Mapping[int, tuple[bool, str]]]


# --- measurements ---------------------------------------------------------------------------


def _ordered(values: np.ndarray) -> np.ndarray:
    """Float bit patterns mapped to integers that are monotonic in the value."""
    ints = {2: np.int16, 4: np.int32, 8: np.int64}[values.dtype.itemsize]
    bits = values.view(ints).astype(np.int64)
    top = np.int64(1) << (values.dtype.itemsize * 8 - 1)
    return np.where(bits < 0, -(bits + top), bits)


def ulp_distance(actual: np.ndarray, expected: np.ndarray) -> np.ndarray:
    """Representable values between two float arrays of one dtype (0 for equal, ±0 too)."""
    a, e = np.broadcast_arrays(np.asarray(actual), np.asarray(expected).astype(actual.dtype))
    return np.abs(_ordered(np.ascontiguousarray(a)) - _ordered(np.ascontiguousarray(e)))


def _both_nan(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return np.isnan(a) & np.isnan(b) if a.dtype.kind == "f" else np.zeros(a.shape, bool)


def _max_abs(a: np.ndarray, b: np.ndarray) -> float:
    """Largest |a - b| (float64); equal values (infinities too) and two NaNs count 0, a NaN
    beside a number makes it NaN."""
    if a.size == 0:
        return 0.0
    with np.errstate(all="ignore"):
        diff = np.abs(a.astype(np.float64) - b.astype(np.float64))
    same = (a == b) | _both_nan(a, b)
    return float(np.where(same, 0.0, diff).max())


def _max_ulp(a: np.ndarray, b: np.ndarray) -> int | None:
    """Largest ULP distance over elements where neither side is NaN (None for non-floats)."""
    if a.dtype.kind != "f":
        return None
    keep = ~(np.isnan(a) | np.isnan(b))
    return int(ulp_distance(a[keep], b[keep]).max(initial=0))


# --- exact ----------------------------------------------------------------------------------


def exact(expected: Results, actual: Results, stream: Stream | None) -> dict[int, tuple]:
    """The ``exact`` judge: bit-equal (any two NaNs equal; -0 and +0 differ)."""
    verdicts = {}
    for tid, want in expected.items():
        got = actual[tid]
        bits = np.dtype(f"u{want.dtype.itemsize}")
        equal = (np.ascontiguousarray(want).view(bits) == np.ascontiguousarray(got).view(bits)) \
            | _both_nan(want, got)
        bad = int(equal.size - np.count_nonzero(equal))
        verdicts[tid] = (bad == 0, "" if bad == 0 else f"{bad} of {equal.size} elements "
                         "differ in their bits")
    return verdicts



# --- comparing two result sets --------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class TensorComparison:
    """One tensor's row: its measurements (``None`` where they do not apply) and verdict."""

    tensor: int
    shape: tuple[int, ...] | None
    dtype: str
    max_abs: float | None
    max_ulp: int | None
    ok: bool
    detail: str = ""

    def row(self) -> dict:
        """JSON-safe (a non-finite ``max_abs`` as the string "nan" or "inf")."""
        max_abs = self.max_abs if self.max_abs is None or np.isfinite(self.max_abs) else \
            str(self.max_abs)
        return {"id": self.tensor, "shape": None if self.shape is None else list(self.shape),
                "dtype": self.dtype, "max_abs": max_abs, "max_ulp": self.max_ulp,
                "ok": self.ok, "detail": self.detail}


_DTYPE_NAMES = {dtype.numpy: dtype.value for dtype in DType}


def dtype_name(values: np.ndarray) -> str:
    """The stream format's name of an array's dtype (``f32``), else numpy's."""
    return _DTYPE_NAMES.get(values.dtype, values.dtype.name)


def compare_results(expected: Results, actual: Results, judge: Judge,
                    stream: Stream | None = None,
                    names: tuple[str, str] = ("A", "B")) -> tuple[TensorComparison, ...]:
    """Every tensor of either side, by id: ``actual`` judged against ``expected`` by
    ``judge`` (``names`` say which side lacks a tensor)."""
    rows: dict[int, TensorComparison] = {}
    both = {}
    for tid in sorted(set(expected) | set(actual)):
        want, got = expected.get(tid), actual.get(tid)
        if want is None or got is None:
            there = np.asarray(got if want is None else want)
            rows[tid] = TensorComparison(tid, there.shape, dtype_name(there), None, None, False,
                                         f"missing from {names[want is not None]}")
        elif want.shape != got.shape or want.dtype != got.dtype:
            rows[tid] = TensorComparison(tid, None, "-", None, None, False,
                                         f"{names[0]} is {dtype_name(want)}{list(want.shape)}, "
                                         f"{names[1]} is {dtype_name(got)}{list(got.shape)}")
        else:
            both[tid] = (np.asarray(want), np.asarray(got))
    verdicts = judge({t: w for t, (w, _) in both.items()},
                     {t: g for t, (_, g) in both.items()}, stream)
    for tid, (want, got) in both.items():
        ok, detail = verdicts[tid]
        rows[tid] = TensorComparison(tid, want.shape, dtype_name(want), _max_abs(want, got),
                                     _max_ulp(want, got), ok, detail)
    return tuple(rows[tid] for tid in sorted(rows))
