"""TraceOperationFuser / TryTraceFuser / TraceFuser: burn's decisions on hand-built streams
(notes §2.3, §3, §4; seed page: first-op binding check). Every test runs on refimpl and on
fastplan (the ``planner_impl`` fixture)."""

from __future__ import annotations

import pytest

from refimpl.devices import profile_named
from refimpl.dtypes import DType
from refimpl.planner.engine.builder import Refusal
from refimpl.planner.engine.fuser import FuserStatus
from refimpl.planner.engine.settings import ELEMENTWISE_SETTINGS, REDUCE_WRITE_SETTINGS
from refimpl.planner.engine.trace import (
    BinaryFuseArgs, BlockLocal, FuseOp, FuseType, Input, InputReshaped, InputSwapDims, Output,
    Scalar, ScalarShape, SwapDimsView, UnaryFuseArgs,
)
from tests.planner.fuser_ops import (
    NI, RO, RW, abc_exp, add_chain, drop, feed, op, relative, t, unary_chain,
)

F = FuseType.F32


def elementwise(impl, ops, max_bindings: int = 28):
    """An ElementWise fuser of ``impl`` (refimpl or fastplan) fed the relative form of ``ops``."""
    return feed(impl.fusers.elemwise.ElementWiseFuser(max_bindings), ops)


# --- (a * b + c).exp(): the seed page's kernel ------------------------------------------------


def test_trace_fuser_abc_exp_matches_seed_kernel(planner_impl):
    fuser = elementwise(planner_impl, abc_exp())
    assert (fuser.len(), fuser.status()) == (3, FuserStatus.Open)
    [block] = fuser.finish().blocks()
    assert block.op_names() == ("Mul", "Add", "Exp")
    # three reads into locals 0, 1, 3 (by relative id 0, 1, 3), one write from local 5
    assert block.reads == (
        (0, (FuseOp.assign(Input(0, F), BlockLocal(0, F)),)),
        (1, (FuseOp.assign(Input(1, F), BlockLocal(1, F)),)),
        (3, (FuseOp.assign(Input(2, F), BlockLocal(3, F)),)),
    )
    assert block.ops[0] == FuseOp("Mul", BinaryFuseArgs(BlockLocal(0, F), BlockLocal(1, F),
                                                        BlockLocal(2, F)))
    assert block.ops[2] == FuseOp("Exp", UnaryFuseArgs(BlockLocal(4, F), BlockLocal(5, F)))
    assert block.writes == ((5, (FuseOp.assign(BlockLocal(5, F), Output(0, F)),)),)
    assert fuser.properties().score > 0


def test_trace_fuser_abc_exp_resources(planner_impl):
    optimization = elementwise(planner_impl, abc_exp()).finish()
    assert optimization.global_inputs() == (0, 1, 3)
    assert optimization.global_outputs() == (5,)  # the temps 2 and 4 are never written
    assert optimization.len() == 3
    assert optimization.block_op_names() == (("Mul", "Add", "Exp"),)


def test_trace_fuser_temp_consumed_readonly_is_written(planner_impl):
    shape = (4, 6)
    ops = [
        op("NumericFloat.Mul", lhs=t(10, shape), rhs=t(11, shape), out=t(13, shape, NI)),
        op("NumericFloat.Add", lhs=t(13, shape, RO), rhs=t(12, shape), out=t(14, shape, NI)),
        op("Float.Exp", input=t(14, shape, RW), out=t(15, shape, NI)),
    ]
    fuser = elementwise(planner_impl, ops)
    # a * b is still held elsewhere: written; the add result is consumed: local
    assert fuser.finish().global_outputs() == (2, 5)
    assert fuser.estimate_bindings() == 3 + 2 + 1


def test_trace_fuser_binding_estimate_abc_on_metal(planner_impl):
    metal = profile_named("metal")
    fuser = elementwise(planner_impl, abc_exp(), metal.max_bindings)
    assert fuser.estimate_bindings() == 3 + 1 + 1  # inputs + outputs + metadata
    # the seed log's est_bindings=1/28: a fuser that closed before holding anything
    matmul = op("Float.Matmul", lhs=t(0, (4, 6)), rhs=t(1, (6, 8)), out=t(2, (4, 8), NI))
    closed = elementwise(planner_impl, [matmul], metal.max_bindings)
    assert closed.closed_reason == "unsupported op"
    assert closed.closed_log.endswith("had 0 ops, est_bindings=1/28")


