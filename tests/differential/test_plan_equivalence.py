"""fastplan's planner equals refimpl's: whole plans, the plan cache, and pass by pass.

* ``plan``: ``fastplan.planner.plan(s, d) == refimpl.planner.plan(s, d)`` (the ``Plan``
  dataclasses, and byte-equal canonical JSON) on streams drawn by ``refimpl.strategies``
  (every op kind, drops, syncs, strided inputs) and on transformer-block-like programs recorded
  with the frontend, on every device preset.
* ``StreamPlanner``: a stream planned twice, then with its ids shifted, is served from the
  plan cache the same way by both (steps, counters, stored plans and their triggers, the
  executed steps' contexts).
* pass by pass, through the ``def`` twins: the search (``StreamOptimizer`` with the real
  fusers), its blocks and their DAG, ``repair_order`` and the relative form.
* the incremental API (``register``/``sync``/``drain``, as a lazy runtime calls it): the same
  steps, pending ops (in relative form) and counters after every call.

Examples: ``EXAMPLE_FACTOR`` times the hypothesis profile's for the main property (the ``ci``
profile: 600), the profile's for the others (half of it for the long element-wise streams).
"""

from __future__ import annotations

import pytest
from hypothesis import given, note, settings
from hypothesis import strategies as st

import fastplan
from fuselab.workloads import shifted
from refimpl.devices import PRESETS, profile_named
from refimpl.frontend import Session
from refimpl.ir import Sync
from refimpl.planner import plan as reference_plan
from refimpl.planner import plan_to_json
from refimpl.strategies import elementwise_streams, streams
from refimpl.stream import Stream, stream_to_json

pytestmark = pytest.mark.skipif(not fastplan.COMPILED, reason="fastplan is not compiled")

EXAMPLE_FACTOR = 3
MANY = settings(max_examples=EXAMPLE_FACTOR * settings().max_examples)
DEVICES = st.sampled_from(sorted(PRESETS))


def _fast():
    from fastplan import planner

    return planner


def assert_plans_equal(stream: Stream, device: str) -> None:
    __tracebackhide__ = True
    expected = reference_plan(stream, device)
    actual = _fast().plan(stream, device)
    assert actual == expected
    assert plan_to_json(actual) == plan_to_json(expected)


# --- whole plans ----------------------------------------------------------------------------


@MANY
@given(stream=streams(max_ops=12), device=DEVICES)
def test_fastplan_plan_matches_refimpl(stream, device):
    note(stream_to_json(stream))
    assert_plans_equal(stream, device)


