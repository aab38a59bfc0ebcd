"""Templates: short op sequences aimed at one class of fused block that uniformly drawn ops
reach only by chance.

burn counterpart: none. Each template builds its ops on fresh or live tensors of the builder
and returns the id of its last tensor, so the ops drawn after it chain on it.

* ``broadcast_view``: one tensor read by an element-wise op *broadcast* (a size-1 dim against
  a full one) and, in the same block, *through a view* (swap_dims, identity swap included,
  reshape, permute, expand, slice). The planner gives such a tensor one binding; its reads
  disagree on the vector axis, so lane indexing must follow each read's own layout. Drawn over
  every dtype (bool included) and shapes whose last dim makes widths 1 to 8.
* ``view_reread``: an input read plainly, then again through a swap_dims (identity swaps
  included), a permute or a rank-keeping reshape whose shape fits the block, the two reads
  combined, maybe beside a fresh operand of the block's shape (whose in-place output then
  leaves the width to the reads). Block shapes repeat dims so that views fit
  often; inputs may be strided, so a view's vector width can differ from its original's and a
  swapped dim can be strided.
* ``reduce_broadcast``: ``f(x)`` reduced along an axis and broadcast back onto ``x`` or
  ``f(x)``, maybe through an exp and a second reduction (``x - max(x)``, softmax): one input
  read by a reduce block and by an element-wise block after it (the Reduce and
  ReduceBroadcasted fusers' domain). ``f(x)`` may combine ``x`` with an operand computed at a
  smaller shape (a scaled bias): the Reduce fuser's read block takes no output of another
  shape, so those ops stay out of it.
* ``matmul_broadcast_epilogue``: a matmul with a size-1 dim, then an epilogue op whose other
  operand is larger along that dim: the Matmul fuser must not grow its output.
* ``nchw_module``: element-wise ops on a rank-4 NCHW tensor consumed by a pooling or
  interpolate op (the NHWCRelayout fuser's domain).
* ``inplace_strided``: a non-idempotent update of a permuted input read for the last time
  (written in place, so the block's reference becomes that permuted layout) beside a
  contiguous operand then read through an index remap, in sizes rarely a multiple of the
  vector width or the workgroup (positions past the end must do nothing).
"""

from __future__ import annotations

from hypothesis import strategies as st

from refimpl.dtypes import DType
from refimpl.strategies.builder import (
    CATEGORY, FLOAT_DTYPES, INT_DTYPES, StreamBuilder, family, input_specs, pick, shapes,
)
from refimpl.planner.launch.layout import strides_for
from refimpl.strategies.generators import broadcast, view_of

__all__ = ["TEMPLATES", "TEMPLATE_OPS", "broadcast_view", "inplace_strided",
           "matmul_broadcast_epilogue", "nchw_module", "reduce_broadcast", "view_reread"]

_VIEWS = ("swap", "swap", "reshape", "permute", "expand", "slice")


def _broadcast_read(draw, b: StreamBuilder, small: int, full: int) -> int:
    """An element-wise op reading ``small`` broadcast against ``full``."""
    shape = broadcast(b.live[small][0], b.live[full][0])
    dtype = b.live[small][1]
    lhs, rhs = (small, full) if draw(st.booleans()) else (full, small)
    if dtype is DType.BOOL:
        name = draw(st.sampled_from(("Bool.And", "Bool.Or", "BaseBool.Equal")))
        return b.op(name, shape, DType.BOOL, lhs=lhs, rhs=rhs)
    names = ("Add", "Sub", "Mul", "Div") if dtype.is_float else ("Add", "Sub", "Mul")
    category = f"Numeric{CATEGORY[family(dtype)]}"
    return b.op(f"{category}.{draw(st.sampled_from(names))}", shape, dtype, lhs=lhs, rhs=rhs)


