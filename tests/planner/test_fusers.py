"""The five fusers on hand-built streams: Matmul, Reduce, ReduceBroadcasted, NHWCRelayout, and
what every optimization exposes to the search (notes §8, §10.3); on refimpl and on fastplan
(the ``planner_impl`` fixture)."""

from __future__ import annotations

import pytest

from refimpl.dtypes import DType
from refimpl.planner.engine.fuser import FuserStatus
from refimpl.planner.engine.trace import FuseType, MultiBlockLocal, MultiBlockPos, NhwcStridesView
from refimpl.planner.fusers.matmul import MatmulOptimization
from refimpl.planner.fusers.reduce import ReduceOptimization
from refimpl.planner.fusers.reduce_broadcasted import ReduceBroadcastedOptimization
from tests.planner.fuser_ops import NI, RO, RW, feed, op, t

# --- Matmul --------------------------------------------------------------------------------


def matmul_epilogue(c_shape=(4, 8)) -> list:
    return [op("Float.Matmul", lhs=t(10, (4, 6), RW), rhs=t(11, (6, 8), RW),
               out=t(12, (4, 8), NI)),
            op("NumericFloat.Add", lhs=t(12, (4, 8), RW), rhs=t(13, c_shape, RW),
               out=t(14, (4, 8), NI)),
            op("Float.Exp", input=t(14, (4, 8), RW), out=t(15, (4, 8), NI))]


def test_fusers_matmul_epilogue_is_ready(planner_impl):
    fuser = feed(planner_impl.fusers.matmul.MatmulFuser(28), matmul_epilogue())
    assert (fuser.len(), fuser.status(), fuser.properties().ready) == (3, FuserStatus.Open, True)
    optimization = fuser.finish()
    assert isinstance(optimization, MatmulOptimization) and optimization.len() == 3
    assert optimization.global_inputs() == (0, 1, 3)  # lhs, rhs (unhandled), c
    assert optimization.global_outputs() == (5,)  # the matmul result stays a local
    assert optimization.block_op_names() == (("Add", "Exp"),)
    # the fallback reads the matmul result (relative id 2) as a plain input
    assert optimization.trace_fallback.input_ids() == (2, 3)


def test_fusers_lone_matmul_is_not_ready(planner_impl):
    fuser = feed(planner_impl.fusers.matmul.MatmulFuser(28), matmul_epilogue()[:1])
    assert (fuser.len(), fuser.properties().ready) == (1, False)


def test_fusers_matmul_first_op_must_be_matmul(planner_impl):
    fuser = feed(planner_impl.fusers.matmul.MatmulFuser(28), matmul_epilogue()[1:])
    assert fuser.status() is FuserStatus.Closed
    assert fuser.closed_reason == "first op not a matmul"
    assert not fuser.properties().ready


def test_fusers_matmul_epilogue_cannot_grow_output(planner_impl):
    ops = [op("Float.Matmul", lhs=t(10, (4, 6), RW), rhs=t(11, (6, 1), RW),
              out=t(12, (4, 1), NI)),
           op("NumericFloat.Add", lhs=t(12, (4, 1), RW), rhs=t(13, (4, 8), RW),
              out=t(14, (4, 8), NI))]
    fuser = feed(planner_impl.fusers.matmul.MatmulFuser(28), ops)
    assert (fuser.len(), fuser.closed_reason) == (1, "shape")


# --- Reduce --------------------------------------------------------------------------------


def mul_sum_exp(dtype=DType.F32, reduction="NumericFloat.SumDim") -> list:
    full, reduced = (4, 6), (4, 1)
    return [op("NumericFloat.Mul", lhs=t(10, full, RW, dtype), rhs=t(11, full, RW, dtype),
               out=t(12, full, NI, dtype)),
            op(reduction, input=t(12, full, RW, dtype), out=t(13, reduced, NI, dtype), axis=1),
            op("Float.Exp", input=t(13, reduced, RW, dtype), out=t(14, reduced, NI, dtype))]