# --- limits ----------------------------------------------------------------------------------


def test_trace_fuser_100_op_chain_accepts_65(planner_impl):
    ops = unary_chain(100)
    fuser = elementwise(planner_impl, ops[:65])
    assert (fuser.len(), fuser.status()) == (65, FuserStatus.Open)
    fuser = elementwise(planner_impl, ops)
    assert (fuser.len(), fuser.status()) == (65, FuserStatus.Closed)
    assert fuser.closed_reason == "max_ops"
    assert len(fuser.finish().blocks()[0].ops) == 65


def test_trace_fuser_cat_first_op_checks_bindings(planner_impl):
    shape = (2, 4)
    inputs = tuple(t(i, shape) for i in range(7))
    cat = op("BaseFloat.Cat", tensors=inputs, dim=0, out=t(7, (14, 4), NI))
    fuser = elementwise(planner_impl, [cat], max_bindings=7)
    assert (fuser.len(), fuser.status()) == (0, FuserStatus.Closed)
    assert fuser.closed_reason == "max_bindings est_bindings=9/7"
    small = op("BaseFloat.Cat", tensors=inputs[:5], dim=0, out=t(7, (10, 4), NI))
    assert elementwise(planner_impl, [small], max_bindings=7).len() == 1  # 5 + 1 + 1 == 7


def test_trace_fuser_closes_when_bindings_would_exceed(planner_impl):
    fuser = elementwise(planner_impl, add_chain(7), max_bindings=7)
    assert fuser.len() == 4  # reads a0..a4: 5 inputs + 1 output + 1 == 7
    assert fuser.closed_reason == "max_bindings est_bindings=8/7"
    assert fuser.estimate_bindings() == 7


def test_trace_fuser_closed_ignores_later_ops(planner_impl):
    fuser = elementwise(planner_impl, unary_chain(3) + [op("Float.Round", input=t(3, (4, 6), RW),
                                             out=t(4, (4, 6), NI))])
    frozen = fuser.len()
    feed(fuser, unary_chain(2, first=10))
    assert (fuser.len(), fuser.closed_reason) == (frozen, "unsupported op")


# --- drops -------------------------------------------------------------------------------------


def test_trace_fuser_drop_first_closes(planner_impl):
    fuser = elementwise(planner_impl, [drop(0, (4, 6))])
    assert (fuser.len(), fuser.status(), fuser.closed_reason) == (0, FuserStatus.Closed,
                                                                   "drop first")


def test_trace_fuser_drop_makes_output_local(planner_impl):
    shape = (4, 6)
    kept = [op("Float.Exp", input=t(0, shape), out=t(1, shape, NI)),
            op("Float.Log", input=t(1, shape, RO), out=t(2, shape, NI))]
    assert elementwise(planner_impl, kept).finish().global_outputs() == (1, 2)
    fuser = elementwise(planner_impl, kept + [drop(1, shape)])
    optimization = fuser.finish()
    assert fuser.len() == 3
    assert optimization.global_outputs() == (2,)
    assert optimization.main_trace().resources.dropped == (1,)


# --- unsupported ops ----------------------------------------------------------------------------


@pytest.mark.parametrize("make", [
    lambda: op("Init", out=t(0, (4, 6), NI)),
    lambda: op("Module.MaxPool2d", x=t(0, (2, 3, 4, 4)), kernel_size=(2, 2), stride=(2, 2),
               padding=(0, 0), dilation=(1, 1), out=t(1, (2, 3, 2, 2), NI)),
    lambda: op("Bool.Not", input=t(0, (4, 6), RO, DType.BOOL), out=t(1, (4, 6), NI, DType.BOOL)),
])
def test_trace_fuser_unsupported_variant_closes(planner_impl, make):
    fuser = elementwise(planner_impl, unary_chain(2) + [make()])
    assert fuser.len() == 2
    assert fuser.closed_reason == "unsupported op variant"