@settings(max_examples=settings().max_examples // 2)  # long streams: refimpl takes its time
@given(stream=elementwise_streams(max_ops=40, max_rank=2), device=DEVICES)
def test_fastplan_plan_matches_refimpl_on_long_elementwise_streams(stream, device):
    note(stream_to_json(stream))
    assert_plans_equal(stream, device)


def _block(x, w, gain, heads: int, activation: str, norm: str):
    """One transformer-like block on ``x`` (rows, features): matmul epilogue, softmax-style or
    layer-norm reductions, a residual."""
    h = x @ w
    h = (h * 0.5).tanh() * h if activation == "tanh" else (h * 1.5).exp() + 1.0
    if norm == "softmax":
        e = (h - h.max_dim(1)).exp()
        h = e / e.sum_dim(1)
    else:
        centered = h - h.mean_dim(1)
        h = centered / ((centered * centered).mean_dim(1) + 1e-5).sqrt() * gain
    if heads > 1:
        h = h.reshape([h.shape[0], heads, h.shape[1] // heads]).swap_dims(0, 1)
        h = h.swap_dims(0, 1).reshape([h.shape[1], h.shape[0] * h.shape[2]])
    return x + h


@st.composite
def transformer_streams(draw) -> Stream:
    """Blocks of matmuls, element-wise chains, reductions, views, drops and syncs."""
    rows = draw(st.sampled_from([1, 2, 4, 8]))
    width = draw(st.sampled_from([4, 8, 12]))
    session = Session(executor=None)
    x = session.random((rows, width), seed=1)
    w = session.random((width, width), seed=2)
    gain = session.random((1, width), seed=3)
    for _ in range(draw(st.integers(1, 3))):
        x = _block(x, w, gain, draw(st.sampled_from([1, 2])),
                   draw(st.sampled_from(["tanh", "exp"])),
                   draw(st.sampled_from(["softmax", "layer_norm"])))
        if draw(st.booleans()):
            session.sync(x)
    session.sync(x)
    return session.close()


@settings(max_examples=settings().max_examples)
@given(stream=transformer_streams(), device=DEVICES)
def test_fastplan_plan_matches_refimpl_on_transformer_blocks(stream, device):
    note(stream_to_json(stream))
    assert_plans_equal(stream, device)


# --- the plan cache -------------------------------------------------------------------------


def _planner(impl_processor, impl_registry, device: str):
    return impl_processor.StreamPlanner(impl_registry.FusionRegistry().fusers(
        profile_named(device)))


def _state(planner) -> tuple:
    plans = [(p.operations, p.triggers, p.optimization) for p in planner.store.plans]
    return planner.num_explorations, planner.num_cache_hits, plans


@settings(max_examples=settings().max_examples)
@given(stream=streams(max_ops=12), device=DEVICES)
def test_fastplan_stream_planner_cache_matches_refimpl(stream, device):
    import refimpl.planner.fusers.registry as ref_registry
    import refimpl.planner.stream.processor as ref_processor

    note(stream_to_json(stream))
    reference = _planner(ref_processor, ref_registry, device)
    twin = _planner(fastplan.planner_module("stream.processor"),
                    fastplan.planner_module("fusers.registry"), device)
    for again in (stream, stream, shifted(stream, 1000)):
        assert twin.run(again) == reference.run(again)
        assert _state(twin) == _state(reference)
    assert twin.queue.executed == reference.queue.executed


# --- pass by pass ---------------------------------------------------------------------------


def _relative_ops(stream: Stream) -> list:
    from refimpl.planner.stream.relative import OperationConverter, to_relative

    converter = OperationConverter()
    return [to_relative(op, converter) for op in stream.ops]


def _search(module_of, ops, device: str):
    """Register ``ops`` into a fresh search with the real fusers; what every pass saw."""
    fusers = module_of("fusers.registry").FusionRegistry().fusers(profile_named(device))
    search = module_of("search.search").StreamOptimizer(fusers)
    seen = []
    for op in ops:
        search.register(op)
        blocks = [(list(b.ordering), b.produced(), b.read(), b.freed(), b.still_optimizing())
                  for b in search.blocks]
        seen.append((search.length, search.stopped, search.still_optimizing(), blocks))
    dag = module_of("search.graph").Dag(search.blocks)
    order = dag.topological_order()
    reach = dag.reachability()
    result = search.optimize(ops) if search.blocks else None
    repaired = module_of("search.repair").repair_order(result, ops) if result is not None else None
    return seen, order, (reach.ancestors, reach.descendants), result, repaired


def _ref_module(name: str):
    import importlib

    return importlib.import_module(f"refimpl.planner.{name}")


@settings(max_examples=settings().max_examples)
@given(stream=streams(max_ops=12), device=DEVICES)
def test_fastplan_search_passes_match_refimpl(stream, device):
    note(stream_to_json(stream))
    ops = _relative_ops(stream)
    fast_rel = fastplan.planner_module("stream.relative")
    converter = fast_rel.OperationConverter()
    assert [fast_rel.to_relative(op, converter) for op in stream.ops] == ops
    assert _search(fastplan.planner_module, ops, device) == _search(_ref_module, ops, device)


# --- the incremental API --------------------------------------------------------------------


def _converter_maps(converter) -> tuple:
    """The converter's maps, with the key objects' types (the queue re-relativises pending
    ops after a drain from their keys; ids and dims must come back as they were)."""
    return tuple([(name, [(type(k).__name__, k, v) for k, v in getattr(converter, name).items()])
                  for name in ("tensors_relative2global", "tensors_global2relative",
                               "shapes_global2relative", "shapes_relative2global")]
                 + [converter.scalars, converter.ranges])


def _fed_item_by_item(stream: Stream, device: str, forget: frozenset = frozenset()):
    """Both twins fed ``stream`` as a runtime feeds them (``register`` / ``sync``), their
    executed steps forgotten after the items in ``forget``; yields ``(reference, twin)``
    after every item, then once more after the final ``drain``."""
    import refimpl.planner.fusers.registry as ref_registry
    import refimpl.planner.stream.processor as ref_processor

    note(stream_to_json(stream))
    reference = _planner(ref_processor, ref_registry, device)
    twin = _planner(fastplan.planner_module("stream.processor"),
                    fastplan.planner_module("fusers.registry"), device)
    for index, item in enumerate(stream.items):
        for planner in (reference, twin):
            if isinstance(item, Sync):
                planner.sync(item.tensors)
            else:
                planner.register(index, item)
            if index in forget:
                planner.forget_steps()
        yield reference, twin
    reference.drain()
    twin.drain()
    yield reference, twin


@settings(max_examples=settings().max_examples)
@given(stream=streams(max_ops=12), device=DEVICES)
def test_fastplan_incremental_api_matches_refimpl(stream, device):
    """A runtime registering ops one by one: after every ``register``/``sync`` and the final
    ``drain``, both twins have executed the same steps and kept the same counters."""
    for reference, twin in _fed_item_by_item(stream, device):
        assert twin.queue.steps == reference.queue.steps
        assert twin.queue.indices == reference.queue.indices
        assert twin.queue.operations() == reference.queue.operations()
        assert twin.queue.shapes_assigned == reference.queue.shapes_assigned
        assert _converter_maps(twin.queue.converter) == \
            _converter_maps(reference.queue.converter)
        assert (twin.num_explorations, twin.num_cache_hits) == \
            (reference.num_explorations, reference.num_cache_hits)
    assert twin.queue.operations() == reference.queue.operations() == []


@settings(max_examples=settings().max_examples)
@given(stream=streams(max_ops=12), device=DEVICES,
       forget=st.frozensets(st.integers(min_value=0, max_value=13)))
def test_fastplan_forget_steps_matches_refimpl(stream, device, forget):
    """A runtime that registers ops one by one and forgets the executed steps after the items
    in ``forget`` (ops may be pending then): both twins keep the same steps, and the executed
    steps' contexts (built from the queue's history, which forgetting restarts) stay equal."""
    for reference, twin in _fed_item_by_item(stream, device, forget):
        assert twin.queue.steps == reference.queue.steps
        assert twin.queue.executed == reference.queue.executed
        assert twin.queue.operations() == reference.queue.operations()
    assert twin.queue.operations() == reference.queue.operations() == []
