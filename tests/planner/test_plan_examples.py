"""The seed page's fusion decisions and burn's fusion-inspector tests, end to end through
``plan`` with the real fusers (notes §9.5, §9.6, §10.1; seed page), on refimpl and on fastplan
(the ``plan`` fixture of tests/planner/conftest.py).

The streams are ``refimpl.seed.SEED_STREAMS`` (recorded with the lazy frontend as the seed's
experiments and burn's tests write them); a few extra ones are recorded here the same way.
"""

from __future__ import annotations

from typing import Callable

from refimpl.frontend import Session
from refimpl.planner import Plan, PlanStep
from refimpl.seed import SEED_STREAMS
from refimpl.stream import Stream


def seed(name: str) -> Stream:
    return SEED_STREAMS[name]()


def record(body: Callable[[Session], None]) -> Stream:
    session = Session(executor=None)
    body(session)
    return session.close()


def names(stream: Stream, step: PlanStep) -> list[str]:
    return [stream.items[i].name for i in step.ops]


def non_drop(stream: Stream, step: PlanStep) -> list[str]:
    return [name for name in names(stream, step) if name != "Drop"]


def step_with(stream: Stream, result: Plan, op_name: str) -> PlanStep:
    """The step that runs the (first) op called ``op_name``."""
    for step in result.steps:
        if op_name in names(stream, step):
            return step
    raise AssertionError(f"no step runs {op_name}")


def assert_covers_every_op_once(stream: Stream, result: Plan) -> None:
    executed = sorted(i for step in result.steps for i in step.ops)
    expected = [i for i, item in enumerate(stream.items) if hasattr(item, "op")]
    assert executed == expected


# --- the seed page ----------------------------------------------------------------------------


def test_plan_seed_mul_add_exp_is_one_elementwise_kernel(plan):
    stream = seed("mul_add_exp")
    result = plan(stream, "metal")
    (step,) = result.steps
    assert (step.kind, step.fuser) == ("fused", "ElementWise")
    assert names(stream, step) == ["NumericFloat.Mul", "NumericFloat.Add", "Float.Exp"]
    assert [block.ops for block in step.blocks] == [("Mul", "Add", "Exp")]
    assert len(step.inputs) == 3 and len(step.outputs) == 1
    assert_covers_every_op_once(stream, result)


def test_plan_seed_hundred_op_chain_splits_65_35(plan):
    stream = seed("chain")
    result = plan(stream, "metal")
    fused = result.fused_steps()
    assert [len(non_drop(stream, step)) for step in fused] == [65, 35]
    assert {step.fuser for step in fused} == {"ElementWise"}
    assert fused[0].score == (130 - 2) * 100 + 64 * 10  # notes §9.5: 13440
    assert_covers_every_op_once(stream, result)


def test_plan_hundred_op_chain_of_own_recording_splits_at_op_65(plan):
    def body(s: Session) -> None:
        x = s.random((4, 6), seed=0)
        for _ in range(100):
            x = x.move() * 1.5
        s.sync(x)

    fused = plan(record(body), "metal").fused_steps()
    assert [step.ops for step in fused] == [tuple(range(65)), tuple(range(65, 100))]


def test_plan_seed_five_independent_expressions_are_one_multi_output_kernel(plan):
    stream = seed("independent")
    result = plan(stream, "metal")
    (step,) = result.fused_steps()
    assert step.fuser == "ElementWise"
    assert non_drop(stream, step).count("Float.Exp") == 5
    assert len(step.outputs) == 5 and len(step.inputs) == 15
    assert [block.ops for block in step.blocks] == [("Mul", "Add", "Exp") * 5]


def test_plan_five_expressions_split_when_bindings_run_out(plan):
    # WebGPU's default limit (7 bindings) fits one expression (3 in + 1 out + 1), not two.
    stream = seed("independent")
    fused = plan(stream, "webgpu-default").fused_steps()
    assert len(fused) == 5
    assert all(non_drop(stream, step) == ["NumericFloat.Mul", "NumericFloat.Add", "Float.Exp"]
               for step in fused)


def test_plan_seed_matmul_epilogue_is_one_matmul_kernel(plan):
    stream = seed("matmul_add_exp")
    step = step_with(stream, plan(stream, "metal"), "Float.Matmul")
    assert (step.kind, step.fuser) == ("fused", "Matmul")
    assert names(stream, step) == ["Float.Matmul", "NumericFloat.Add", "Float.Exp"]