@pytest.mark.parametrize("name", ["BaseFloat.NotEqual", "NumericFloat.Sum", "Float.Matmul"])
def test_trace_fuser_unsupported_op_closes(planner_impl, name):
    shape = (4, 4)
    out_shape = (1,) if name.endswith("Sum") else shape
    fields = (dict(input=t(0, shape)) if name.endswith("Sum")
              else dict(lhs=t(0, shape), rhs=t(1, shape)))
    fuser = elementwise(planner_impl, [op(name, **fields, out=t(2, out_shape, NI))])
    assert (fuser.len(), fuser.closed_reason) == (0, "unsupported op")


def test_trace_fuser_ones_is_a_literal_assign(planner_impl):
    ones = op("BaseFloat.Ones", out=t(0, (4, 6), NI))
    exp = op("Float.Exp", input=t(0, (4, 6), RW), out=t(1, (4, 6), NI))
    fuser = elementwise(planner_impl, [ones, exp])
    assert fuser.finish().block_op_names() == (("Assign", "Exp"),)


# --- shapes (notes §3.4) -------------------------------------------------------------------


def test_trace_fuser_broadcast_grows_reference_shape(planner_impl):
    ops = [op("Float.Exp", input=t(0, (4, 1)), out=t(1, (4, 1), NI)),
           op("NumericFloat.Add", lhs=t(1, (4, 1), RW), rhs=t(2, (4, 8)), out=t(3, (4, 8), NI))]
    fuser = elementwise(planner_impl, ops)
    assert fuser.len() == 2
    assert fuser.shape_id() == (1, 2)  # relative ids of [4, 8]


def test_trace_fuser_size_one_output_keeps_reference(planner_impl):
    ops = [op("Float.Exp", input=t(0, (4, 8)), out=t(1, (4, 8), NI)),
           op("Float.Log", input=t(2, (4, 1)), out=t(3, (4, 1), NI))]
    fuser = elementwise(planner_impl, ops)
    assert (fuser.len(), fuser.shape_id()) == (2, (1, 2))


@pytest.mark.parametrize("second", [(8, 8), (4,), (1, 8)])
def test_trace_fuser_incompatible_shape_closes(planner_impl, second):
    first = (4, 4) if second != (1, 8) else (4, 1)
    ops = [op("Float.Exp", input=t(0, first), out=t(1, first, NI)),
           op("Float.Log", input=t(2, second), out=t(3, second, NI))]
    fuser = elementwise(planner_impl, ops)
    assert (fuser.len(), fuser.closed_reason) == (1, "shape")


# --- views (notes §3.6) ----------------------------------------------------------------------


def test_trace_fuser_lone_view_closes(planner_impl):
    ops = [op("BaseFloat.SwapDims", input=t(0, (4, 8), RW), out=t(2, (8, 4), NI), dim1=0,
              dim2=1),
           op("NumericFloat.Add", lhs=t(2, (8, 4), RW), rhs=t(1, (8, 4)), out=t(3, (8, 4), NI))]
    fuser = elementwise(planner_impl, ops)
    assert (fuser.len(), fuser.closed_reason) == (0, "view")


def test_trace_fuser_view_of_read_input_is_fused(planner_impl):
    shape = (4, 4)
    ops = [op("NumericFloat.AddScalar", lhs=t(0, shape), rhs=1.0, out=t(1, shape, NI)),
           op("BaseFloat.SwapDims", input=t(0, shape, RW), out=t(2, shape, NI), dim1=0, dim2=1),
           op("NumericFloat.Add", lhs=t(1, shape, RW), rhs=t(2, shape, RW), out=t(3, shape, NI))]
    fuser = elementwise(planner_impl, ops)
    assert (fuser.len(), fuser.fuser.num_views) == (3, 1)
    optimization = fuser.finish()
    [block] = optimization.blocks()
    assert block.op_names() == ("Add", "Add")
    swapped = FuseOp.assign(InputSwapDims(Input(0, F), (0, 1), False), BlockLocal(2, F))
    assert block.reads == ((0, (FuseOp.assign(Input(0, F), BlockLocal(0, F)), swapped)),)
    resources = optimization.main_trace().resources
    assert resources.views == (SwapDimsView(2, 0, (0, 1)),)
    assert resources.scalars == ((F, 0),)
    assert block.ops[0].args.rhs == Scalar(0, F)


