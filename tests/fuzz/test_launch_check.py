"""The ``launch`` check: refimpl's launch plans held to fastplan's launch planner, launch by
launch; a difference is reported with its step, launch, block or binding and both values."""

from __future__ import annotations

import dataclasses

import pytest

import fastplan
from fuselab.fuzz import Config, fuzz
from fuselab.fuzz.checks import Case, Harness, check_launch
from fuselab.fuzz.launches import first_mismatch, recorded_launches
from fuselab.fuzz.plans import Planners
from refimpl.dtypes import DType
from refimpl.planner.launch.launch import plan_launch
from refimpl.strategies.builder import StreamBuilder


def _stream():
    """A contiguous [4, 8] f32 input, two element-wise ops: one fused step, width 4 on metal."""
    b = StreamBuilder()
    x = b.add_input((4, 8), DType.F32, seed=1)
    y = b.op("Float.Exp", (4, 8), DType.F32, input=x)
    b.sync((b.op("NumericFloat.MulScalar", (4, 8), DType.F32, lhs=y, rhs=2.0),))
    return b.build()


def _executed(stream):
    profile, executed = Planners("ref").executed(stream, "default", "metal")
    return profile, executed


def test_every_launch_of_the_walk_is_recorded_with_its_step():
    stream = _stream()
    profile, executed = _executed(stream)
    calls = recorded_launches(stream, executed, profile)
    fused = [k for k, item in enumerate(executed) if item.step.fused]
    assert fused and [c.step for c in calls] == fused
    assert all(c.order == 0 and not isinstance(c.plan, str) for c in calls)
    assert calls[0].plan.inputs[0].vector_size == 4


def test_a_planner_that_narrows_a_binding_is_named_with_both_values():
    def narrowing(*args, **kwargs):
        launch = plan_launch(*args, **kwargs)
        first = dataclasses.replace(launch.plan.inputs[0], vector_size=1)
        plan = dataclasses.replace(launch.plan, inputs=(first, *launch.plan.inputs[1:]))
        return dataclasses.replace(launch, plan=plan)

    stream = _stream()
    profile, executed = _executed(stream)
    found = first_mismatch(stream, executed, profile, narrowing)
    assert found.symptom == "input vector size differs"
    assert found.detail == (f"step {found.step} (ElementWise, ops [0, 1]), launch 0: input "
                            f"binding 0 (tensor {stream.ops[0].inputs()[0].id}): vector size "
                            "refimpl 4, fastplan 1")
    assert first_mismatch(stream, executed, profile, plan_launch) is None


def test_a_planner_that_moves_the_reference_is_a_config_difference():
    def elsewhere(*args, **kwargs):
        launch = plan_launch(*args, **kwargs)
        configs = tuple(dataclasses.replace(c, vector_axis=c.vector_axis + 1)
                        for c in launch.plan.configs)
        return dataclasses.replace(launch, plan=dataclasses.replace(launch.plan, configs=configs))

    stream = _stream()
    profile, executed = _executed(stream)
    found = first_mismatch(stream, executed, profile, elsewhere)
    assert found.symptom == "vector axis differs"
    assert "block 0: vector axis refimpl 1, fastplan 2" in found.detail


@pytest.mark.skipif(not fastplan.COMPILED, reason="fastplan is not compiled (make build)")
def test_the_shipped_launch_planners_agree_over_a_campaign():
    summary = fuzz(Config(seed=3, count=120, checks=("launch",),
                          devices=("metal", "webgpu-default", "cuda"))).to_json()
    assert summary["streams"] == 120 and summary["buckets"] == {}
    assert summary["notes"] == {}


@pytest.mark.skipif(fastplan.COMPILED, reason="fastplan is compiled")
def test_without_the_compiled_twin_the_launch_check_is_a_note():
    h = Harness(Planners("ref"))
    assert check_launch(Case(_stream()), h) is None
    assert h.notes == {"launch: fastplan is not compiled (no second launch planner)": 1}
