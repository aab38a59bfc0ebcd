"""Templates: short op sequences aimed at one class of fused block that uniformly drawn ops
reach only by chance.

burn counterpart: none. Each template builds its ops on fresh or live tensors of the builder
and returns the id of its last tensor, so the ops drawn after it chain on it.

* ``broadcast_view``: one tensor read by an element-wise op *broadcast* (a size-1 dim against
  a full one) and, in the same block, *through a view* (swap_dims, identity swap included,
  reshape, permute, expand, slice). The planner gives such a tensor one binding; its reads
  disagree on the vector axis, so lane indexing must follow each read's own layout. Drawn over
  every dtype (bool included) and shapes whose last dim makes widths 1 to 8.
"""

from __future__ import annotations

from hypothesis import strategies as st

from refimpl.dtypes import DType
from refimpl.strategies.builder import (
    CATEGORY, FLOAT_DTYPES, INT_DTYPES, StreamBuilder, family, input_specs, pick, shapes,
)
from refimpl.strategies.generators import broadcast

__all__ = ["TEMPLATES", "TEMPLATE_OPS", "broadcast_view"]

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


def _view_of(draw, b: StreamBuilder, tid: int) -> int:
    shape, dtype = b.live[tid]
    base, rank = f"Base{CATEGORY[family(dtype)]}", len(shape)
    kind = draw(st.sampled_from(_VIEWS))
    if kind == "swap":
        d1, d2 = draw(st.integers(0, rank - 1)), draw(st.integers(0, rank - 1))
        out = list(shape)
        out[d1], out[d2] = out[d2], out[d1]
        return b.op(f"{base}.SwapDims", tuple(out), dtype, input=tid, dim1=d1, dim2=d2)
    if kind == "permute":
        axes = tuple(draw(st.permutations(range(rank))))
        return b.op(f"{base}.Permute", tuple(shape[a] for a in axes), dtype, input=tid,
                    axes=axes)
    if kind == "expand" and 1 in shape:
        out = tuple(draw(st.sampled_from((2, 4))) if d == 1 else d for d in shape)
        return b.op(f"{base}.Expand", out, dtype, input=tid)
    if kind == "slice":
        ranges = tuple((0, max(d - 1, 1)) if d > 1 else (0, d) for d in shape)
        return b.op(f"{base}.Slice", tuple(e - s for s, e in ranges), dtype, tensor=tid,
                    ranges=ranges)
    target = draw(st.sampled_from(((1,) + shape, shape[1:] + (shape[0],) if shape[0] == 1
                                   else shape + (1,), shape)))
    return b.op(f"{base}.Reshape", target, dtype, input=tid)


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
    view = _view_of(draw, b, small)
    if draw(st.booleans()):  # the broadcast result read again inside the block
        _broadcast_read(draw, b, read, read)
    return view


TEMPLATES = (broadcast_view,)
TEMPLATE_OPS = 3  # the most ops one template adds