def test_trace_fuser_reshape_view_of_read_input_is_fused(planner_impl):
    square, row, column = (6, 6), (1, 6), (6, 1)
    ops = [op("Float.Exp", input=t(0, square), out=t(1, square, NI)),
           op("NumericFloat.Add", lhs=t(1, square, RW), rhs=t(2, row), out=t(3, square, NI)),
           op("BaseFloat.Reshape", input=t(2, row, RW), out=t(4, column, NI)),
           op("NumericFloat.Add", lhs=t(3, square, RW), rhs=t(4, column, RW),
              out=t(5, square, NI))]
    fuser = elementwise(planner_impl, ops)
    assert (fuser.len(), fuser.fuser.num_views) == (4, 1)
    reads = dict(fuser.finish().blocks()[0].reads)
    plain, view = reads[2]
    assert plain == FuseOp.assign(Input(1, F), BlockLocal(2, F))
    shape = (ScalarShape(0), ScalarShape(1))
    assert view == FuseOp.assign(InputReshaped(Input(1, F), shape, True), BlockLocal(4, F))


def test_trace_fuser_reshape_rules(planner_impl):
    read = op("Float.Exp", input=t(0, (4, 6)), out=t(1, (4, 6), NI))
    narrower = op("BaseFloat.Reshape", input=t(0, (4, 6), RW), out=t(2, (24,), NI))
    assert elementwise(planner_impl, [read, narrower]).closed_reason == "reshape rank"
    wider = op("BaseFloat.Reshape", input=t(0, (4, 6), RW), out=t(2, (1, 4, 6), NI))
    # rank differs from the block's
    assert elementwise(planner_impl, [read, wider]).closed_reason == "shape"
    same = op("BaseFloat.Reshape", input=t(0, (4, 6), RW), out=t(2, (4, 6), NI))
    assert elementwise(planner_impl, [same]).finish().block_op_names() == (("Assign",),)


# --- indexed inputs ------------------------------------------------------------------------


def test_trace_fuser_cat_of_computed_input_splits(planner_impl):
    shape = (1, 4)  # the cat output [2, 4] grows the reference shape along its size-1 dim
    ops = [op("NumericFloat.MulScalar", lhs=t(0, shape), rhs=10.0, out=t(1, shape, NI)),
           op("BaseFloat.Cat", tensors=(t(1, shape, RW), t(2, shape)), dim=0,
              out=t(3, (2, 4), NI))]
    fuser = elementwise(planner_impl, ops)
    assert (fuser.len(), fuser.closed_reason) == (1, "indexed input")


def test_trace_fuser_cat_then_scalar_op(planner_impl):
    shape = (2, 4)
    ops = [op("BaseFloat.Cat", tensors=(t(0, shape), t(1, shape)), dim=0, out=t(2, (4, 4), NI)),
           op("NumericFloat.MulScalar", lhs=t(2, (4, 4), RW), rhs=2.0, out=t(3, (4, 4), NI))]
    optimization = elementwise(planner_impl, ops).finish()
    assert optimization.block_op_names() == (("Cat", "Mul"),)
    resources = optimization.main_trace().resources
    assert resources.inputs_unhandled == (0, 1)
    assert [tid for tid, _ in resources.indexed] == [0, 1]
    assert optimization.blocks()[0].reads == ()  # indexed inputs have no read op


def test_trace_fuser_fuse_op_checks_args_struct(planner_impl):
    with pytest.raises(TypeError):
        FuseOp("Add", UnaryFuseArgs(BlockLocal(0, F), BlockLocal(1, F)))


def test_trace_fuser_empty_trace_estimate_is_metadata_only(planner_impl):
    assert planner_impl.engine.builder.TraceFuser(ELEMENTWISE_SETTINGS).estimate_bindings() == 1


# --- TryTraceFuser with a Python add_ops, TraceOperationFuser's helpers: every result refimpl's -


def test_def_twins_try_trace_fuser_with_python_add_ops(run_both):
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


def test_def_twins_trace_operation_fuser_helpers(run_both):
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
