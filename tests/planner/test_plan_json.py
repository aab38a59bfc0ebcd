"""The plan data model and its canonical JSON (``refimpl/planner/stream/plan.py``); the last test
round-trips plans made by refimpl and by fastplan (the ``plan`` fixture)."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from refimpl.planner.stream.plan import (
    Plan,
    PlanBlock,
    PlanFormatError,
    PlanStep,
    plan_from_json,
    plan_to_json,
)
from refimpl.seed import SEED_STREAMS

FUSED = PlanStep("fused", (0, 1, 2), fuser="ElementWise", score=420, inputs=(0, 1, 2),
                 outputs=(5,), blocks=(PlanBlock(("Mul", "Add", "Exp")),))
UNFUSED = PlanStep("unfused", (4, 5))

ids = st.lists(st.integers(0, 10_000), max_size=6).map(tuple)
names = st.lists(st.sampled_from(["Add", "Mul", "Exp", "Assign", "Cat"]), max_size=5).map(tuple)
blocks = st.builds(PlanBlock, names, st.none() | st.sampled_from([1, 2, 4]))
fused_steps = st.builds(
    PlanStep, st.just("fused"), ids,
    fuser=st.sampled_from(["ElementWise", "Matmul", "Reduce", "ReduceBroadcasted",
                           "NHWCRelayout"]),
    score=st.integers(0, 100_000), inputs=ids, outputs=ids,
    aliases=st.lists(st.tuples(st.integers(0, 99), st.integers(0, 99)), max_size=3,
                     unique_by=lambda pair: pair[0]).map(tuple),
    blocks=st.lists(blocks, max_size=3).map(tuple))
unfused_steps = st.builds(PlanStep, st.just("unfused"), ids)
plans = st.builds(Plan, st.sampled_from(["metal", "webgpu-default", "cuda"]),
                  st.lists(fused_steps | unfused_steps, max_size=5).map(tuple))


def test_plan_json_layout_is_one_line_per_step():
    text = plan_to_json(Plan("metal", (FUSED, UNFUSED)))
    assert text == (
        '{"version":1,"device":"metal","steps":[\n'
        '{"kind":"fused","ops":[0,1,2],"fuser":"ElementWise","score":420,"inputs":[0,1,2],'
        '"outputs":[5],"aliases":{},"blocks":[{"ops":["Mul","Add","Exp"],"width":null}]},\n'
        '{"kind":"unfused","ops":[4,5]}\n'
        ']}\n'
    )


def test_plan_json_empty_plan():
    assert plan_to_json(Plan("cuda", ())) == '{"version":1,"device":"cuda","steps":[]}\n'
    assert plan_from_json(plan_to_json(Plan("cuda", ()))) == Plan("cuda", ())


def test_plan_json_aliases_and_widths_are_written_when_planned():
    step = PlanStep("fused", (0,), fuser="ElementWise", score=1, inputs=(0,), outputs=(1,),
                    aliases=((1, 0),), blocks=(PlanBlock(("Exp",), 2),))
    data = json.loads(plan_to_json(Plan("metal", (step,))))
    assert data["steps"][0]["aliases"] == {"1": 0}
    assert data["steps"][0]["blocks"] == [{"ops": ["Exp"], "width": 2}]


@given(plans)
def test_plan_json_round_trip_is_identity(plan):
    text = plan_to_json(plan)
    assert plan_from_json(text) == plan
    assert plan_to_json(plan_from_json(text)) == text


@given(plans)
def test_plan_json_accepts_any_layout(plan):
    reformatted = json.dumps(json.loads(plan_to_json(plan)), indent=3, sort_keys=True)
    assert plan_from_json(reformatted) == plan


def test_plan_counts_kernels():
    plan = Plan("metal", (FUSED, UNFUSED))
    assert plan.num_kernels() == 3
    assert plan.fused_steps() == (FUSED,)


@pytest.mark.parametrize("text, field", [
    ("not json", None),
    ('{"version":2,"device":"metal","steps":[]}', None),
    ('{"version":1,"steps":[]}', None),
    ('{"version":1,"device":"metal","steps":[{"kind":"odd","ops":[]}]}', "steps.0"),
    ('{"version":1,"device":"metal","steps":[{"kind":"unfused","ops":[1.5]}]}', "steps.0.ops"),
    ('{"version":1,"device":"metal","steps":[{"kind":"fused","ops":[0],"blocks":[3]}]}',
     "steps.0.blocks.0"),
])
def test_plan_json_rejects_malformed_documents(text, field):
    with pytest.raises(PlanFormatError) as error:
        plan_from_json(text)
    assert error.value.field == field


@pytest.mark.parametrize("name", ["mul_add_exp", "chain", "independent", "matmul_add_exp",
                                  "mul_sum_dim_exp"])
def test_plan_json_round_trip_of_a_planned_seed_stream(name, plan):
    planned = plan(SEED_STREAMS[name](), "metal")
    text = plan_to_json(planned)
    assert plan_from_json(text) == planned
    assert plan_to_json(plan_from_json(text)) == text
