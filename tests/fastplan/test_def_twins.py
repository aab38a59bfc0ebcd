"""The ``def`` twins below the fusers, pass by pass: builder classes, TryTraceFuser with a Python
``add_ops``, TraceOperationFuser's helpers, Scoring.evaluate, OperationConverter/to_relative.

Each scenario runs on refimpl's classes and on fastplan's and compares every result.
"""

from __future__ import annotations

import importlib

import pytest

import fastplan
from refimpl.dtypes import DType
from refimpl.ir import TensorIr, TensorStatus
from refimpl.planner.engine.builder import Refusal
from refimpl.planner.engine.settings import (
    ELEMENTWISE_SETTINGS,
    REDUCE_READ_SETTINGS,
    REDUCE_WRITE_SETTINGS,
)
from refimpl.planner.engine.trace import (
    BinaryFuseArgs,
    BlockLocal,
    CatArgs,
    FuseOp,
    FuseType,
    Input,
    RegisteredTensors,
    Scalar,
    UnaryFuseArgs,
)
from tests.planner.fuser_ops import NI, RO, RW, abc_exp, op, relative, t

pytestmark = pytest.mark.skipif(not fastplan.COMPILED, reason="fastplan is not compiled")
F = FuseType.F32


def twins(module: str):
    return (importlib.import_module(f"refimpl.planner.{module}"),
            importlib.import_module(f"fastplan.{module}"))


def run_both(module: str, scenario):
    """``scenario(module)`` on both twins: results (or error classes) must be equal."""
    results = []
    for m in twins(module):
        try:
            results.append(("ok", scenario(m)))
        except Exception as exc:  # noqa: BLE001 - the class is compared
            results.append(("raised", type(exc)))
    assert results[1] == results[0]
    return results[0]


def test_def_twins_trace_fuser_calls():
    def scenario(builder):
        fuser = builder.TraceFuser(ELEMENTWISE_SETTINGS)
        a, b = t(0, (1, 2)), t(1, (1, 2))
        out = [fuser.input(a), fuser.input(b), fuser.output(t(2, (1, 2), NI))]
        fuser.fuse_operation(FuseOp("Add", BinaryFuseArgs(*out)))
        out.append(fuser.scalar(0, DType.F16))
        out.append(fuser.input_indexed(t(5, (3,))))
        fuser.fuse_operation(FuseOp("Cat", CatArgs((out[-1],), out[2], 0)))
        fuser.fuse_dropped(t(2, (1, 2), RW))
        out.append((fuser.num_ops_fused(), fuser.estimate_bindings()))
        fuser.next_block((1, 2), REDUCE_WRITE_SETTINGS)
        out.append(fuser.block_local_input(t(2, (1, 2), RO), 0, True))
        out.append(fuser.output_unhandled(t(9, (1, 0), NI)))
        out.append(fuser.input_unhandled(t(8, (1, 0))))
        fuser.output_nhwc_layout(t(9, (1, 0)), (0, 1))
        out.append(fuser.num_multi_block_local_inputs())
        clone = fuser.clone()
        clone.input(t(11, (1, 0)))
        out.append(fuser.finish((1, 0)))
        out.append(clone.finish((1, 0)))
        return out

    assert run_both("engine.builder", scenario)[0] == "ok"


