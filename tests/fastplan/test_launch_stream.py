"""fastplan's launch planning of a whole stream (``fastplan.launch.execute.launch_plan_stream``,
with and without its ``LaunchMemo``) against refimpl's
(``refimpl.interpreter.launch_plan_stream``): the same ``PlanStep``s, aliases and block widths
included, or an error of the same class.

* every golden stream on every device preset: no memo, a fresh memo, the same memo twice (the
  second run is all hits), and ``fastplan.planner._launch_planned`` (what ``plan`` runs);
* drawn streams (``refimpl.strategies.streams`` / ``elementwise_streams``) on drawn devices:
  the same, and a memo kept across two streams planned by one planner (a runtime's planner and
  memo), the second an exact next iteration, the same ops on re-laid-out inputs, or another
  stream: the memo must never answer for layouts it did not see;
* memo sensitivity, hand-built: one expression planned twice in one stream, the plan cache
  serving the same optimization both times, the second time on a different layout (an input
  buffer shared with a live view: no in-place alias; a transposed input: other widths; other
  dims): refimpl's answer, and a memo miss for the differing occurrence;
* the repeated iteration (``fuselab.workloads``' transformer and its shifted next iteration):
  iteration 2 is planned from the memo alone and equals refimpl's.
"""

from __future__ import annotations

import dataclasses
from functools import partial
from pathlib import Path

import pytest
from hypothesis import event, given, note
from hypothesis import strategies as st

import fastplan
from refimpl.data import contiguous_strides
from refimpl.devices import PRESETS
from refimpl.dtypes import DType
from refimpl.frontend import Session
from refimpl.interpreter import executed_steps
from refimpl.interpreter import launch_plan_stream as reference_launch_plan_stream
from refimpl.planner import StreamPlanner as RefStreamPlanner
from refimpl.planner.fusers.registry import FusionRegistry as RefFusionRegistry
from refimpl.strategies import elementwise_streams, streams, strides_for_layout
from refimpl.stream import Stream, Sync, load_stream, stream_to_json
from tests.fastplan.helpers import (check_fast_outcomes, fast_plan_launched, fast_planner,
                                    fused_count, outcome, reference)

pytestmark = pytest.mark.skipif(not fastplan.COMPILED, reason="fastplan is not compiled")

if fastplan.COMPILED:
    from fuselab.workloads import build, shifted, with_tensors
    from fastplan.launch.execute import launch_plan_stream
    from fastplan.launch.launch_memo import LaunchMemo
    from fastplan.planner import _launch_planned
    from fastplan.stream.processor import StreamPlanner as FastStreamPlanner
    from fastplan.fusers.registry import FusionRegistry as FastFusionRegistry

GOLDEN_STREAMS = sorted((Path(__file__).parents[1] / "golden" / "streams").glob("*.json"))
DEVICES = tuple(sorted(PRESETS))


# --- helpers ---------------------------------------------------------------------------------


def ref_next(planner, stream: Stream, profile) -> tuple:
    """refimpl: ``planner`` (kept across streams) runs ``stream``; its new steps launch-planned."""
    start = len(planner.queue.executed)
    planner.run(stream)
    return reference_launch_plan_stream(stream, planner.queue.executed[start:], profile)


def fast_next(planner, stream: Stream, profile, memo) -> tuple:
    """fastplan: the same with ``memo`` (kept across streams, as a runtime keeps it)."""
    start = len(planner.queue.steps)
    planner.run(stream)
    return _launch_planned(stream, planner, start, profile, memo)


def shift_past(first: Stream, second: Stream) -> Stream:
    """``second`` with every tensor id moved past ``first``'s (a runtime's ids never repeat)."""
    ids = list(first.inputs) + [t.id for op in first.ops for t in op.nodes()]
    return shifted(second, max(ids, default=0) + 1)


# --- golden streams ----------------------------------------------------------------------------


def test_golden_streams_found() -> None:
    assert len(GOLDEN_STREAMS) >= 40


@pytest.mark.parametrize("path", GOLDEN_STREAMS, ids=lambda p: p.stem)
def test_launch_plan_stream_golden_matches_refimpl(path: Path) -> None:
    stream = load_stream(path)
    for device in DEVICES:
        profile = PRESETS[device]
        check_fast_outcomes(stream, profile)
        # what ``fastplan.planner.plan`` runs: unfused steps without context, a fresh memo
        got = outcome(partial(fast_plan_launched, stream, profile))
        assert got == reference(stream, profile)