def test_fusers_reduce_fuses_on_read_and_write(planner_impl):
    fuser = feed(planner_impl.fusers.reduce.ReduceFuser(28), mul_sum_exp())
    assert (fuser.len(), fuser.status(), fuser.properties().ready) == (3, FuserStatus.Open, True)
    optimization = fuser.finish()
    assert isinstance(optimization, ReduceOptimization)
    assert optimization.block_op_names() == (("Mul",), ("Exp",))
    assert (optimization.reduce.inst, optimization.reduce.axis) == ("Sum", 1)
    assert optimization.global_inputs() == (0, 1)
    assert optimization.global_outputs() == (4,)
    read_block = optimization.blocks()[0]
    shared = MultiBlockLocal(MultiBlockPos(0, 0), FuseType.F32)
    assert read_block.write_ops()[0].args.out == shared == optimization.reduce.input
    assert fuser.properties().score == 210
    assert optimization.num_ops_read == 1


def test_fusers_reduce_first_op_closes(planner_impl):
    fuser = feed(planner_impl.fusers.reduce.ReduceFuser(28), mul_sum_exp()[1:])
    assert fuser.status() is FuserStatus.Closed
    assert (fuser.len(), fuser.properties().ready) == (0, False)


def test_fusers_reduce_full_sum_closes(planner_impl):
    full = (4, 6)
    ops = [op("NumericFloat.Mul", lhs=t(0, full), rhs=t(1, full), out=t(2, full, NI)),
           op("NumericFloat.Sum", input=t(2, full, RW), out=t(3, (1,), NI))]
    fuser = feed(planner_impl.fusers.reduce.ReduceFuser(28), ops)
    assert (fuser.status(), fuser.closed_reason) == (FuserStatus.Closed, "unsupported op")
    assert not fuser.properties().ready


@pytest.mark.parametrize("reduction, acc", [("NumericFloat.SumDim", FuseType.F32),
                                            ("NumericFloat.MaxDim", FuseType.F16)])
def test_fusers_reduce_accumulator(planner_impl, reduction, acc):
    fuser = feed(planner_impl.fusers.reduce.ReduceFuser(28), mul_sum_exp(DType.F16, reduction))
    assert fuser.finish().reduce.acc is acc


def test_fusers_reduce_read_block_does_not_broadcast(planner_impl):
    ops = [op("Float.Exp", input=t(0, (4, 1)), out=t(1, (4, 1), NI)),
           op("NumericFloat.Add", lhs=t(1, (4, 1), RW), rhs=t(2, (4, 8)), out=t(3, (4, 8), NI))]
    assert feed(planner_impl.fusers.elemwise.ElementWiseFuser(28), ops).len() == 2
    fuser = feed(planner_impl.fusers.reduce.ReduceFuser(28), ops)
    assert (fuser.len(), fuser.closed_reason) == (1, "shape")


def test_fusers_reduce_of_indexed_input_closes(planner_impl):
    # burn panics here (the reduce input is an indexed gather operand); fuselab closes
    idx = t(1, (4, 3), RO, DType.I32)
    ops = [op("BaseFloat.Gather", tensor=t(0, (4, 6)), dim=1, indices=idx, out=t(2, (4, 3), NI)),
           op("NumericInt.SumDim", input=t(1, (4, 3), RW, DType.I32),
              out=t(3, (4, 1), NI, DType.I32), axis=1)]
    fuser = feed(planner_impl.fusers.reduce.ReduceFuser(28), ops)
    assert (fuser.status(), fuser.closed_reason) == (FuserStatus.Closed, "indexed input")
    assert not fuser.properties().ready
    broadcasted = feed(planner_impl.fusers.reduce_broadcasted.ReduceBroadcastedFuser(28), ops)
    assert broadcasted.status() is FuserStatus.Closed


