"""Scoring: burn's unit values (engine/scoring.rs tests) and the scores the fusers report, on
refimpl and on fastplan (the ``planner_impl`` fixture)."""

from __future__ import annotations

import importlib

import pytest

from tests.planner.fuser_ops import NI, RO, RW, abc_exp, drop, feed, op, relative, t, unary_chain


@pytest.mark.parametrize("counts, fused, expected", [
    ((2, 2, 2), (1, 1, 0), 210),  # test_scoring_io_savings
    ((2, 2, 2), (1, 1, 1), 160),  # test_scoring_with_penalties
    ((1, 1, 2), (1, 1, 1), 0),  # test_penalty_outweighs_benefit
    ((0, 0, 0), (0, 0, 0), 0),  # test_scoring_no_ops
])
def test_scoring_unit_values(planner_impl, counts, fused, expected):
    reads, writes, ops = counts
    scoring = planner_impl.engine.scoring.Scoring(num_reads=reads, num_writes=writes, num_ops=ops)
    assert scoring.calculate_score(*fused) == expected


def test_scoring_reset(planner_impl):
    scoring = planner_impl.engine.scoring.Scoring(10, 10, 10)
    scoring.reset()
    assert scoring == planner_impl.engine.scoring.Scoring(0, 0, 0)


def test_scoring_register_counts_unfused_io(planner_impl):
    scoring = planner_impl.engine.scoring.Scoring()
    for o in relative(abc_exp() + [drop(16, (4, 6))]):
        scoring.register(o)
    # mul 2+1, add 2+1, exp 1+1, drop 1+0
    assert (scoring.num_reads, scoring.num_writes, scoring.num_ops) == (6, 3, 4)


def score(impl, ops) -> int:
    return feed(impl.fusers.elemwise.ElementWiseFuser(28), ops).properties().score


def test_scoring_lone_elementwise_op_scores_zero(planner_impl):
    assert score(planner_impl, unary_chain(1)) == 0


def test_scoring_add_then_exp(planner_impl):
    shape = (4, 4)
    ops = [op("NumericFloat.Add", lhs=t(0, shape), rhs=t(1, shape), out=t(2, shape, NI)),
           op("Float.Exp", input=t(2, shape, RW), out=t(3, shape, NI))]
    assert score(planner_impl, ops) == 210


def test_scoring_abc_exp(planner_impl):
    # unfused io 8, fused 3 reads + 1 write: 4 * 100 + 2 * 10
    assert score(planner_impl, abc_exp()) == 420


def test_scoring_drop_quirk(planner_impl):
    shape = (4, 6)
    ops = [op("Float.Exp", input=t(0, shape, RO), out=t(1, shape, NI)), drop(0, shape)]
    # the drop counts one unfused read and one op: (3 - 2) * 100 + 10
    assert score(planner_impl, ops) == 110


def test_scoring_view_read_is_penalised(planner_impl):
    shape = (4, 4)
    ops = [op("NumericFloat.AddScalar", lhs=t(0, shape), rhs=1.0, out=t(1, shape, NI)),
           op("BaseFloat.SwapDims", input=t(0, shape, RW), out=t(2, shape, NI), dim1=0, dim2=1),
           op("NumericFloat.Add", lhs=t(1, shape, RW), rhs=t(2, shape, RW), out=t(3, shape, NI))]
    # unfused 7, fused 2 reads (one through the view) + 1 write; one penalty
    assert score(planner_impl, ops) == (7 - 3) * 100 + 2 * 10 - 50


def test_scoring_100_op_chain_split(planner_impl):
    ops = unary_chain(100)
    # notes §9.5: the 65-op kernel, then the 35-op tail in a fresh block
    assert score(planner_impl, ops) == (130 - 2) * 100 + 64 * 10
    assert score(planner_impl, unary_chain(35, first=65)) == (70 - 2) * 100 + 34 * 10


def test_def_twins_scoring_evaluate_on_finished_traces(run_both):
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