# --- drawn streams -----------------------------------------------------------------------------


# Streams of every kind of op, or element-wise chains only (longer: what fuses most).
DRAWN_STREAMS = st.one_of(streams(), elementwise_streams(max_ops=14))


@given(DRAWN_STREAMS, st.sampled_from(DEVICES))
def test_launch_plan_stream_drawn_matches_refimpl(stream: Stream, device: str) -> None:
    note(stream_to_json(stream))
    check_fast_outcomes(stream, PRESETS[device])


@st.composite
def relaid(draw, stream: Stream) -> Stream:
    """``stream`` with every input's layout drawn afresh (the same ops: the plan cache serves
    the same optimizations, on other strides)."""
    inputs = {tid: dataclasses.replace(spec, strides=draw(strides_for_layout(spec.shape)))
              for tid, spec in sorted(stream.inputs.items())}
    return Stream(inputs, stream.items)


@st.composite
def stream_pairs(draw, base) -> tuple[str, Stream, Stream]:
    """Two streams a runtime plans one after the other: the next iteration of the first, the
    first's ops on re-laid-out inputs, or another stream."""
    first = draw(base)
    kind = draw(st.sampled_from(("same", "relaid", "other")))
    if kind == "same":
        second = first
    elif kind == "relaid":
        second = draw(relaid(first))
    else:
        second = draw(base)
    return kind, first, shift_past(first, second)


def check_memo_across_streams(kind: str, first: Stream, second: Stream, profile) -> None:
    """One planner and one memo per twin plan ``first`` then ``second``; both launch plans
    are refimpl's."""
    __tracebackhide__ = True
    ref = RefStreamPlanner(RefFusionRegistry().fusers(profile))
    fast = FastStreamPlanner(FastFusionRegistry().fusers(profile))
    memo = LaunchMemo()
    for stream in (first, second):
        expected = outcome(partial(ref_next, ref, stream, profile))
        hits, misses = memo.hits, memo.misses
        got = outcome(partial(fast_next, fast, stream, profile, memo))
        assert got == expected
        if expected[0] == "raised":
            return
    served = memo.hits - hits
    event(f"{kind}: {'some' if served else 'no'} fused steps served from the memo")
    if kind == "same":  # the next iteration: every fused step is served
        assert memo.misses == misses, "the next iteration missed the memo"
        assert served == fused_count(expected[1])


@given(stream_pairs(DRAWN_STREAMS), st.sampled_from(DEVICES))
def test_launch_memo_across_streams_matches_refimpl(pair, device: str) -> None:
    kind, first, second = pair
    note(f"{kind}\n{stream_to_json(first)}\n{stream_to_json(second)}")
    check_memo_across_streams(kind, first, second, PRESETS[device])


# --- memo sensitivity, hand-built ------------------------------------------------------------


def _expr(x):
    return (x.move() * 2.0 + 1.0).exp()


def moved_alone_vs_shared_buffer(shape=(16, 64)) -> Stream:
    """The expression on a moved input (last handle: ReadWrite), twice. The first time the
    input's buffer is its own (the output writes it in place); the second time a live view of
    the input shares its buffer (``can_mut`` is false: no in-place alias).

    A held input (ReadOnly) instead of the shared buffer would not do: the status is part of
    the relative segment, so the plan cache stores another optimization for it and the memo
    key differs by the optimization alone (``moved_vs_held`` below). Each occurrence is its
    own segment (syncs around it), so the plan cache serves the first one's optimization to
    the second (checked by the test)."""
    s = Session(executor=None)
    a = s.random(shape, seed=0)
    y = _expr(a.move())
    s.sync(y)
    del y
    b = s.random(shape, seed=1)
    view = b.swap_dims(0, 1)
    s.sync(view)
    z = _expr(b.move())
    s.sync(z, view)
    return s.close()


def moved_vs_held(shape=(16, 64)) -> Stream:
    """Moved (ReadWrite) then held (ReadOnly): two relative segments, two optimizations, so
    the memo is not what tells them apart (plain equality with refimpl)."""
    s = Session(executor=None)
    a = s.random(shape, seed=0)
    y = _expr(a.move())
    s.sync(y)
    del y
    b = s.random(shape, seed=1)
    z = _expr(b.clone())
    s.sync(z, b)
    return s.close()