def test_def_twins_block_builder_and_pool():
    def scenario(builder):
        resources = builder.ResourcesBuilder()
        block = builder.FuseBlockBuilder(REDUCE_READ_SETTINGS)
        results = [block.input(t(0, (0, 2)), resources), block.output(t(1, (0, 2), NI), resources)]
        results.append(block.multi_block_variable(0, t(1, (0, 2)), False))
        results.append(block.multi_block_variable(0, t(7, (0, 2)), False))
        results.append(block.input_swap_dims(t(0, (0, 2)), t(3, (2, 0), NI), (0, 1), resources))
        results.append(block.input_reshaped(t(0, (0, 2)), t(4, (0, 0, 2), NI), resources))
        buffers = [5]
        results.append(block.tensor_writes(resources, buffers).freeze())
        outputs = RegisteredTensors()
        results.append(block.build(resources, outputs, buffers))
        results += [outputs.freeze(), tuple(buffers), resources.freeze(outputs)]
        try:
            block.input_swap_dims(t(1, (0, 2)), t(6, (2, 0), NI), (0, 1), resources)
        except Refusal as refusal:
            results.append(refusal.reason)
        pool = builder.LocalVariablePool()
        results += [pool.create(F, 3), pool.create(FuseType.F16, 3), pool.create(F, 3),
                    pool.get(F, 3), pool.get_any_precision(3), pool.get(F, 4),
                    pool.clone().get(FuseType.F16, 3)]
        return results

    assert run_both("engine.builder", scenario)[0] == "ok"


def test_def_twins_try_trace_fuser_with_python_add_ops():
    def scenario(trace_fuser):
        fuser = trace_fuser.TryTraceFuser(4, ELEMENTWISE_SETTINGS)

        def add(tensors, out):
            def add_ops(b):
                args = [b.input(tensor) for tensor in tensors]
                b.fuse_operation(FuseOp("Add", BinaryFuseArgs(args[0], args[1], b.output(out))))
            return add_ops

        def refuse(b):
            b.input(t(0, (0,)))
            raise Refusal("custom")

        reasons = [fuser.fuse(add((t(0, (0,)), t(1, (0,))), t(2, (0,), NI))),
                   fuser.fuse(refuse),
                   fuser.fuse(add((t(2, (0,), RW), t(3, (0,))), t(4, (0,), NI))),
                   fuser.fuse(add((t(4, (0,), RW), t(5, (0,))), t(6, (0,), NI)))]
        fuser.max_ops = 0
        reasons.append(fuser.fuse(refuse))
        return reasons, fuser.finish((0,)), fuser.clone().finish((0,))

    assert run_both("engine.trace_fuser", scenario)[0] == "ok"


def test_def_twins_trace_operation_fuser_helpers():
    def scenario(trace_fuser):
        fuser = trace_fuser.TraceOperationFuser(28, ELEMENTWISE_SETTINGS)
        ops = relative(abc_exp())
        results = [fuser.refusal(ops[0]), fuser.can_fuse(ops[0]), fuser.len()]
        for o in ops:
            fuser.fuse(o)
        results += [fuser.output_is_compatible(t(9, (1, 2), NI)),
                    fuser.output_is_compatible(t(9, (3,), NI)),
                    fuser.fuse_unary_op(t(5, (1, 2), RW), t(10, (1, 2), NI), "Exp"),
                    fuser.current_output_shape, fuser.properties(), fuser.estimate_bindings(),
                    fuser.scoring.num_reads, fuser.num_views, fuser.settings]
        results.append(fuser.next_block((t(10, (1, 2)),), REDUCE_WRITE_SETTINGS, False))
        fuser.block_local_input(t(5, (1, 2)), 0, True)
        results.append(fuser.output_unhandled(t(11, (1, 3), NI)))
        results.append(fuser.input_unhandled(t(12, (3, 3))))
        fuser.close("my reason", ops[0], 7)
        results += [fuser.closed_reason, fuser.closed_log, fuser.status(), fuser.finish()]
        fuser.reset()
        results += [fuser.len(), fuser.closed_reason, fuser.closed_log, fuser.properties()]
        return results

    assert run_both("engine.trace_fuser", scenario)[0] == "ok"


def test_def_twins_scoring_evaluate_on_finished_traces():
    trace = importlib.import_module("refimpl.planner.fusers.elemwise").ElementWiseFuser(28)
    for o in relative(abc_exp()):
        trace.fuse(o)
    finished = trace.finish().main_trace()

    def scenario(scoring):
        score = scoring.Scoring(6, 3, 4)
        other = score.clone()
        other.register(relative(abc_exp())[0])
        return (score.evaluate(finished), other.evaluate(finished), repr(other),
                score == scoring.Scoring(6, 3, 4), score.calculate_score(1, 1, 1))

    assert run_both("engine.scoring", scenario)[0] == "ok"


