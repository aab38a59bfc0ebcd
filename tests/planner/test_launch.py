"""Launch planning (``refimpl.planner.launch.launch``): the seed page's width and in-place facts,
kernel identity, reference layouts, view outputs, and the plan JSON it fills in (SPEC §3, §7;
notes §6). Every test runs on refimpl and on fastplan (the ``planner_impl`` fixture): the
walk plans its launches with ``planner_impl.launch.launch.plan_launch``."""

from __future__ import annotations

import dataclasses

import pytest

from refimpl.planner.launch import execute
from refimpl.dtypes import DType
from refimpl.interpreter import Interpreter, executed_steps, launch_plan_stream
from refimpl.ir import OperationIr, TensorIr, TensorStatus
from refimpl.ops import op_named
from refimpl.planner.launch.launch import (
    ConcreteLayout,
    LaunchPlan,
    RuntimeLayout,
    ShapeLayout,
)
from refimpl.planner.stream.plan import Plan, plan_to_json
from refimpl.planner.engine.trace import LayoutInfo, Output
from refimpl.seed import mul_add_exp, mul_sum_dim_exp
from refimpl.strategies import StreamBuilder
from refimpl.stream import Stream


@pytest.fixture(autouse=True)
def launch_twin(planner_impl, monkeypatch):
    """The walk plans every launch with ``planner_impl``'s ``plan_launch``."""
    monkeypatch.setattr(execute, "plan_launch", planner_impl.launch.launch.plan_launch)
    return planner_impl.launch.launch


def records(stream: Stream, device: str = "metal"):
    profile, executed = executed_steps(stream, device)
    interp = Interpreter(stream, profile, with_values=False)
    interp.run(executed)
    return interp.records


def fused_launch(stream: Stream, device: str = "metal") -> LaunchPlan:
    """The main launch of the stream's only fused step."""
    [record] = [r for r in records(stream, device) if r.step.fused]
    return record.main


def binding(plan: LaunchPlan, tensor: int):
    return next(b for b in plan.inputs + plan.outputs if b.tensor == tensor)


# --- the seed page ------------------------------------------------------------------------------


@pytest.mark.parametrize("shape, width", [((4, 3), 1), ((4, 6), 2), ((64, 64), 4)])
def test_launch_width_follows_the_last_dim(shape, width):
    plan = fused_launch(mul_add_exp(shape))
    assert plan.widths() == (width,)
    assert all(size == width for _, size in plan.vector_sizes)


def test_launch_config_of_4x6_and_2x2_is_the_same_kernel(launch_twin):
    config_id = launch_twin.config_id
    config_4x6 = fused_launch(mul_add_exp((4, 6))).configs[0]
    config_2x2 = fused_launch(mul_add_exp((2, 2))).configs[0]
    config_4x3 = fused_launch(mul_add_exp((4, 3))).configs[0]
    assert config_4x6 == config_2x2
    assert config_id(config_4x6) == config_id(config_2x2)
    assert config_id(config_4x6) != config_id(config_4x3)
    assert len(config_id(config_4x6)) == 16


def test_launch_config_holds_reads_ops_writes_with_layouts():
    config = fused_launch(mul_add_exp((4, 6))).configs[0]
    names = [op.name for op in config.ops]
    assert names == ["Assign", "Assign", "Assign", "Mul", "Add", "Exp", "Assign"]
    reads = [op.args.input for op in config.ops[:3]]
    assert [arg.pos for arg in reads] == [0, 1, 2]
    assert all(arg.layout is LayoutInfo.SameAsRef for arg in reads)
    write = config.ops[-1].args.out
    assert write == Output(0, write.ty, LayoutInfo.IsRef)
    assert config.ref_layout == ConcreteLayout(Output(0, write.ty, LayoutInfo.IsRef))
    assert (config.rank, config.width, config.vector_axis) == (2, 2, 1)


def test_launch_writes_in_place_into_a_moved_input():
    stream = mul_add_exp((4, 6), a_moved=True)
    plan = fused_launch(stream)
    a = stream.ops[0].desc.lhs.id
    [(out, source)] = plan.aliases
    assert source == a
    assert binding(plan, out) in plan.outputs
    assert plan.outputs[0].kind == "inplace" and plan.outputs[0].input_pos == 0