def contiguous_vs_transposed(move: bool, shape=(3, 8)) -> Stream:
    """The expression on a contiguous input, then on a transposed one (``swap_dims`` of a
    ``shape[::-1]`` input, run as its own step before the expression: the input handle has
    swapped strides), then on a contiguous one again (a memo hit). The input is moved into the
    expression, or held until the stream ends."""
    s = Session(executor=None)
    held = []
    for seed, transposed in ((0, False), (1, True), (2, False)):
        if transposed:
            x = s.random(shape[::-1], seed=seed).swap_dims(0, 1)
            s.sync(x)
        else:
            x = s.random(shape, seed=seed)
        if not move:
            held.append(x.clone())
        y = _expr(x.move())
        s.sync(y)
        del y
    return s.close()


def other_dims() -> Stream:
    """The expression on (16, 64), then on (8, 3): one optimization (relative shapes), other
    real dims (the input handles' shapes differ too)."""
    s = Session(executor=None)
    for seed, shape in ((0, (16, 64)), (1, (8, 3))):
        y = _expr(s.random(shape, seed=seed))
        s.sync(y)
        del y
    return s.close()


def created_dims() -> Stream:
    """A fused step with no input (a created tensor, scaled) on (16, 64), then on (8, 3):
    no live handle tells the two apart, only the real dims of its relative shape ids."""
    s = Session(executor=None)
    for shape in ((16, 64), (8, 3)):
        y = s.ones(shape) * 2.0
        s.sync(y)
        del y
    return s.close()


def shared_vs_separate_buffers(shape=(16, 64)) -> Stream:
    """A step reading two held tensors, twice. The first time the second tensor is a view
    of the first (two transposes: the same layout, the same buffer); the second time the two
    are separate tensors, each with a live view of its own elsewhere. Both times every input
    has the same layout and two live handles on its buffer: only which tensors share a
    buffer tells the memory states apart."""
    s = Session(executor=None)
    p = s.random(shape, seed=0)
    q = p.swap_dims(0, 1).swap_dims(0, 1)
    s.sync(q)
    y = (p + q).exp()
    s.sync(y, p, q)
    del y
    p2, q2 = s.random(shape, seed=1), s.random(shape, seed=2)
    views = (p2.swap_dims(0, 1).swap_dims(0, 1), q2.swap_dims(0, 1).swap_dims(0, 1))
    s.sync(*views)
    z = (p2 + q2).exp()
    s.sync(z, p2, q2, *views)
    return s.close()


def memo_misses_per_step(stream: Stream, executed, profile) -> list[bool]:
    """For each fused step: did a fresh memo walking the stream up to it miss there?"""
    misses, before = [], 0
    for k, item in enumerate(executed):
        if item.step.kind != "fused":
            continue
        memo = LaunchMemo()
        launch_plan_stream(stream, executed[:k + 1], profile, memo)
        misses.append(memo.misses > before)
        before = memo.misses
    return misses


def check_memo_sensitivity(stream: Stream, device: str, same_optimization: bool,
                           expected_misses: list[bool]) -> tuple:
    """fastplan with a memo gives refimpl's steps; the fused steps missed the memo as
    ``expected_misses`` says; the plan cache served one optimization to every occurrence
    (``same_optimization``: otherwise the memo key differs by the optimization alone and the
    layout part of it is not exercised). Returns refimpl's fused steps."""
    __tracebackhide__ = True
    profile = PRESETS[device]
    fast = fast_planner(stream, profile)
    executed = fast.queue.executed
    memo = LaunchMemo()
    got = launch_plan_stream(stream, executed, profile, memo)
    ref = RefStreamPlanner(RefFusionRegistry().fusers(profile))
    ref.run(stream)
    expected = reference_launch_plan_stream(stream, ref.queue.executed, profile)
    assert got == expected
    for planned in (executed, ref.queue.executed):
        optimizations = [e.optimization for e in planned if e.step.kind == "fused"]
        assert len(optimizations) == len(expected_misses)
        distinct = len({id(opt) for opt in optimizations})
        assert (distinct == 1) is same_optimization
    assert memo_misses_per_step(stream, executed, profile) == expected_misses
    assert memo.misses == sum(expected_misses)
    assert memo.hits == len(expected_misses) - sum(expected_misses)
    return tuple(step for step in expected if step.kind == "fused")


