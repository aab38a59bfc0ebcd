"""Fused chains of exact float ops, on the GPU, against the interpreter bit for bit; and what
lavapipe's shader compiler does to such chains when they are not exact.

WGSL lets implementations reassociate, contract and fold arithmetic across the ops of a fused
kernel, so on general data a fused chain is checked within the chain bounds
(``gpu.check.chain_bounds``, ``gpu.check.tolerance.REASSOCIABLE``), which would hide a small codegen
error. Here every value is integer-valued (or a dyadic fraction from a division by a power of
two) and small enough that every intermediate of *any* evaluation order is an exact f32
(``|v| · 2^frac_bits ≤ 2^24``, bounded by evaluating the chain on magnitudes): any rewrite the
compiler may make then keeps the exact result, and the fused kernel must equal the oracle bit
for bit (the sign of a zero aside: WGSL lets implementations ignore it).
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, note, settings
from hypothesis import strategies as st

from refimpl.dtypes import DType
from refimpl.interpreter import Interpreter, executed_steps
from refimpl.strategies.builder import StreamBuilder, strides_for_layout
from refimpl.stream import Stream
from gpu.check.agreement import compare

pytestmark = pytest.mark.gpu

F32 = DType.F32
SHAPES = ((64,), (3, 37), (4, 8, 6))
EXACT = 2.0**24  # every integer up to this is an f32
# Each example compiles a new fused kernel: keep the count small.
CHEAP = settings(max_examples=min(settings().max_examples, 60),
                 suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


class _Chain:
    """A ``StreamBuilder`` that keeps, per f32 value, a bound on the magnitude of anything an
    evaluation of it in any order can produce (the chain evaluated on magnitudes, ``-`` as
    ``+``) and its fractional bits (divisions by powers of two)."""

    def __init__(self) -> None:
        self.builder = StreamBuilder()
        self.size: dict[int, float] = {}
        self.frac: dict[int, int] = {}
        self.divisor: int | None = None

    def value(self, tid: int, size: float, frac: int) -> int:
        self.size[tid], self.frac[tid] = size, frac
        return tid

    def fits(self, size: float, frac: int) -> bool:
        return size * 2.0**frac <= EXACT

    def shape(self, *tids: int) -> tuple[int, ...]:
        return tuple(np.broadcast_shapes(*(self.builder.live[t][0] for t in tids)))


def _pick(draw, chain: _Chain) -> int:
    """A live f32 value, the newest two times out of three (chains are what fuses)."""
    ids = sorted(chain.size)
    return ids[-1] if draw(st.integers(0, 2)) > 0 else draw(st.sampled_from(ids))


def _binary(draw, chain: _Chain, name: str) -> int | None:
    a, b = _pick(draw, chain), _pick(draw, chain)
    (sa, fa), (sb, fb) = (chain.size[a], chain.frac[a]), (chain.size[b], chain.frac[b])
    size, frac = {"Add": (sa + sb, max(fa, fb)), "Sub": (sa + sb, max(fa, fb)),
                  "Mul": (sa * sb, fa + fb)}[name]
    if not chain.fits(size, frac):
        return None
    out = chain.builder.op(f"NumericFloat.{name}", chain.shape(a, b), F32, lhs=a, rhs=b)
    return chain.value(out, size, frac)


def _scalar(draw, chain: _Chain, name: str) -> int | None:
    a = _pick(draw, chain)
    sa, fa = chain.size[a], chain.frac[a]
    if name == "DivScalar":
        k = draw(st.integers(0, 3))
        c, size, frac = draw(st.sampled_from((1.0, -1.0))) * 2.0**k, sa, fa + k
    else:
        c = float(draw(st.integers(-9, 9)))
        size = sa * abs(c) if name == "MulScalar" else sa + abs(c)
        frac = fa
    if not chain.fits(size, frac):
        return None
    out = chain.builder.op(f"NumericFloat.{name}", chain.builder.live[a][0], F32, lhs=a, rhs=c)
    return chain.value(out, size, frac)


def _divide(draw, chain: _Chain) -> int | None:
    """By the input of ±1, ±2, ±4: exact, two more fractional bits."""
    a = _pick(draw, chain)
    size, frac = chain.size[a], chain.frac[a] + 2
    if not chain.fits(size, frac):
        return None
    out = chain.builder.op("NumericFloat.Div", chain.shape(a, chain.divisor), F32, lhs=a,
                           rhs=chain.divisor)
    return chain.value(out, size, frac)


def _select(draw, chain: _Chain) -> int:
    """``max``/``min`` as a comparison and a ``MaskWhere``; ``relu`` as ``MaskFill``."""
    a, b = _pick(draw, chain), _pick(draw, chain)
    size, frac = max(chain.size[a], chain.size[b]), max(chain.frac[a], chain.frac[b])
    builder = chain.builder
    if draw(st.booleans()):
        mask = builder.op("BaseFloat.MaskFill", builder.live[a][0], F32, tensor=a,
                          mask=builder.op("NumericFloat.LowerElem", builder.live[a][0],
                                          DType.BOOL, lhs=a, rhs=0.0), value=0.0)
        return chain.value(mask, chain.size[a], chain.frac[a])
    compare_op = draw(st.sampled_from(("Lower", "Greater")))
    mask = builder.op(f"NumericFloat.{compare_op}", chain.shape(a, b), DType.BOOL, lhs=a, rhs=b)
    out = builder.op("BaseFloat.MaskWhere", chain.shape(a, b), F32, tensor=a, mask=mask,
                     value=b)
    return chain.value(out, size, frac)


def _unary(draw, chain: _Chain, name: str) -> int:
    a = _pick(draw, chain)
    shape = chain.builder.live[a][0]
    if name == "Abs":
        out = chain.builder.op("NumericFloat.Abs", shape, F32, input=a)
        return chain.value(out, chain.size[a], chain.frac[a])
    lo = float(draw(st.integers(-20, 20)))
    hi = lo + float(draw(st.integers(0, 20)))
    out = chain.builder.op("NumericFloat.Clamp", shape, F32, tensor=a, min=lo, max=hi)
    return chain.value(out, max(chain.size[a], abs(lo), abs(hi)), chain.frac[a])


_OPS = ("Add", "Sub", "Mul", "AddScalar", "SubScalar", "MulScalar", "DivScalar", "Div",
        "Abs", "Clamp", "select")


def _append(draw, chain: _Chain, name: str) -> int | None:
    if name in ("Add", "Sub", "Mul"):
        return _binary(draw, chain, name)
    if name.endswith("Scalar"):
        return _scalar(draw, chain, name)
    if name == "Div":
        return _divide(draw, chain)
    if name == "select":
        return _select(draw, chain)
    return _unary(draw, chain, name)


@st.composite
def exact_chains(draw) -> Stream:
    """Integer-valued f32 inputs (dense, broadcast or strided) and a chain of exact ops."""
    chain = _Chain()
    shape = draw(st.sampled_from(SHAPES))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    for k in range(draw(st.integers(2, 4))):
        in_shape = shape if k == 0 else tuple(
            d if keep else 1 for d, keep in zip(shape, draw(st.lists(
                st.booleans(), min_size=len(shape), max_size=len(shape)))))
        top = draw(st.sampled_from((3, 40, 1000)))
        data = rng.integers(-top, top + 1, in_shape).astype(np.float64).tolist()
        tid = chain.builder.add_input(in_shape, F32, draw(strides_for_layout(in_shape)), data)
        chain.value(tid, float(top), 0)
    pow2 = rng.choice([1.0, -1.0, 2.0, -2.0, 4.0, -4.0], shape).tolist()
    chain.divisor = chain.builder.add_input(shape, F32, None, pow2)
    chain.value(chain.divisor, 4.0, 0)
    made: list[int] = []
    for name in draw(st.lists(st.sampled_from(_OPS), min_size=3, max_size=14)):
        out = _append(draw, chain, name)
        if out is not None:
            made.append(out)
    if not made:
        made.append(_binary(draw, chain, "Add") or _unary(draw, chain, "Abs"))
    synced = {made[-1], draw(st.sampled_from(made))}
    chain.builder.sync(tuple(sorted(synced)))
    return chain.builder.build()


def _bits(values: np.ndarray) -> np.ndarray:
    """f32 bits with ``-0.0`` read as ``+0.0`` (WGSL lets implementations ignore the sign of
    a zero)."""
    return (np.asarray(values, dtype=np.float32) + np.float32(0)).view(np.uint32)


def _run(device, stream: Stream):
    from gpu.runtime.executor import GpuExecutor

    profile, executed = executed_steps(stream, device.profile())
    expected = Interpreter(stream, profile).run(executed)
    executor = GpuExecutor(stream, device, profile)
    return expected, executor.run(executed), executor


@CHEAP
@given(stream=exact_chains())
def test_fused_exact_chain_matches_the_oracle_bit_for_bit(gpu_device, stream):
    note(stream.to_json())
    expected, got, executor = _run(gpu_device, stream)
    assert any(record.path == "fused" for record in executor.records)
    for tid in sorted(expected):
        np.testing.assert_array_equal(_bits(got[tid]), _bits(expected[tid]),
                                      err_msg=f"t{tid}: fused kernel not exact")


# --- what lavapipe's compiler does to chains that are not exact ------------------------------
# Pinned on lavapipe (the WGSL permission is the same on every adapter; other adapters are only
# held to the chain bounds). Each case: (a, b) data, the expression, what lavapipe returns.

_A = [-0.009208531, 0.1253081, 54.784676, 1.5, 0.0]
_B = [1515.3223, -16.792967, 7.9308043, 2.0**-30, 3.0]


def _op(builder: StreamBuilder, name: str, lhs: int, rhs: int) -> int:
    return builder.op(f"NumericFloat.{name}", (5,), F32, lhs=lhs, rhs=rhs)


# name: (the chain on ids a, b; what lavapipe returns, on values a, b)
REWRITES = {
    "(a - b) + b -> a": (lambda s, a, b: _op(s, "Add", _op(s, "Sub", a, b), b),
                         lambda a, b: a),
    "(a - b) - a -> -b": (lambda s, a, b: _op(s, "Sub", _op(s, "Sub", a, b), a),
                          lambda a, b: -b),
    "a % (b - b) -> a": (lambda s, a, b: _op(s, "Rem", a, _op(s, "Sub", b, b)),
                         lambda a, b: a),
    "a/a - a/a -> 0": (lambda s, a, b: _op(s, "Sub", _op(s, "Div", a, a), _op(s, "Div", a, a)),
                       lambda a, b: np.zeros_like(a)),
}


def _is_lavapipe(device) -> bool:
    return device.name.startswith("llvmpipe")


@pytest.mark.parametrize("name", sorted(REWRITES))
def test_compiler_rewrites_are_within_the_chain_bounds(gpu_device, name, monkeypatch):
    """Fused, ``(a - b) + b`` may be computed as ``a`` (the oracle rounds ``a - b`` first):
    inside the chain bound. A NaN the oracle makes from finite values (``b - b = 0`` as a
    divisor, ``0/0``) may be folded away: the non-finite class. Neither is a failure. (The
    specialised kernel: tier 0 interprets each op, nothing to rewrite across them.)"""
    monkeypatch.setenv("FUSELAB_TIERS", "specialised-only")
    build, lavapipe = REWRITES[name]
    builder = StreamBuilder()
    a, b = (builder.add_input((5,), F32, data=v) for v in (_A, _B))
    out = build(builder, a, b)
    builder.sync((out,))
    stream = builder.build()
    expected, got, _ = _run(gpu_device, stream)
    agreement = compare(stream, expected, got, nonfinite=True)
    assert agreement.ok, agreement.summary()
    if _is_lavapipe(gpu_device):
        values = [np.array(v, dtype=np.float32) for v in (_A, _B)]
        np.testing.assert_array_equal(_bits(got[out]), _bits(lavapipe(*values)))
        assert not np.array_equal(_bits(got[out]), _bits(expected[out]))