# --- ReduceBroadcasted (burn's reduce_broadcast_workflow tests; shapes are relative ids) ------


def rel(tensor_id, shape, status):
    return t(tensor_id, shape, status)


def test_fusers_reduce_broadcasted_workflow_1(planner_impl):
    fuser = planner_impl.fusers.reduce_broadcasted.ReduceBroadcastedFuser(28)
    steps = [
        op("BaseFloat.Ones", out=rel(0, (1, 2), NI)),
        op("NumericFloat.SumDim", input=rel(0, (1, 2), RW), out=rel(1, (1, 0), NI), axis=1),
        op("NumericFloat.Add", lhs=rel(1, (1, 0), RW), rhs=rel(2, (1, 0), RW),
           out=rel(3, (1, 0), NI)),
        op("NumericFloat.Add", lhs=rel(3, (1, 0), RW), rhs=rel(4, (1, 2), RW),
           out=rel(5, (1, 2), NI)),
        op("NumericFloat.SumDim", input=rel(5, (1, 2), RW), out=rel(6, (1, 0), NI), axis=1),
    ]
    fuser.fuse(steps[0])
    for expected_len, step in zip((2, 3, 4, 5), steps[1:]):
        fuser.fuse(step)
        assert fuser.len() == expected_len
        assert fuser.status() is FuserStatus.Open
        assert fuser.properties().ready
    optimization = fuser.finish()
    assert isinstance(optimization, ReduceBroadcastedOptimization)
    assert optimization.len() == 5
    assert [b.inst for b in optimization.broadcasted.blocks] == ["Sum", "Sum"]
    assert [o.name for o in optimization.fallbacks] == ["Reduce", "Reduce"]


def test_fusers_reduce_broadcasted_workflow_2(planner_impl):
    fuser = planner_impl.fusers.reduce_broadcasted.ReduceBroadcastedFuser(28)
    steps = [
        op("BaseFloat.Ones", out=rel(0, (1, 2), NI)),
        op("NumericFloat.Add", lhs=rel(0, (1, 2), RW), rhs=rel(2, (1, 2), RO),
           out=rel(3, (1, 2), NI)),
        op("NumericFloat.SumDim", input=rel(3, (1, 2), RW), out=rel(1, (1, 0), NI), axis=1),
    ]
    for step in steps:
        fuser.fuse(step)
    assert (fuser.len(), fuser.status(), fuser.properties().ready) == (3, FuserStatus.Open, True)
    fuser.fuse(op("NumericFloat.Add", lhs=rel(1, (1, 0), RW), rhs=rel(2, (1, 2), RW),
                  out=rel(5, (1, 2), NI)))
    assert (fuser.len(), fuser.status(), fuser.properties().ready) == (4, FuserStatus.Open, True)
    optimization = fuser.finish()
    assert [o.name for o in optimization.fallbacks] == ["Reduce", "ElementWise"]


def test_fusers_reduce_broadcasted_needs_last_axis(planner_impl):
    full = (4, 6)
    ops = [op("NumericFloat.Mul", lhs=t(0, full), rhs=t(1, full), out=t(2, full, NI)),
           op("NumericFloat.SumDim", input=t(2, full, RW), out=t(3, (1, 6), NI), axis=0)]
    fuser = feed(planner_impl.fusers.reduce_broadcasted.ReduceBroadcastedFuser(28), ops)
    assert fuser.status() is FuserStatus.Closed
    assert fuser.closed_reason == "reduce axis not last"
    assert not fuser.properties().ready


def test_fusers_reduce_broadcasted_elementwise_only_not_ready(planner_impl):
    full = (4, 6)
    ops = [op("NumericFloat.Mul", lhs=t(0, full), rhs=t(1, full), out=t(2, full, NI)),
           op("Float.Exp", input=t(2, full, RW), out=t(3, full, NI))]
    fuser = feed(planner_impl.fusers.reduce_broadcasted.ReduceBroadcastedFuser(28), ops)
    assert (fuser.len(), fuser.status(), fuser.properties().ready) == (2, FuserStatus.Open, False)