@pytest.mark.parametrize("device", DEVICES)
def test_launch_memo_misses_when_the_input_buffer_is_shared(device: str) -> None:
    stream = moved_alone_vs_shared_buffer()
    first, second = check_memo_sensitivity(stream, device, True, [True, True])
    # what the key must tell apart: an in-place alias the first time, none the second
    assert first.aliases and not second.aliases


@pytest.mark.parametrize("device", DEVICES)
def test_launch_memo_misses_when_the_step_tensors_share_a_buffer(device: str) -> None:
    """The key tells apart which of a step's tensors share a buffer (the position of each
    buffer's first holder), not only layouts and use counts: a key without it replays the
    first occurrence on the second (this test then fails)."""
    check_memo_sensitivity(shared_vs_separate_buffers(), device, True, [True, True])


@pytest.mark.parametrize("device", DEVICES)
def test_launch_memo_moved_vs_held_matches_refimpl(device: str) -> None:
    stream = moved_vs_held()
    first, second = check_memo_sensitivity(stream, device, False, [True, True])
    assert first.aliases and not second.aliases


@pytest.mark.parametrize("move", [True, False], ids=["moved", "held"])
@pytest.mark.parametrize("device", DEVICES)
def test_launch_memo_misses_on_a_transposed_input(device: str, move: bool) -> None:
    stream = contiguous_vs_transposed(move)
    first, second, third = check_memo_sensitivity(stream, device, True, [True, True, False])
    widths = [tuple(block.width for block in step.blocks) for step in (first, second, third)]
    assert widths[0] != widths[1], "the layouts chosen do not change the widths"
    assert widths[0] == widths[2]
    assert bool(first.aliases) is bool(third.aliases) is move


@pytest.mark.parametrize("build_stream", [other_dims, created_dims])
@pytest.mark.parametrize("device", DEVICES)
def test_launch_memo_misses_on_other_dims(device: str, build_stream) -> None:
    first, second = check_memo_sensitivity(build_stream(), device, True, [True, True])
    assert first.blocks[0].width != second.blocks[0].width


# --- whole executions -------------------------------------------------------------------------


def sliced_twice(first_columns: tuple[int, int], second_columns: tuple[int, int]) -> Stream:
    """The same segment twice (so the plan cache runs its stored plan again): a held input, a
    column slice of it run unfused, the expression on the moved slice. Slice ranges are
    stashed values, not part of the relative segment: the two executions have one key of
    relative ops, and only the ranges tell their layouts apart."""
    s = Session(executor=None)
    held = []
    for seed, columns in enumerate((first_columns, second_columns)):
        a = s.random((4, 128), seed=seed)
        y = _expr(a.slice([(0, 4), columns]).move())
        s.sync(y, a)
        held.append(a)
        del y
    return s.close()


def fast_records_launched(stream: Stream, profile, memo, planner=None) -> tuple:
    """``plan``'s walk (the queue's records, whole executions memoised) with ``memo``."""
    planner = fast_planner(stream, profile) if planner is None else planner
    return _launch_planned(stream, planner, 0, profile, memo)


@pytest.mark.parametrize("device", DEVICES)
def test_launch_memo_replays_no_execution_whose_slice_ranges_differ(device: str) -> None:
    """A slice on 256-byte boundaries is a view of its input (no in-place write while the
    input lives); one a column off is a fresh buffer (the expression writes it in place).
    The second execution is not replayed from the first, though its key is the same."""
    profile = PRESETS[device]
    stream = sliced_twice((0, 64), (1, 65))
    expected = reference(stream, profile)
    assert expected[0] == "ok"
    first, second = [step for step in expected[1] if step.kind == "fused"]
    assert not first.aliases and second.aliases
    memo = LaunchMemo()
    assert outcome(partial(fast_records_launched, stream, profile, memo)) == expected
    assert outcome(partial(fast_records_launched, stream, profile, memo)) == expected


@pytest.mark.parametrize("build_stream", [moved_alone_vs_shared_buffer, moved_vs_held,
                                          partial(contiguous_vs_transposed, True),
                                          partial(contiguous_vs_transposed, False),
                                          other_dims, created_dims])