def test_def_twins_relative_conversion():
    stream = [op("NumericFloat.MulScalar", lhs=t(40, (512, 32)), rhs=2.5, out=t(41, (512, 32), NI)),
              op("BaseFloat.Slice", tensor=t(41, (512, 32), RW), ranges=((0, 8), (1, 3)),
                 out=t(42, (8, 2), NI)),
              op("Drop", tensor=t(40, (512, 32), RW)),
              op("BaseFloat.Cat", tensors=(t(42, (8, 2)), t(43, (8, 2))), dim=0,
                 out=t(44, (16, 2), NI)),
              op("NumericFloat.Clamp", tensor=t(44, (16, 2), RW), min=-1.0, max=1.0,
                 out=t(45, (16, 2), NI))]

    def scenario(relative_module):
        converter = relative_module.OperationConverter()
        converted = [relative_module.to_relative(o, converter) for o in stream]
        fields = (converter.tensors_relative2global, converter.tensors_global2relative,
                  converter.shapes_global2relative, converter.shapes_relative2global,
                  converter.scalars, converter.ranges, converter.num_relative_shapes(),
                  converter.global_shape((1, 2)), converter.dim(7), converter.scalar(1.5),
                  converter.range((2, 3)))
        converter.clear()
        return converted, fields, converter.tensor(TensorIr(5, (3,), DType.F32, RO))

    assert run_both("stream.relative", scenario)[0] == "ok"


def test_def_twins_scalar_and_indexed_errors():
    def scenario(builder):
        fuser = builder.TraceFuser(ELEMENTWISE_SETTINGS)
        return fuser.scalar(2.0, DType.F32)

    assert run_both("engine.builder", scenario)[0] == "raised"
    assert Scalar(0, F) != Input(0, F)  # the twins build refimpl's classes
    assert FuseOp.assign(BlockLocal(0, F), Input(0, F)).args == UnaryFuseArgs(BlockLocal(0, F),
                                                                             Input(0, F))
    assert TensorStatus.ReadWrite is RW


@pytest.mark.skipif(not fastplan.COMPILED, reason="fastplan is not compiled")
@pytest.mark.parametrize("workload", ["elementwise", "transformer", "mixed"])
def test_def_twins_optimization_reading(workload):
    """What the queue reads of a stored plan's optimizations at their fields
    (``fastplan.search.strategy``: ``max_relative_shape_id``, and each fused step's inputs, outputs
    and block op names) equals what their methods answer, on every plan a stream stores."""
    from fuselab import workloads
    from fastplan.stream.processor import StreamPlanner
    from fastplan.fusers.registry import FusionRegistry
    from fastplan.search.strategy import max_relative_shape_id
    from refimpl.devices import profile_named
    from refimpl.planner.search import strategy as ref_strategy

    planner = StreamPlanner(FusionRegistry().fusers(profile_named("metal")))
    planner.run(workloads.build(workload, 1500))
    by_fuser: dict[str, int] = {}
    for plan in planner.store.plans:
        strategy = plan.optimization.strategy
        assert max_relative_shape_id(strategy) == ref_strategy.max_relative_shape_id(strategy)
        for leaf in ref_strategy.leaves(strategy):
            if isinstance(leaf, ref_strategy.Optimization):
                by_fuser[leaf.opt.name] = by_fuser.get(leaf.opt.name, 0) + 1
    steps = [s for s in planner.queue.steps if s.kind == "fused"]
    executed = [e for e in planner.queue.executed if e.step.kind == "fused"]
    assert len(steps) == len(executed) > 0
    for step, done in zip(steps, executed, strict=True):
        opt = done.optimization
        assert len(step.inputs) == len(opt.global_inputs())
        assert len(step.outputs) == len(opt.global_outputs())
        assert tuple(block.ops for block in step.blocks) == opt.block_op_names()
    assert len(by_fuser) >= (1 if workload == "elementwise" else 2)
