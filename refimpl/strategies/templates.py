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
from refimpl.strategies.generators import broadcast, view_of

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


TEMPLATES = (broadcast_view,)
TEMPLATE_OPS = 3  # the most ops one template adds