def test_launch_never_writes_into_a_held_input():
    stream = mul_add_exp((4, 6), a_moved=False)
    assert stream.ops[0].desc.lhs.status is TensorStatus.ReadOnly
    plan = fused_launch(stream)
    assert plan.aliases == ()
    assert plan.outputs[0].kind == "owned"


def _add(shape_a, shape_b, strides_b=None, hold_b=True) -> Stream:
    b = StreamBuilder()
    x = b.add_input(shape_a, DType.F32, seed=1)
    y = b.add_input(shape_b, DType.F32, strides_b, seed=2)
    shape = tuple(max(p, q) for p, q in zip(shape_a, shape_b))
    out = b.op("Float.Exp", shape, DType.F32,
               input=b.op("NumericFloat.Add", shape, DType.F32, lhs=x, rhs=y))
    b.sync((out,))
    if hold_b:
        b.sync((y,))
    return b.build()


def test_launch_transposed_input_reads_scalars_while_the_block_keeps_its_width():
    plan = fused_launch(_add((4, 8), (4, 8), strides_b=(1, 4)))
    transposed = binding(plan, 1)
    assert transposed.strides == (1, 4)
    assert transposed.vector_size == 1
    assert plan.widths() == (4,)


def test_launch_broadcast_operand_is_broadcasted_and_width_is_4():
    plan = fused_launch(_add((2, 8), (2, 1)))
    operand = binding(plan, 1)
    assert (operand.vector_size, operand.broadcasted) == (1, True)
    assert plan.widths() == (4,)


def test_launch_f64_candidates_halve_the_width():
    b = StreamBuilder()
    x = b.add_input((4, 8), DType.F64, seed=1)
    b.sync((b.op("Float.Exp", (4, 8), DType.F64,
                 input=b.op("Float.Log", (4, 8), DType.F64, input=x)),))
    assert fused_launch(b.build()).widths() == (2,)


def test_launch_cuda_profile_vectorizes_f16_by_8():
    b = StreamBuilder()
    x = b.add_input((4, 16), DType.F16, seed=1)
    b.sync((b.op("Float.Exp", (4, 16), DType.F16,
                 input=b.op("Float.Log", (4, 16), DType.F16, input=x)),))
    assert fused_launch(b.build(), "cuda").widths() == (8,)
    assert fused_launch(b.build(), "metal").widths() == (4,)


def test_launch_consumed_transposed_input_becomes_a_permuted_reference():
    b = StreamBuilder()
    x = b.add_input((4, 8), DType.F32, strides=(1, 4), seed=3)
    b.sync((b.op("Float.Exp", (4, 8), DType.F32,
                 input=b.op("Float.Log", (4, 8), DType.F32, input=x)),))
    plan = fused_launch(b.build())
    assert plan.aliases == ((2, 0),)
    config = plan.configs[0]
    assert config.vector_axis == 0  # the reference's innermost dim
    assert plan.widths() == (4,)


def test_launch_output_follows_the_plurality_layout_of_its_inputs():
    b = StreamBuilder()
    x = b.add_input((4, 8), DType.F32, strides=(1, 4), seed=3)
    out = b.op("Float.Exp", (4, 8), DType.F32,
               input=b.op("Float.Log", (4, 8), DType.F32, input=x))
    b.sync((out,))
    b.sync((x,))  # held: no in-place, the output is allocated in x's order
    plan = fused_launch(b.build())
    assert binding(plan, out).strides == (1, 4)
    assert plan.configs[0].vector_axis == 0


def test_launch_reduce_write_block_is_capped_by_the_read_block():
    plan = fused_launch(mul_sum_dim_exp(64))
    assert plan.widths() == (4, 1)


def test_launch_skips_a_trace_that_writes_nothing():
    b = StreamBuilder()
    x = b.add_input((4, 4), DType.F32, seed=1)
    b.op("Float.Exp", (4, 4), DType.F32, input=x)
    b.op("Float.Log", (4, 4), DType.F32, input=x)
    stream = b.build()
    plan = fused_launch(stream)
    assert plan.skipped and plan.configs == ()