def test_plan_seed_reduce_with_prologue_and_epilogue_is_one_reduce_kernel(plan):
    stream = seed("mul_sum_dim_exp")
    step = step_with(stream, plan(stream, "metal"), "NumericFloat.SumDim")
    assert (step.kind, step.fuser) == ("fused", "Reduce")
    assert names(stream, step) == ["NumericFloat.Mul", "NumericFloat.SumDim", "Float.Exp"]


def test_plan_seed_full_sum_and_the_add_after_it_run_unfused(plan):
    stream = seed("full_sum_plus_one")
    result = plan(stream, "metal")
    total = step_with(stream, result, "NumericFloat.Sum")
    plus_one = step_with(stream, result, "NumericFloat.AddScalar")
    assert total.kind == plus_one.kind == "unfused"
    assert total is not plus_one
    assert result.fused_steps() == ()


def test_plan_lone_op_runs_unfused(plan):
    def body(s: Session) -> None:
        y = s.random((4, 6), seed=0).exp()
        s.sync(y)

    stream = record(body)
    assert plan(stream, "metal").steps[0] == PlanStep("unfused", (0,))


def test_plan_same_expression_on_another_shape_gives_the_same_fused_step(plan):
    # [4, 6] and [2, 2] have the same width (2), so the whole step is equal (seed page)
    small = plan(seed("mul_add_exp_2x2"), "metal").steps[0]
    large = plan(seed("mul_add_exp"), "metal").steps[0]
    assert small == large


# --- burn-backend-tests/tests/fusion (notes §10.1) ----------------------------------------


def test_plan_burn_add_then_exp_fuses_into_single_kernel(plan):
    stream = seed("elementwise_add_then_exp")
    step = step_with(stream, plan(stream, "metal"), "NumericFloat.Add")
    assert (step.kind, step.fuser) == ("fused", "ElementWise")
    assert non_drop(stream, step) == ["NumericFloat.Add", "Float.Exp"]
    assert [block.ops for block in step.blocks] == [("Add", "Exp")]


def test_plan_burn_sync_between_ops_splits_into_separate_kernels(plan):
    stream = seed("sync_between")
    result = plan(stream, "metal")
    add = step_with(stream, result, "NumericFloat.Add")
    exp = step_with(stream, result, "Float.Exp")
    assert add is not exp
    assert "Float.Exp" not in names(stream, add)


def test_plan_burn_chained_elementwise_ops_fuse_together(plan):
    stream = seed("chained_elementwise")
    step = step_with(stream, plan(stream, "metal"), "NumericFloat.Add")
    assert step.fuser == "ElementWise"
    assert non_drop(stream, step) == ["NumericFloat.Add", "NumericFloat.Mul", "Float.Exp"]


def test_plan_burn_elementwise_and_creation_into_single_kernel(plan):
    stream = seed("elementwise_and_creation")
    result = plan(stream, "metal")
    (step,) = result.steps
    assert step.fuser == "ElementWise"
    ops = non_drop(stream, step)
    assert sorted(ops) == sorted(["BaseFloat.Ones", "NumericFloat.MulScalar",
                                  "NumericFloat.Mul", "NumericFloat.Add"] * 4)


def test_plan_burn_lone_view_is_not_fused_into_kernel(plan):
    stream = seed("lone_view")
    result = plan(stream, "metal")
    assert step_with(stream, result, "BaseFloat.SwapDims").kind == "unfused"
    for step in result.fused_steps():
        assert "BaseFloat.SwapDims" not in names(stream, step)


def test_plan_burn_cat_then_scalar_fuses_and_computed_input_splits(plan):
    stream = seed("cat_then_mul_scalar")
    step = step_with(stream, plan(stream, "metal"), "BaseFloat.Cat")
    assert step.fuser == "ElementWise"
    assert non_drop(stream, step) == ["BaseFloat.Cat", "NumericFloat.MulScalar"]
    stream = seed("cat_of_computed_input")
    result = plan(stream, "metal")
    cat_step = step_with(stream, result, "BaseFloat.Cat")
    mul_step = step_with(stream, result, "NumericFloat.MulScalar")
    assert not (cat_step is mul_step and cat_step.fused)


def test_plan_burn_int_bitwise_chain_and_float_cast_fuse_into_single_kernel(plan):
    stream = seed("int_bitwise_chain")
    step = step_with(stream, plan(stream, "metal"), "Int.BitwiseXor")
    assert step.fuser == "ElementWise"
    assert set(non_drop(stream, step)) >= {
        "Int.BitwiseXor", "Int.BitwiseAndScalar", "Int.BitwiseRightShiftScalar",
        "Int.BitwiseNot", "Int.BitwiseOr", "Int.IntoFloat", "NumericFloat.MulScalar"}