# --- NHWCRelayout ----------------------------------------------------------------------------


def exp_then_pool(x_status=RW, with_exp=True) -> list:
    shape, pooled = (2, 3, 4, 4), (2, 3, 2, 2)
    pool = op("Module.MaxPool2d", x=t(1, shape, x_status), kernel_size=(2, 2), stride=(2, 2),
              padding=(0, 0), dilation=(1, 1), out=t(2, pooled, NI))
    exp = op("Float.Exp", input=t(0, shape), out=t(1, shape, NI))
    return [exp, pool] if with_exp else [pool]


def test_fusers_nhwc_relayout_ready_after_elementwise_op(planner_impl):
    fuser = feed(planner_impl.fusers.nhwc.NHWCRelayoutFuser(28), exp_then_pool())
    elementwise = feed(planner_impl.fusers.elemwise.ElementWiseFuser(28), exp_then_pool()[:1])
    trace_score = elementwise.properties().score
    properties = fuser.properties()
    assert (fuser.len(), fuser.status(), properties.ready) == (2, FuserStatus.Closed, True)
    assert properties.score == trace_score + 100
    optimization = fuser.finish()
    assert optimization.main_trace().resources.views == (NhwcStridesView(1, (0, 3, 1, 2)),)
    assert optimization.global_outputs() == (1,)


def test_fusers_nhwc_relayout_needs_readwrite_input(planner_impl):
    fuser = feed(planner_impl.fusers.nhwc.NHWCRelayoutFuser(28), exp_then_pool(x_status=RO))
    assert fuser.closed_reason == "unsupported op variant"
    assert not fuser.properties().ready


def test_fusers_nhwc_relayout_needs_an_elementwise_op(planner_impl):
    fuser = feed(planner_impl.fusers.nhwc.NHWCRelayoutFuser(28), exp_then_pool(with_exp=False))
    assert (fuser.len(), fuser.status(), fuser.properties().ready) == (1, FuserStatus.Closed,
                                                                       False)


# --- the fuser protocol ----------------------------------------------------------------------


@pytest.mark.parametrize("module, name", [
    ("fusers.elemwise", "ElementWiseFuser"), ("fusers.matmul", "MatmulFuser"),
    ("fusers.reduce", "ReduceFuser"), ("fusers.reduce_broadcasted", "ReduceBroadcastedFuser"),
    ("fusers.nhwc", "NHWCRelayoutFuser")])
def test_fusers_clone_is_independent_and_reset_restores(planner_impl, module, name):
    make = getattr(getattr(planner_impl, module), name)
    fresh = make(28)
    fuser = feed(make(28), mul_sum_exp())
    copy = fuser.clone()
    feed(copy, mul_sum_exp())
    assert (fuser.len(), fuser.status()) == (feed(make(28), mul_sum_exp()).len(),
                                             feed(make(28), mul_sum_exp()).status())
    fuser.reset()
    assert (fuser.len(), fuser.status(), fuser.properties()) == (
        fresh.len(), fresh.status(), fresh.properties())


def test_fusers_max_relative_shape_id_spans_every_trace(planner_impl):
    optimization = feed(planner_impl.fusers.reduce.ReduceFuser(28), mul_sum_exp()).finish()
    # [4, 6] -> ids (1, 2); the write block's reference [4, 1] -> (1, 0)
    assert optimization.max_relative_shape_id() == 2
    assert len(optimization.traces()) == 3
    matmul = feed(planner_impl.fusers.matmul.MatmulFuser(28), matmul_epilogue()).finish()
    assert matmul.max_relative_shape_id() == 3  # 4 -> 1, 6 -> 2, 8 -> 3