def broadcast_view(draw, b: StreamBuilder) -> int:
    """A broadcast read and a view of the same tensor in one block (module docstring)."""
    full_shape = draw(shapes(3, 2, dims=b.dims()))
    axes = draw(st.sets(st.integers(0, len(full_shape) - 1), min_size=1))
    if draw(st.booleans()):
        axes.add(len(full_shape) - 1)  # the vector axis, most often
    small_shape = tuple(1 if i in axes else d for i, d in enumerate(full_shape))
    dtype = draw(st.sampled_from(FLOAT_DTYPES + INT_DTYPES + (DType.BOOL,)))
    small = draw(input_specs(b, small_shape, dtype))
    full = pick(draw, b, lambda s, d: s == full_shape and d is dtype)
    if full is None or draw(st.booleans()):
        full = draw(input_specs(b, full_shape, dtype))
    read = _broadcast_read(draw, b, small, full)
    view = view_of(draw, b, small, _VIEWS, identity_swaps=True)
    if draw(st.booleans()):  # the broadcast result read again inside the block
        _broadcast_read(draw, b, read, read)
    return view


# --- one tensor re-read through a view in the block that reads it ---------------------------


def _fits(view: tuple, block: tuple) -> bool:
    return len(view) == len(block) and all(v in (b, 1) for v, b in zip(view, block))


def _block_shape(draw, b: StreamBuilder, rank: int) -> tuple[int, ...]:
    """A shape whose dims repeat often (a view then lands on the block's shape)."""
    dims = [d for d in b.dims() if d > 1] or [1]
    common = draw(st.sampled_from(dims))
    return tuple(common if draw(st.integers(0, 2)) else draw(st.sampled_from(dims))
                 for _ in range(rank))


def _fitting_view(draw, shape: tuple, block: tuple, kind: str) -> tuple[tuple, tuple]:
    """``(original shape, permutation)``: ``shape`` with dims set to 1 where the permuted
    original would not fit ``block`` (out[i] = original[perm[i]])."""
    rank = len(block)
    if kind == "swap":
        d1, d2 = draw(st.integers(0, rank - 1)), draw(st.integers(0, rank - 1))
        perm = list(range(rank))
        perm[d1], perm[d2] = perm[d2], perm[d1]
    else:
        perm = list(draw(st.permutations(range(rank))))
    original = list(shape)
    for i, a in enumerate(perm):
        if original[a] not in (block[i], 1):
            original[a] = 1
    return tuple(original), tuple(perm)


def _plain(draw, b: StreamBuilder, tid: int) -> int:
    """A plain element-wise read of ``tid`` (same shape and dtype)."""
    shape, dtype = b.live[tid]
    if dtype is DType.BOOL:
        return b.op("Bool.Not", shape, dtype, input=tid)
    category = f"Numeric{CATEGORY[family(dtype)]}"
    name = draw(st.sampled_from(("AddScalar", "MulScalar", "Abs")))
    if name == "Abs":
        return b.op(f"{category}.Abs", shape, dtype, input=tid)
    value = draw(st.sampled_from((2, 3))) if dtype.is_int else draw(st.sampled_from((0.5, 3.0)))
    return b.op(f"{category}.{name}", shape, dtype, lhs=tid, rhs=value)


def view_reread(draw, b: StreamBuilder) -> int:
    """An input read plainly and, in the same block, again through a view whose shape fits
    the block (module docstring)."""
    block = _block_shape(draw, b, draw(st.integers(2, 4)))
    kind = draw(st.sampled_from(("swap", "swap", "permute", "reshape", "reshape")))
    dtype = draw(st.sampled_from(FLOAT_DTYPES + INT_DTYPES))
    base = f"Base{CATEGORY[family(dtype)]}"
    original, perm = _fitting_view(draw, block, block, kind)
    if draw(st.integers(0, 2)) == 0:  # the plain read broadcast along one more dim
        axis = draw(st.integers(0, len(block) - 1))
        original = tuple(1 if i == axis else d for i, d in enumerate(original))
    out = tuple(original[a] for a in perm)
    x = draw(input_specs(b, original, dtype))
    first = _plain(draw, b, x)
    if draw(st.booleans()):  # a fresh operand of the block's shape: the block's outputs may
        # then all be written in place, so only its reads vote on the width
        other = draw(input_specs(b, block, dtype))
        first = b.op(f"Numeric{CATEGORY[family(dtype)]}.Add", block, dtype, lhs=first,
                     rhs=other)
    if kind == "swap":
        moved = [i for i, a in enumerate(perm) if a != i] or [draw(st.integers(0, len(perm) - 1))]
        d1, d2 = moved[0], moved[-1]
        view = b.op(f"{base}.SwapDims", out, dtype, input=x, dim1=d1, dim2=d2)
    elif kind == "permute":
        view = b.op(f"{base}.Permute", out, dtype, input=x, axes=perm)
    else:
        view = b.op(f"{base}.Reshape", out, dtype, input=x)
    lhs, rhs = (first, view) if draw(st.booleans()) else (view, first)
    shape = tuple(max(p, q) for p, q in zip(b.live[lhs][0], b.live[rhs][0]))
    name = "Add" if dtype.is_float or draw(st.booleans()) else "Mul"
    return b.op(f"Numeric{CATEGORY[family(dtype)]}.{name}", shape, dtype, lhs=lhs, rhs=rhs)