@pytest.mark.parametrize("device", DEVICES)
def test_launch_memo_executions_tell_the_layouts_apart(device: str, build_stream) -> None:
    """The streams above through ``plan``'s walk, whose memo also stores whole executions: a
    fresh memo, then the same memo again on the same records (every execution replayed
    whole), give refimpl's steps."""
    profile = PRESETS[device]
    stream = build_stream()
    expected = reference(stream, profile)
    planner, memo = fast_planner(stream, profile), LaunchMemo()
    assert outcome(partial(fast_records_launched, stream, profile, memo, planner)) == expected
    misses, hits = memo.misses, memo.hits
    assert outcome(partial(fast_records_launched, stream, profile, memo, planner)) == expected
    assert memo.misses == misses
    assert memo.hits == hits + fused_count(expected[1])


# --- the stream inputs a memo loads again ---------------------------------------------------


def _inputs_changed(stream: Stream, how: str) -> Stream:
    """``stream`` with its inputs' layouts changed the way ``how`` names (tensor ids kept)."""
    if how == "f16":  # every tensor and input spec another dtype: other handles, other plans
        items = with_tensors(stream.items, lambda t: dataclasses.replace(t, dtype=DType.F16))
        inputs = {tid: dataclasses.replace(spec, dtype=DType.F16)
                  for tid, spec in stream.inputs.items()}
        return Stream(inputs, items)
    if how == "swapped":  # every 2-d input laid out column-major: same shapes, other strides
        inputs = {tid: dataclasses.replace(spec, strides=(1, spec.shape[0]))
                  if len(spec.shape) == 2 else spec for tid, spec in stream.inputs.items()}
        return Stream(inputs, stream.items)
    if how == "explicit":  # contiguous strides spelled out instead of None: the same layouts
        inputs = {tid: dataclasses.replace(spec, strides=contiguous_strides(spec.shape))
                  for tid, spec in stream.inputs.items()}
        return Stream(inputs, stream.items)
    assert how == "fewer"  # the stream cut at its first sync: a prefix of the inputs
    cut = next(i for i, item in enumerate(stream.items) if isinstance(item, Sync))
    items = stream.items[:cut + 1]
    used = {t.id for op in items if not isinstance(op, Sync) for t in op.nodes()}
    return Stream({tid: spec for tid, spec in stream.inputs.items() if tid in used}, items)


@pytest.mark.parametrize("how", ["f16", "swapped", "explicit", "fewer"])
def test_launch_memo_loads_inputs_again_only_on_their_layouts(how: str) -> None:
    """One planner and memo per twin run an iteration, a variant of it whose inputs have
    other layouts (or fewer inputs), then the iteration again, every time under new tensor
    ids: fastplan takes an input's handle from the memo only for the layout it was made for,
    so every launch plan is refimpl's."""
    profile = PRESETS["metal"]
    first = build("elementwise", 300)
    streams = [first]
    for variant in (_inputs_changed(first, how), first):
        streams.append(shift_past(streams[-1], variant))
    ref = RefStreamPlanner(RefFusionRegistry().fusers(profile))
    fast = FastStreamPlanner(FastFusionRegistry().fusers(profile))
    memo = LaunchMemo()
    for stream in streams:
        expected = outcome(partial(ref_next, ref, stream, profile))
        assert expected[0] == "ok"
        assert outcome(partial(fast_next, fast, stream, profile, memo)) == expected


# --- the repeated iteration ------------------------------------------------------------------


@pytest.mark.parametrize("device", DEVICES)
def test_launch_memo_serves_the_next_iteration(device: str) -> None:
    profile = PRESETS[device]
    stream = build("transformer", 600)
    nxt = shifted(stream, 10 * (max(stream.inputs, default=0) + len(stream.items) + 1))
    # refimpl: one planner runs both iterations; iteration 2 launch-planned on its own
    ref = RefStreamPlanner(RefFusionRegistry().fusers(profile))
    ref.run(stream)
    ref_start = len(ref.queue.executed)
    ref.run(nxt)
    expected_first = reference_launch_plan_stream(stream, ref.queue.executed[:ref_start],
                                                  profile)
    expected = reference_launch_plan_stream(nxt, ref.queue.executed[ref_start:], profile)
    # fastplan: one planner and one memo, as a runtime keeps them
    fast = FastStreamPlanner(FastFusionRegistry().fusers(profile))
    memo = LaunchMemo()
    fast.run(stream)
    assert _launch_planned(stream, fast, 0, profile, memo) == expected_first
    start = len(fast.queue.steps)
    assert start == ref_start
    fast.run(nxt)
    misses, hits = memo.misses, memo.hits
    got = _launch_planned(nxt, fast, start, profile, memo)
    assert got == expected
    assert fused_count(expected) > 50
    assert memo.misses == misses, "iteration 2 missed the memo"
    assert memo.hits == hits + fused_count(expected)