def test_launch_view_output_is_an_alias_of_its_original():
    b = StreamBuilder()
    x = b.add_input((4, 4), DType.F32, strides=(4, 1), seed=1)
    y = b.op("NumericFloat.AddScalar", (4, 4), DType.F32, lhs=x, rhs=1.0)
    z = b.op("BaseFloat.SwapDims", (4, 4), DType.F32, input=x, dim1=0, dim2=1)
    w = b.op("Float.Exp", (4, 4), DType.F32, input=z)
    b.sync((y, w))
    b.sync((z,))
    stream = b.build()
    plan = fused_launch(stream)
    assert plan.views == ((z, x),)
    view = binding(plan, z)
    assert view.kind == "view" and view.strides == (1, 4)


def test_launch_runtime_reference_when_nothing_qualifies():
    b = StreamBuilder()
    x = b.add_input((4, 8), DType.F32, strides=(9, 1), seed=1)
    y = b.add_input((4, 1), DType.F32, seed=2)
    small = b.op("Float.Exp", (4, 1), DType.F32, input=y)
    big = b.op("NumericFloat.Add", (4, 8), DType.F32, lhs=x, rhs=small)
    b.op("Float.Exp", (4, 8), DType.F32, input=big)
    b.sync((small,))
    plan = fused_launch(b.build())
    layout = plan.configs[0].ref_layout
    assert isinstance(layout, (ShapeLayout, RuntimeLayout))


def test_context_of_gives_dropped_tensors_their_real_shape(launch_twin):
    context_of = launch_twin.context_of
    stream = mul_add_exp((4, 6))
    _, executed = executed_steps(stream)
    [item] = [e for e in executed if e.step.fused]
    context = context_of(item.segment, item.tensors_global2relative,
                         item.shapes_relative2global, item.scalars)
    assert {t.shape for t in context.tensors.values()} == {(4, 6)}


# --- the plan ------------------------------------------------------------------------------------


def test_launch_plan_stream_fills_aliases_and_widths():
    stream = mul_add_exp((4, 6))
    profile, executed = executed_steps(stream)
    [step] = launch_plan_stream(stream, executed, profile)
    assert step.aliases == ((5, 0),)
    assert [block.width for block in step.blocks] == [2]
    text = plan_to_json(Plan(profile.name, (step,)))
    assert '"aliases":{"5":0}' in text and '"width":2' in text


def test_launch_is_the_same_on_a_repeated_pass():
    stream = mul_add_exp((4, 6))
    first = fused_launch(stream)
    second = fused_launch(stream)
    assert first == second


# --- context_of on every executed step, and on an ``out`` without a dtype --------------------


@pytest.mark.parametrize("workload", ["transformer", "mixed", "elementwise"])
def test_context_of_matches_refimpl_on_executed_steps(planner_impl, workload: str) -> None:
    from fuselab import workloads
    from refimpl.devices import profile_named
    from refimpl.planner.launch.launch import context_of as ref_context_of

    fast_context_of = planner_impl.launch.launch.context_of
    profile = profile_named("metal")
    stream = workloads.build(workload, 120)
    planner = planner_impl.stream.processor.StreamPlanner(
        planner_impl.fusers.registry.FusionRegistry().fusers(profile))
    planner.run(stream)
    fused = [item for item in planner.queue.executed if item.step.kind == "fused"]
    assert fused
    for item in fused:
        args = (item.segment, item.tensors_global2relative, item.shapes_relative2global,
                item.scalars)
        assert fast_context_of(*args) == ref_context_of(*args)


def test_context_of_fails_as_refimpl_on_an_out_without_dtype(planner_impl) -> None:
    from refimpl.planner.launch.launch import context_of as ref_context_of

    fast_context_of = planner_impl.launch.launch.context_of

    @dataclasses.dataclass(frozen=True)
    class Odd:  # an id and a shape, no dtype
        id: int
        shape: tuple

    x = TensorIr(0, (2, 3), DType.F32, TensorStatus.ReadOnly)
    exp = op_named("Float.Exp")
    desc = exp.struct(x, Odd(1, (2, 3)))
    op = OperationIr(exp, desc)
    errors = []
    for context_of in (fast_context_of, ref_context_of):
        with pytest.raises(AttributeError) as caught:
            context_of((op,), {0: 0, 1: 1}, {}, ())
        errors.append(type(caught.value))
    assert errors[0] is errors[1]