# --- a reduction broadcast back onto its input (softmax, normalization) ---------------------


def reduce_broadcast(draw, b: StreamBuilder) -> int:
    """``f(x)`` reduced along an axis and broadcast back onto ``x`` or ``f(x)`` (softmax,
    normalization): the input read by the reduce block and maybe again by the element-wise
    block after it (module docstring)."""
    shape = draw(shapes(3, 2, dims=tuple(d for d in b.dims() if d)))
    dtype = draw(st.sampled_from((DType.F32, DType.F32, DType.F16, DType.F64)))
    x = pick(draw, b, lambda s, d: s == shape and d is dtype)
    if x is None or draw(st.booleans()):
        x = draw(input_specs(b, shape, dtype))
    axis = draw(st.sampled_from((len(shape) - 1, draw(st.integers(0, len(shape) - 1)))))
    kept = shape[:axis] + (1,) + shape[axis + 1:]
    biased = draw(st.integers(0, 2)) == 0
    if biased:  # an operand computed at a size-1 dim, broadcast onto x before the reduction
        dims = draw(st.sets(st.integers(0, len(shape) - 1), min_size=1))
        small = tuple(1 if i in dims else d for i, d in enumerate(shape))
        bias = _plain(draw, b, draw(input_specs(b, small, dtype)))
        first = _broadcast_read(draw, b, bias, x)
    else:
        first = _plain(draw, b, x)  # a reduction opening a trace closes the fuser
    name = draw(st.sampled_from(("MaxDim", "SumDim", "MeanDim")))
    reduced = b.op(f"NumericFloat.{name}", kept, dtype, input=first, axis=axis)
    source = x if draw(st.booleans()) else first
    lhs, rhs = (source, reduced) if draw(st.booleans()) else (reduced, source)
    out = b.op(f"NumericFloat.{draw(st.sampled_from(('Sub', 'Mul', 'Add')))}", shape, dtype,
               lhs=lhs, rhs=rhs)
    if not biased and draw(st.booleans()):  # softmax's exp before the next reduction
        out = b.op("Float.Exp" if name == "MaxDim" else "Float.Tanh", shape, dtype, input=out)
    if draw(st.integers(0, 3)):  # a second reduction, broadcast back too (softmax's sum)
        total = b.op("NumericFloat.SumDim", kept, dtype, input=out, axis=axis)
        out = b.op(f"NumericFloat.{draw(st.sampled_from(('Mul', 'Sub')))}", shape, dtype,
                   lhs=out, rhs=total)
    return out


# --- a matmul whose epilogue would grow its output ----------------------------------------


def matmul_broadcast_epilogue(draw, b: StreamBuilder) -> int:
    """A matmul with a size-1 dim (one row, one column or one batch) and an epilogue op whose
    other operand is larger along it, so the epilogue's output outgrows the matmul's."""
    rank = draw(st.integers(2, 3))
    dims = tuple(d for d in b.dims() if d)
    m, k, n = (draw(st.sampled_from(dims)) for _ in range(3))
    batch = (draw(st.sampled_from(dims)),) * (rank - 2)
    grow = draw(st.integers(0, rank - 1))  # the dim the epilogue grows
    out = batch + (m, n)
    small = tuple(1 if i == grow else d for i, d in enumerate(out))
    dtype = draw(st.sampled_from((DType.F32, DType.F32, DType.F16)))
    lhs = draw(input_specs(b, small[:-1] + (k,), dtype))
    rhs = draw(input_specs(b, small[:-2] + (k, small[-1]), dtype))
    product = b.op("Float.Matmul", small, dtype, lhs=lhs, rhs=rhs)
    if draw(st.booleans()):
        product = b.op(f"Float.{draw(st.sampled_from(('Tanh', 'Cos')))}", small, dtype,
                       input=product)
    full = out[:grow] + (draw(st.sampled_from([d for d in dims if d > 1] or [2])),) \
        + out[grow + 1:]
    other = draw(input_specs(b, full, dtype))
    lhs, rhs = (product, other) if draw(st.booleans()) else (other, product)
    return b.op(f"NumericFloat.{draw(st.sampled_from(('Add', 'Mul')))}", full, dtype,
                lhs=lhs, rhs=rhs)


