"""fastplan's launch planning equals refimpl's, launch by launch.

Every launch refimpl's interpreter plans (``refimpl.interpreter.launch_plan_stream``: fused
steps, matmul and reduce fallbacks, dry runs) is planned a second time by the twin, on a fork
of the same memory: the ``LaunchPlan`` (refimpl's frozen dataclasses), the handles of the
``Launch``, the error class (``LaunchError``) and the memory left behind (handles, next
buffer, buffer sizes) must all be equal. Streams come from ``refimpl.strategies.streams``
(every op kind, drops, syncs, strided inputs) on every device preset, plus the golden corpus.
The per-tensor rules are compared directly on hypothesis-drawn shapes and strides.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

import fastplan
from refimpl import interpreter
from refimpl.planner.launch import execute
from refimpl.devices import PRESETS, profile_named
from refimpl.planner.launch import layout as ref_layout
from refimpl.planner.launch import vectorization as ref_vect
from refimpl.planner.launch.launch import LaunchError
from refimpl.planner.launch.launch import plan_launch as reference_plan_launch
from refimpl.seed import mul_add_exp
from refimpl.strategies import streams
from refimpl.stream import Stream, load_stream

pytestmark = pytest.mark.skipif(not fastplan.COMPILED, reason="fastplan is not compiled")

GOLDEN = sorted((Path(__file__).resolve().parents[1] / "golden" / "streams").glob("*.json"))
DEVICES = st.sampled_from(sorted(PRESETS))


def _outcome(plan_launch, call, memory):
    trace, context, _, device, operands = call
    try:
        launch = plan_launch(trace, context, memory, device, operands)
    except LaunchError as exc:
        return ("LaunchError", str(exc))
    return (launch.plan, launch.input_handles, launch.output_handles)


def _state(memory):
    return memory.handles, memory.sizes, memory.next_buffer


def recorded_launches(stream: Stream, device) -> list[tuple]:
    """(trace, context, memory before, device, matmul operands) of every launch refimpl plans
    for ``stream``, in order."""
    calls = []

    def record(trace, context, memory, device, operands=None):
        calls.append((trace, context, memory.fork(), device, operands))
        return reference_plan_launch(trace, context, memory, device, operands)

    profile, executed = interpreter.executed_steps(stream, device)
    saved = execute.plan_launch
    execute.plan_launch = record
    try:
        interpreter.launch_plan_stream(stream, executed, profile)
    finally:
        execute.plan_launch = saved
    return calls


def assert_same_launches(stream: Stream, device) -> int:
    twin = fastplan.planner_module("launch.launch").plan_launch
    calls = recorded_launches(stream, device)
    for n, call in enumerate(calls):
        ref_memory, fast_memory = call[2].fork(), call[2].fork()
        expected = _outcome(reference_plan_launch, call, ref_memory)
        got = _outcome(twin, call, fast_memory)
        if got != expected and not isinstance(expected[0], str) and not isinstance(got[0], str):
            for field in expected[0].__slots__:
                assert getattr(got[0], field) == getattr(expected[0], field), (n, field)
        assert got == expected, f"launch {n}: {call[0]!r}"
        assert _state(fast_memory) == _state(ref_memory), f"launch {n}: memory"
    return len(calls)


def test_launch_twin_is_compiled():
    module = fastplan.planner_module("launch.launch")
    assert module.__name__ == "fastplan.launch.launch"
    assert module.plan_launch is not reference_plan_launch


@pytest.mark.parametrize("path", GOLDEN, ids=[p.stem for p in GOLDEN])
def test_launch_equivalence_on_the_golden_corpus(path):
    assert_same_launches(load_stream(path), "metal")


def test_launch_equivalence_golden_corpus_has_fused_launches():
    assert sum(len(recorded_launches(load_stream(p), "metal")) for p in GOLDEN) > 0


@pytest.mark.parametrize("shape", [(3, 2 ** 63), (2 ** 62, 4), (2 ** 31, 2 ** 31 + 1), (5, 2 ** 70)],
                         ids=["dim-past-int64", "numel-past-2^62", "numel-2^62-ish", "dim-2^70"])
def test_launch_equivalence_past_int64_extents(shape):
    """plan_launch called directly (a kernel generator's use) on tensors whose element counts
    or dims pass what the C cores compute exactly: refimpl's plan, on the same memory."""
    assert assert_same_launches(mul_add_exp(shape), "metal") > 0


@given(stream=streams(max_ops=12, max_rank=4), device=DEVICES)
def test_launch_equivalence_on_generated_streams(stream, device):
    assert_same_launches(stream, profile_named(device))


# --- the passes, one by one, on the working-state twins -----------------------------------------


def _selection(reference) -> tuple:
    return (reference.kind, reference.arg, reference.shape, reference.strides, reference.dims,
            reference.pos)


def _contents(state) -> tuple:
    """A working state's fields, comparable across refimpl's dataclasses and fastplan's
    ``cdef class`` twins."""
    blocks = [(b.reads, b.writes, _selection(b.reference), b.width, b.inplaces, b.potential_ref)
              for b in state.blocks]
    inputs = [(i.relative, i.glob, i.precision, i.handle, i.strides, i.vector_size,
               i.broadcasted) for i in state.inputs]
    outputs = [None if o is None else (o.relative, o.glob, o.precision, o.handle, o.kind,
                                       o.input_pos, o.vectorization) for o in state.outputs]
    return state.rank, blocks, inputs, outputs, state.runtime_layouts


def _new_state(module, trace, context, memory):
    """``plan_launch``'s starting state, built with ``module``'s public constructors."""
    blocks = [module.BlockPlan({rid: list(ops) for rid, ops in b.reads},
                               {rid: list(ops) for rid, ops in b.writes}) for b in trace.blocks]
    rank = max((len(b.shape_ref) for b in trace.blocks), default=0)
    return module.PlanningState(trace, context, memory, rank, blocks)


def _passes(module, vectorize, device, operands):
    return [module.plan_inputs, module.plan_outputs,
            lambda state: vectorize.plan_vectorization(state, device, operands)]


def _raised(call, state):
    try:
        call(state)
    except Exception as exc:  # noqa: BLE001 - the class is what is compared
        return type(exc)
    return None


def assert_same_passes(stream: Stream, device, prepare=None) -> int:
    """Each launch of ``stream`` planned pass by pass on refimpl's working state and on
    fastplan's: after every pass the states hold equal contents (or both passes raise the same
    class). ``prepare(state)`` edits both states after ``plan_inputs``."""
    from refimpl.planner.launch import launch_planners as ref_planners
    from refimpl.planner.launch import launch_vectorize as ref_vectorize
    fast_planners = fastplan.planner_module("launch.launch_planners")
    fast_vectorize = fastplan.planner_module("launch.launch_vectorize")
    assert fast_planners.PlanningState is not ref_planners.PlanningState
    calls = recorded_launches(stream, device)
    for n, (trace, context, memory, device, operands) in enumerate(calls):
        ref_state = _new_state(ref_planners, trace, context, memory.fork())
        fast_state = _new_state(fast_planners, trace, context, memory.fork())
        assert type(fast_state) is fast_planners.PlanningState
        assert _contents(fast_state) == _contents(ref_state)
        steps = zip(_passes(ref_planners, ref_vectorize, device, operands),
                    _passes(fast_planners, fast_vectorize, device, operands))
        for k, (ref_pass, fast_pass) in enumerate(steps):
            expected = _raised(ref_pass, ref_state)
            assert _raised(fast_pass, fast_state) is expected, (n, k)
            if expected is not None:
                break
            assert _contents(fast_state) == _contents(ref_state), (n, k)
            assert _state(fast_state.memory) == _state(ref_state.memory), (n, k)
            if k == 0 and prepare is not None:
                prepare(ref_state)
                prepare(fast_state)
    return len(calls)


@pytest.mark.parametrize("path", GOLDEN, ids=[p.stem for p in GOLDEN])
def test_launch_passes_on_the_golden_corpus(path):
    assert_same_passes(load_stream(path), "metal")


@given(stream=streams(max_ops=12, max_rank=4), device=DEVICES)
def test_launch_passes_on_generated_streams(stream, device):
    assert_same_passes(stream, profile_named(device))


@pytest.mark.parametrize("position", [-1, 0, 99, -99])
def test_launch_passes_read_a_state_position_as_python_indexes_it(position):
    """A state is public: a potential reference naming input ``position`` is read as refimpl's
    list indexing reads it (from the end when negative; past either end an ``IndexError``),
    never past the list."""
    def prepare(state):
        for block in state.blocks:
            block.potential_ref = ("Normal", position)

    stream = load_stream(GOLDEN[0].with_name("mul_sum_dim_exp.json"))  # a block whose
    assert assert_same_passes(stream, "metal", prepare) > 0  # reference comes from an input


def test_launch_passes_refuse_a_state_entry_of_another_class():
    """An entry of a twin state's lists that is not the twin's record is a ``TypeError``
    naming the field (refimpl fails on the missing attribute); nothing is read through it."""
    planners = fastplan.planner_module("launch.launch_planners")
    vectorize = fastplan.planner_module("launch.launch_vectorize")
    trace, context, memory, device, operands = recorded_launches(mul_add_exp((4, 8)), "metal")[0]
    state = _new_state(planners, trace, context, memory.fork())
    planners.plan_inputs(state)
    planners.plan_outputs(state)
    state.outputs.append(None)
    with pytest.raises(TypeError, match=r"PlanningState\.outputs\[\d+\]: expected a HandleOutput"):
        vectorize.plan_vectorization(state, device, operands)
    state = _new_state(planners, trace, context, memory.fork())
    state.blocks.append("a block")
    with pytest.raises(TypeError, match=r"PlanningState\.blocks\[\d+\]: expected a BlockPlan"):
        planners.plan_inputs(state)
    from refimpl.planner.launch import launch_planners as ref_planners
    with pytest.raises(TypeError):  # the twins' states do not mix
        planners.plan_inputs(_new_state(ref_planners, trace, context, memory.fork()))


# --- the per-tensor rules ---------------------------------------------------------------------

DIMS = st.integers(0, 6)
STRIDES = st.integers(-2, 40)


@st.composite
def layouts(draw):
    rank = draw(st.integers(0, 5))
    shape = tuple(draw(st.lists(DIMS, min_size=rank, max_size=rank)))
    strides = tuple(draw(st.lists(STRIDES, min_size=rank, max_size=rank)))
    return shape, strides


@st.composite
def dense_layouts(draw):
    """A dense layout in a random dim order (so that the dense branches run)."""
    rank = draw(st.integers(1, 5))
    shape = tuple(draw(st.lists(st.integers(1, 5), min_size=rank, max_size=rank)))
    order = draw(st.permutations(range(rank)))
    return shape, ref_layout.strides_for(shape, order)


LAYOUTS = st.one_of(layouts(), dense_layouts())
SIZES = st.sampled_from([(4, 2, 1), (2, 1), (8, 4, 2, 1), (16, 8, 4, 2, 1), (3, 1)])


def _same(name, module_ref, *args):
    twin = getattr(fastplan.planner_module(module_ref.__name__.removeprefix("refimpl.planner.")),
                   name)
    try:
        expected = getattr(module_ref, name)(*args)
    except Exception as exc:  # noqa: BLE001  (the error class must match)
        with pytest.raises(type(exc)):
            twin(*args)
        return
    assert twin(*args) == expected, (name, args)


@given(layout=LAYOUTS)
def test_launch_equivalence_layout_rules(layout):
    shape, strides = layout
    for name in ("is_contiguous", "is_dense", "dim_order", "permuted_innermost_axis"):
        _same(name, ref_layout, shape, strides)
    _same("contiguous_strides", ref_layout, shape)
    _same("strides_for", ref_layout, shape, tuple(range(len(shape)))[::-1])
    _same("is_contiguous_order", ref_layout, tuple(range(len(shape))))
    _same("matrix_batch_layout", ref_layout, strides)
    _same("matrix_batch_layout", ref_layout, list(strides))  # another sequence: refimpl's path
    _same("block_axis", ref_vect, shape, strides)


@given(layout=LAYOUTS, axis=st.integers(-1, 5), sizes=SIZES, multi=st.booleans(),
       dims=st.tuples(st.integers(0, 4), st.integers(0, 4)), cap=st.sampled_from([1, 2, 255]))
def test_launch_equivalence_vectorization_rules(layout, axis, sizes, multi, dims, cap):
    shape, strides = layout
    _same("vectorization_input", ref_vect, shape, strides, axis, sizes)
    _same("vectorization_output", ref_vect, shape, axis, sizes, cap)
    _same("vectorization_reshape", ref_vect, shape, shape[::-1], multi, axis, sizes, cap)
    _same("vectorization_swapped", ref_vect, strides, shape, shape, multi, dims, axis, sizes,
          cap)
