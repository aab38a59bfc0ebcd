"""GPU ≈ interpreter: the comparison within the chained WGSL accuracy bounds, and the dtype
mapping that lets any stream run on WGSL.

burn counterpart: none. ``compare(stream, expected, actual)`` checks every synced tensor of a
GPU run against the interpreter's (or the eager oracle's) within
``gpu.check.chain_bounds.chain_bounds(stream)``: an element passes when it is equal (two NaNs
included), within its bound, or a subnormal flushed to zero; elements in a documented class
are counted, not failed:

* ``nonfinite``: a NaN or an infinity on the element's chain or in the expected value (WGSL
  lets implementations assume neither exists); with ``nonfinite=True`` the ones that differ
  are counted too;
* ``unbounded``: no accuracy bound applies (outside an op's domain, or a comparison or
  ``argmax`` decided by a rounding difference);
* ``divergent``: the expected value differs from the eager oracle the bounds are computed
  from (a refimpl finding, reported, not checked here).

``judge(expected, actual, stream)`` is ``fuselab compare --tolerance gpu``'s and ``run --check``'s
verdict per tensor: ``compare`` when the stream is known, else every element within
``gpu.check.tolerance.LOOSEST_SINGLE_OP`` (``close_mask``).

``wgsl_stream(stream, has_f16)`` maps a stream onto the dtypes WGSL has (f64 → f32, 64/16/8-bit
ints → 32-bit ints of the same signedness, f16 → f32 without ``shader-f16``) so that the
strategies' streams run on any adapter; both sides then run the mapped stream.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from types import MappingProxyType
from typing import Mapping

import numpy as np

from refimpl.dtypes import DType
from refimpl.errors import FuselabError, ResultsFileError
from refimpl.ir import FieldKind, OperationIr, Sync, TensorIr
from refimpl.stream import Stream
from gpu.check.chain_bounds import Bound, chain_bounds
from gpu.check.tolerance import LOOSEST_SINGLE_OP, close_mask

__all__ = ["TensorAgreement", "Agreement", "chain_bounds", "compare", "judge", "wgsl_stream",
           "WGSL_DTYPE_MAP"]


# --- dtypes WGSL has -----------------------------------------------------------------------------

WGSL_DTYPE_MAP: Mapping[DType, DType] = MappingProxyType({
    DType.F64: DType.F32, DType.I64: DType.I32, DType.I16: DType.I32, DType.I8: DType.I32,
    DType.U64: DType.U32, DType.U16: DType.U32, DType.U8: DType.U32,
})


def _mapped(dtype: DType, has_f16: bool) -> DType:
    if dtype is DType.F16 and not has_f16:
        return DType.F32
    return WGSL_DTYPE_MAP.get(dtype, dtype)


def _tensor(t: TensorIr, has_f16: bool) -> TensorIr:
    return TensorIr(t.id, t.shape, _mapped(t.dtype, has_f16), t.status)


def _op(op: OperationIr, has_f16: bool) -> OperationIr:
    changes = {}
    for name, kind in op.desc.SCHEMA:
        value = getattr(op.desc, name)
        if kind is FieldKind.TENSOR:
            changes[name] = _tensor(value, has_f16)
        elif kind is FieldKind.TENSORS:
            changes[name] = tuple(_tensor(t, has_f16) for t in value)
    return OperationIr(op.op, replace(op.desc, **changes))


def wgsl_stream(stream: Stream, has_f16: bool = True) -> Stream:
    """``stream`` with every dtype mapped to one WGSL holds (same shapes, data and seeds)."""
    inputs = {tid: replace(spec, dtype=_mapped(spec.dtype, has_f16))
              for tid, spec in stream.inputs.items()}
    items = tuple(item if isinstance(item, Sync) else _op(item, has_f16)
                  for item in stream.items)
    return Stream(inputs, items)


# --- comparison -------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class TensorAgreement:
    """One synced tensor: how many elements were checked, failed, and belong to the two
    documented classes (``nonfinite``: a NaN/inf on the chain or in the expected value;
    ``unbounded``: no accuracy bound applies), the elements where the expected values
    (interpreter) differ from the eager oracle the bounds are computed from (``divergent``:
    a refimpl finding, not checked here), and the worst offenders."""

    tensor: int
    elements: int
    mismatched: int
    nonfinite: int
    nonfinite_differ: int
    unbounded: int
    divergent: int = 0
    worst: tuple[str, ...] = ()

    @property
    def ok(self) -> bool:
        return self.mismatched == 0


@dataclass(frozen=True, slots=True)
class Agreement:
    tensors: tuple[TensorAgreement, ...]

    @property
    def ok(self) -> bool:
        return all(t.ok for t in self.tensors)

    def summary(self) -> str:
        """One line per tensor that failed, or a one-line count when all agree."""
        bad = [t for t in self.tensors if not t.ok]
        if not bad:
            checked = sum(t.elements - t.nonfinite - t.unbounded - t.divergent
                          for t in self.tensors)
            return (f"{len(self.tensors)} tensor(s) agree ({checked} elements checked, "
                    f"{sum(t.nonfinite for t in self.tensors)} non-finite, "
                    f"{sum(t.unbounded for t in self.tensors)} unbounded, "
                    f"{sum(t.divergent for t in self.tensors)} interpreter != eager)")
        return "\n".join(f"t{t.tensor}: {t.mismatched} of {t.elements} elements outside the "
                         f"chain tolerance\n" + "\n".join(f"  {w}" for w in t.worst)
                         for t in bad)


def _equal(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    same = a == b
    if a.dtype.kind == "f":
        same |= np.isnan(a) & np.isnan(b)
    return same


def _agree(tid: int, actual: np.ndarray, expected: np.ndarray, bound: Bound,
           nonfinite: bool) -> TensorAgreement:
    if actual.shape != expected.shape or actual.dtype != expected.dtype:
        return TensorAgreement(tid, expected.size, max(expected.size, 1), 0, 0, 0, 0, (
            f"got {actual.dtype}{list(actual.shape)}, expected "
            f"{expected.dtype}{list(expected.shape)}",))
    oracle, err = (np.broadcast_to(v, expected.shape) for v in bound)
    tainted, unbounded = np.isnan(err), np.isinf(err)
    divergent = ~_equal(expected, oracle.astype(expected.dtype))
    with np.errstate(all="ignore"):
        same = _equal(actual, expected)
        if expected.dtype.kind == "f":
            tainted = tainted | ~np.isfinite(expected)
            diff = np.abs(actual.astype(np.float64) - expected.astype(np.float64))
            tiny = float(np.finfo(expected.dtype).tiny)
            same |= (diff <= err) | ((np.abs(expected) < tiny) & (np.abs(actual) < tiny))
    divergent &= ~tainted
    bad = ~(same | tainted | unbounded | divergent)
    worst = tuple(f"at {tuple(int(i) for i in idx)}: got {actual[tuple(idx)]!r}, expected "
                  f"{expected[tuple(idx)]!r}, bound {err[tuple(idx)]:.3g}"
                  for idx in np.argwhere(bad)[:5])
    differ = int((tainted & ~same).sum()) if nonfinite else 0
    return TensorAgreement(tid, expected.size, int(bad.sum()), int(tainted.sum()), differ,
                           int((unbounded & ~tainted).sum()), int(divergent.sum()), worst)


def compare(stream: Stream, expected: Mapping[int, np.ndarray],
            actual: Mapping[int, np.ndarray], nonfinite: bool = False) -> Agreement:
    """Check ``actual`` (GPU) against ``expected`` (interpreter) within the chain bounds.
    ``nonfinite=True`` also counts the differences among tainted elements (never failures)."""
    bounds = chain_bounds(stream)
    tensors = []
    for tid in sorted(expected):
        if tid not in actual:
            tensors.append(TensorAgreement(tid, expected[tid].size, 1, 0, 0, 0, 0,
                                           ("missing from the GPU results",)))
            continue
        bound = bounds.get(tid, (expected[tid], np.zeros(expected[tid].shape)))
        tensors.append(_agree(tid, np.asarray(actual[tid]), np.asarray(expected[tid]), bound,
                              nonfinite))
    return Agreement(tuple(tensors))


# --- verdicts for fuselab compare / run --check -----------------------------------------------


def _detail(t: TensorAgreement) -> str:
    if not t.ok:
        worst = f"; {t.worst[0]}" if t.worst else ""
        return f"{t.mismatched} of {t.elements} elements outside the chain bound{worst}"
    skipped = [f"{n} {name}" for n, name in ((t.nonfinite, "non-finite"),
                                              (t.unbounded, "unbounded"),
                                              (t.divergent, "expected != eager")) if n]
    return f"not checked: {', '.join(skipped)}" if skipped else ""


def judge(expected: Mapping[int, np.ndarray], actual: Mapping[int, np.ndarray],
          stream: Stream | None = None) -> dict[int, tuple[bool, str]]:
    """Per tensor (within, detail): ``compare``'s chain bounds when ``stream`` is given (the
    stream both results came from), else ``LOOSEST_SINGLE_OP`` for every element."""
    if stream is not None:
        try:
            agreement = compare(stream, expected, actual)
        except FuselabError:
            raise
        except ValueError as exc:  # a bound that does not fit the tensor it names
            raise ResultsFileError(f"the results do not come from this stream ({exc})") \
                from None
        return {t.tensor: (t.ok, _detail(t)) for t in agreement.tensors}
    verdicts = {}
    for tid, want in expected.items():
        ok = close_mask(np.asarray(actual[tid]), np.asarray(want), LOOSEST_SINGLE_OP, ())
        bad = int(ok.size - np.count_nonzero(ok))
        verdicts[tid] = (bad == 0, f"{bad} of {ok.size} elements outside the loosest "
                                   "single-op allowance" if bad else "")
    return verdicts
