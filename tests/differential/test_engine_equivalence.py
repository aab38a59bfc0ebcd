"""fastplan's fusers equal refimpl's, op by op, on generated relative op sequences.

Each of the five fusers and its twin is fed the same ops the way the search feeds a block:
op by op, and when the fuser closes, ``finish`` (if it is ready), ``reset`` and the closing op
again. After every op the two must agree on ``status``, ``len``, ``properties``,
``closed_reason``, ``closed_log`` and ``estimate_bindings``; every ``finish`` must give equal
optimizations (refimpl's dataclasses, compared with ``==``), and an op that makes refimpl raise
must make fastplan raise the same class.

Three sources of ops: valid streams (``refimpl.strategies.streams``), frontend programs shaped
like transformer blocks (softmax, layer norm, matmul epilogues: the ReduceBroadcasted paths),
and arbitrary well-typed relative ops (unknown ids, clashing dtypes, odd statuses and axes,
rank-0 views, long Cats, non-int scalars).
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, note, settings
from hypothesis import strategies as st

import fastplan
from refimpl.dtypes import DType
from refimpl.frontend import Session
from refimpl.ir import FieldKind, OperationIr, TensorIr, TensorStatus
from refimpl.ops import OPS
from refimpl.planner.engine.fuser import FuserStatus
from refimpl.planner.stream.relative import OperationConverter, to_relative
from refimpl.strategies import streams

pytestmark = pytest.mark.skipif(not fastplan.COMPILED, reason="fastplan is not compiled")

FUSERS = (("fusers.elemwise", "ElementWiseFuser"), ("fusers.matmul", "MatmulFuser"),
          ("fusers.reduce", "ReduceFuser"), ("fusers.reduce_broadcasted", "ReduceBroadcastedFuser"),
          ("fusers.nhwc", "NHWCRelayoutFuser"))
MAX_BINDINGS = st.sampled_from((3, 5, 7, 28))


def _pair(module: str, name: str, max_bindings: int):
    import importlib

    reference = getattr(importlib.import_module(f"refimpl.planner.{module}"), name)
    twin = getattr(fastplan.planner_module(module), name)
    return reference(max_bindings), twin(max_bindings)


def _outcome(call, *args):
    """The result of ``call(*args)``, or the class of what it raised."""
    try:
        return ("ok", call(*args))
    except Exception as exc:  # noqa: BLE001 - the class is what is compared
        return ("raised", type(exc))


def _best_index(fuser):
    """The block's pick among ``[fuser]`` (``find_best_fuser_index``), by the fuser's own
    planner: fastplan's reads its five fusers' properties in C, not through ``properties``."""
    import importlib

    package = "fastplan" if type(fuser).__module__.startswith("fastplan") else "refimpl.planner"
    return importlib.import_module(f"{package}.search.block").find_best_fuser_index([fuser])


def observe(fuser) -> tuple:
    """Everything the search and the log read from a fuser."""
    return (_outcome(fuser.status), _outcome(fuser.len), _outcome(fuser.properties),
            _outcome(_best_index, fuser), _outcome(lambda: fuser.closed_reason),
            _outcome(lambda: getattr(fuser, "closed_log", None)),
            _outcome(fuser.estimate_bindings))


def transcript(fuser, ops) -> list:
    """What a search sees feeding ``ops`` to ``fuser`` block by block."""
    seen = []
    for op in ops:
        seen.append((_outcome(fuser.fuse, op), observe(fuser)))
        if fuser.status() is FuserStatus.Closed:
            if fuser.properties().ready:
                seen.append(_outcome(fuser.finish))
            fuser.reset()
            seen.append((_outcome(fuser.fuse, op), observe(fuser)))
    seen.append(_outcome(fuser.finish))
    return seen


def assert_twins_agree(ops, max_bindings: int) -> None:
    for module, name in FUSERS:
        reference, twin = _pair(module, name, max_bindings)
        expected = transcript(reference, ops)
        actual = transcript(twin, ops)
        for step, (want, got) in enumerate(zip(expected, actual)):
            assert got == want, f"{name}, step {step}: fastplan {got} != refimpl {want}"
        assert len(actual) == len(expected), name


def relative_ops(items) -> list[OperationIr]:
    converter = OperationConverter()
    return [to_relative(item, converter) for item in items if isinstance(item, OperationIr)]


# --- valid streams --------------------------------------------------------------------------------


@given(stream=streams(max_ops=30), max_bindings=MAX_BINDINGS)
@settings(suppress_health_check=[HealthCheck.too_slow])
def test_engine_fastplan_matches_refimpl_on_valid_streams(stream, max_bindings):
    assert_twins_agree(relative_ops(stream.items), max_bindings)


# --- frontend programs: reductions broadcast back, matmul epilogues -------------------------------


def _softmax(x):
    m = x.max_dim(x.rank - 1)
    e = (x - m).exp()
    return e / e.sum_dim(x.rank - 1)


def _layer_norm(x):
    mean = x.mean_dim(x.rank - 1)
    centered = x - mean
    var = (centered * centered).mean_dim(x.rank - 1)
    return centered / (var + 1e-5).sqrt()


def _mlp(x, w):
    h = x.matmul(w)
    return (h * 0.5 + 1.0).tanh()


def _views(x):
    return x.swap_dims(0, x.rank - 1).exp().swap_dims(0, x.rank - 1) + x


STEPS = (_softmax, _layer_norm, lambda x: x.exp() * 2.0 - x.sum_dim(0), _views,
         lambda x: x - (x * x).sum_dim(x.rank - 1), lambda x: x.abs().clamp(0.0, 1.0))


@st.composite
def programs(draw) -> list[OperationIr]:
    """A recorded frontend program: a few steps applied to one activation."""
    rows, cols = draw(st.sampled_from(((4, 8), (2, 6), (8, 8), (1, 4), (3, 1))))
    session = Session(executor=None)
    x = session.random((rows, cols), seed=0)
    weight = session.random((cols, cols), seed=1)
    for step in draw(st.lists(st.integers(0, len(STEPS)), min_size=1, max_size=6)):
        x = _mlp(x, weight) if step == len(STEPS) else STEPS[step](x)
    session.sync(x)
    return relative_ops(session.stream.items)


@given(ops=programs(), max_bindings=MAX_BINDINGS)
@settings(suppress_health_check=[HealthCheck.too_slow])
def test_engine_fastplan_matches_refimpl_on_programs(ops, max_bindings):
    assert_twins_agree(ops, max_bindings)


# --- arbitrary well-typed relative ops ------------------------------------------------------------

SHAPES = ((), (0,), (1,), (2,), (1, 2), (0, 2), (1, 0), (2, 1), (1, 2, 3), (1, 0, 3), (0, 0),
          (300, 2**40), (0, 300))  # ids past the small-int cache, past 32 bits
DTYPES = (DType.F32, DType.F32, DType.F16, DType.I32, DType.BOOL, DType.U8)


@st.composite
def tensors(draw) -> TensorIr:
    return TensorIr(draw(st.integers(0, 7) | st.sampled_from((-1, 1000, 2**62))),
                    draw(st.sampled_from(SHAPES)),
                    draw(st.sampled_from(DTYPES)), draw(st.sampled_from(tuple(TensorStatus))))


def _field(kind: FieldKind):
    if kind is FieldKind.TENSOR:
        return tensors()
    if kind is FieldKind.TENSORS:
        return st.lists(tensors(), min_size=1, max_size=9).map(tuple)
    if kind is FieldKind.SCALAR:
        return st.one_of(st.integers(0, 4), st.integers(0, 4), st.just(1.5))
    if kind is FieldKind.INT:
        return st.integers(-2, 3)
    if kind is FieldKind.INTS:
        return st.lists(st.integers(0, 3), max_size=4).map(tuple)
    if kind is FieldKind.RANGES:
        return st.lists(st.tuples(st.integers(0, 2), st.integers(0, 2)), max_size=3).map(tuple)
    if kind is FieldKind.BOOL:
        return st.booleans()
    return st.just("nearest")


# Weighted towards the ops the fusers take; every op of the table can appear.
_FUSED = tuple(op for op in OPS if op.fuse is not None or op.kind.name in (
    "VIEW", "REDUCE_DIM", "MATMUL", "MODULE", "DROP"))


@st.composite
def arbitrary_ops(draw) -> OperationIr:
    op = draw(st.sampled_from(_FUSED) | st.sampled_from(OPS))
    fields = {name: draw(_field(kind)) for name, kind in op.struct.SCHEMA}
    return OperationIr(op, op.struct(**fields))


@given(ops=st.lists(arbitrary_ops(), min_size=1, max_size=25), max_bindings=MAX_BINDINGS)
@settings(suppress_health_check=[HealthCheck.too_slow])
def test_engine_fastplan_matches_refimpl_on_arbitrary_ops(ops, max_bindings):
    note(f"ops={ops!r}")
    assert_twins_agree(ops, max_bindings)


# --- clones ---------------------------------------------------------------------------------------


@given(stream=streams(max_ops=20), split=st.integers(0, 20), max_bindings=MAX_BINDINGS)
@settings(suppress_health_check=[HealthCheck.too_slow])
def test_engine_fastplan_clone_matches_refimpl(stream, split, max_bindings):
    ops = relative_ops(stream.items)
    for module, name in FUSERS:
        reference, twin = _pair(module, name, max_bindings)
        for op in ops[:split]:
            assert _outcome(reference.fuse, op) == _outcome(twin.fuse, op)
        ref_clone, twin_clone = reference.clone(), twin.clone()
        assert transcript(twin_clone, ops[split:]) == transcript(ref_clone, ops[split:]), name
        # the originals did not move
        assert observe(twin) == observe(reference), name
        assert _outcome(twin.finish) == _outcome(reference.finish), name