@pytest.mark.parametrize("capacity", ["MEMO_CAPACITY", "LAYOUT_CAPACITY"])
def test_launch_stream_memo_restarts_when_full_and_stays_right(monkeypatch, capacity):
    """A memo past its capacity (stored outcomes, or distinct layouts) forgets everything and
    gives the live handles new layout ids: the plans stay refimpl's, the memo stays small."""
    from fastplan.launch import launch_memo

    monkeypatch.setattr(launch_memo, capacity, 3)
    memo = launch_memo.LaunchMemo()
    for path in GOLDEN_STREAMS:
        stream = load_stream(path)
        profile, executed = executed_steps(stream, "metal")
        expected = reference_launch_plan_stream(stream, executed, profile)
        assert launch_plan_stream(stream, executed, profile, memo) == expected
    assert len(memo) <= 3


class _Dim(int):
    """A dim that equals its int but is no exact ``int`` (what the memo's byte key refuses)."""


def _with_dims_as(stream: Stream, kind: type) -> Stream:
    """``stream`` with every op tensor's dims made ``kind`` instances (equal values)."""
    return Stream(stream.inputs, with_tensors(stream.items, lambda t: dataclasses.replace(
        t, shape=tuple(kind(d) for d in t.shape))))


@pytest.mark.parametrize("build_stream", [other_dims, created_dims,
                                          partial(contiguous_vs_transposed, True)])
def test_launch_planning_of_dims_that_are_no_exact_ints(build_stream) -> None:
    """Dims that are no exact ints: the memo keeps no outcome for such a step (its byte key
    holds int64s), the C layout cores refuse it, and ``plan`` gives refimpl's plan, launch
    planning included, with and without a memo."""
    import refimpl.planner as ref

    stream = _with_dims_as(build_stream(), _Dim)
    profile = PRESETS["metal"]
    expected = ref.plan(stream, "metal")
    assert fastplan.plan(stream, "metal") == expected
    fast = fast_planner(stream, profile)
    memo = LaunchMemo()
    assert _launch_planned(stream, fast, 0, profile, memo) == expected.steps
    assert len(memo) == 0


class _Id(int):
    """A tensor id that equals its int but is no exact ``int``: outside fastplan's memory."""


@pytest.mark.parametrize("workload", ["transformer", "mixed"])
def test_launch_plan_stream_outside_the_boundary_is_refimpls(workload: str) -> None:
    """Tensor ids that are no exact ints: fastplan's search takes them (its id table turns
    into a dict), its memory does not (``BoundaryError``), and every launch-planning entry
    point then gives refimpl's result: ``plan``, ``launch_plan_stream`` with and without a
    memo, a runtime's ``_launch_planned``."""
    import refimpl.planner as ref

    base = build(workload, 120)
    stream = Stream(base.inputs, with_tensors(base.items, lambda t: dataclasses.replace(
        t, id=_Id(t.id))))
    profile = PRESETS["metal"]
    expected = ref.plan(stream, "metal")
    assert fastplan.plan(stream, "metal") == expected
    planner = fast_planner(stream, profile)
    executed = planner.queue.executed
    walked = reference(stream, profile)
    assert walked[0] == "ok"
    memo = LaunchMemo()
    for run in (None, memo, memo):
        assert outcome(partial(launch_plan_stream, stream, executed, profile, run)) == walked
    assert len(memo) == 0  # refimpl's walk stored nothing
    assert _launch_planned(stream, planner, 0, profile, LaunchMemo()) == expected.steps


def test_launch_planning_of_tensor_ids_near_two_to_the_64_stays_compiled() -> None:
    """burn's ``TensorId`` is a u64: ids past 2**63 (the stream loader takes them) are keyed
    by their 64 bits in fastplan's memory, and launch planning stays compiled (the memo
    fills) with refimpl's result."""
    import refimpl.planner as ref

    stream = shifted(build("transformer", 120), 2**64 - 1000)
    assert max(stream.inputs) >= 2**63
    profile = PRESETS["metal"]
    expected = ref.plan(stream, "metal")
    assert fastplan.plan(stream, "metal") == expected
    memo = LaunchMemo()
    planner = fast_planner(stream, profile)
    assert _launch_planned(stream, planner, 0, profile, memo) == expected.steps
    assert len(memo) > 0