# --- element-wise ops feeding a pooling / interpolate op (NCHW) ---------------------------


def nchw_module(draw, b: StreamBuilder) -> int:
    """One or two element-wise ops on a rank-4 NCHW tensor, then the module op that consumes
    their result: what NHWCRelayout writes channels-last."""
    shape = tuple(draw(st.sampled_from(d)) for d in ((1, 2), (1, 2, 3, 4), (2, 3, 4, 6),
                                                      (2, 3, 4, 6)))
    dtype = draw(st.sampled_from((DType.F32, DType.F32, DType.F16)))
    x = draw(input_specs(b, shape, dtype))
    for _ in range(draw(st.integers(1, 2))):
        x = _plain(draw, b, x)
    n, c, h, w = shape
    kind = draw(st.sampled_from(("MaxPool2d", "AvgPool2d", "AdaptiveAvgPool2d", "Interpolate")))
    if kind == "AdaptiveAvgPool2d":
        size = (draw(st.integers(1, h)), draw(st.integers(1, w)))
        return b.op("Module.AdaptiveAvgPool2d", (n, c) + size, dtype, x=x, output_size=size)
    if kind == "Interpolate":
        size = (draw(st.integers(1, 2 * h)), draw(st.integers(1, 2 * w)))
        return b.op("Module.Interpolate", (n, c) + size, dtype, x=x, output_size=size,
                    mode=draw(st.sampled_from(("nearest", "bilinear"))))
    kernel = (draw(st.integers(1, min(h, 3))), draw(st.integers(1, min(w, 3))))
    stride = (draw(st.integers(1, 2)), draw(st.integers(1, 2)))
    out = (n, c) + tuple((size - k) // s + 1 for size, k, s in zip((h, w), kernel, stride))
    if kind == "MaxPool2d":
        return b.op("Module.MaxPool2d", out, dtype, x=x, kernel_size=kernel, stride=stride,
                    padding=(0, 0), dilation=(1, 1))
    return b.op("Module.AvgPool2d", out, dtype, x=x, kernel_size=kernel, stride=stride,
                padding=(0, 0), count_include_pad=True)


# --- an in-place update of a strided input ------------------------------------------------


def inplace_strided(draw, b: StreamBuilder) -> int:
    """A non-idempotent element-wise update of a permuted input read for the last time (the
    in-place target, whose layout the block then iterates in) beside a contiguous operand;
    sizes rarely a multiple of the workgroup or the vector width."""
    shape = draw(st.sampled_from(((3, 5), (5, 7), (7, 10), (9, 9), (3, 5, 7), (2, 11, 3),
                                  (13, 6))))
    dtype = draw(st.sampled_from((DType.F32, DType.F32, DType.I32, DType.F16)))
    rank = len(shape)
    order = draw(st.permutations(range(rank)))
    if order == sorted(order):
        order.reverse()
    target = b.add_input(shape, dtype, strides_for(shape, order),
                         seed=draw(st.integers(0, 2**16)))
    other = draw(input_specs(b, shape, dtype))
    lhs, rhs = (other, target) if draw(st.booleans()) else (target, other)
    category = f"Numeric{CATEGORY[family(dtype)]}"
    out = b.op(f"{category}.Add", shape, dtype, lhs=lhs, rhs=rhs)
    out = b.op(f"{category}.AddScalar", shape, dtype, lhs=out, rhs=draw(st.sampled_from(
        (1, 3) if dtype.is_int else (1.0, 0.5))))
    if draw(st.booleans()):  # the contiguous operand stays live: only the target is mutable
        b.sync((other,))
    return out


TEMPLATES = (broadcast_view, broadcast_view, view_reread, view_reread, reduce_broadcast,
             matmul_broadcast_epilogue, nchw_module, inplace_strided)
TEMPLATE_OPS = 6  # the most ops one template adds
