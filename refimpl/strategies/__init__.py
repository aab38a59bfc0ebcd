"""Hypothesis strategies that draw valid op streams (public: ``from refimpl.strategies import
streams``).

burn counterpart: none — this is how fuselab checks that every plan computes what the stream
means (``interp(plan(stream)) == eager(stream)``). Streams are valid by construction: a
``StreamBuilder`` (``builder``) records ops on the live tensors it knows (shapes and dtypes
follow the op table's rules), then ``refimpl.liveness.with_liveness`` derives burn's statuses
and drops and validates the result.

What a drawn stream may contain: element-wise ops of every fusable kind (unary math, binary
arithmetic with broadcasting, scalar ops, comparisons, bitwise ops, casts, clamp, masks,
creation ops), views (swap_dims, reshape, permute, expand, slice), per-axis and full
reductions, matmuls, cats, gathers, selects (``generators``); templates aimed at classes the
uniform draw reaches rarely, such as a tensor read broadcast and through a view in one block
(``templates``); inputs in several dtypes, some transposed or padded (strided); explicit
drops and syncs anywhere; tensors reused (``ReadOnly`` uses) or consumed (``ReadWrite``).
One stream in ``ZERO_DIM_SHARE`` draws zero-size dims (empty tensors, empty reduction axes,
``K = 0`` matmuls, empty cat operands). Sizes are small (dims from ``DIMS``, rank ≤
``max_rank``, ≤ ``max_ops`` ops), so a property runs hundreds of examples in seconds.

>>> from hypothesis import find
>>> s = find(streams(), lambda s: len(s.ops) >= 3)
>>> len(s.ops) >= 3
True
"""

from __future__ import annotations

from hypothesis import strategies as st

from refimpl.dtypes import DType
from refimpl.stream import Stream
from refimpl.strategies.builder import (
    DIMS, FLOAT_DTYPES, INT_DTYPES, StreamBuilder, input_specs, shapes, strides_for_layout,
)
from refimpl.strategies.generators import (
    CONVERSION_GENERATORS, ELEMENTWISE_GENERATORS, GENERATORS, MATMUL_GENERATORS, creation,
)
from refimpl.strategies.templates import TEMPLATE_OPS, TEMPLATES

__all__ = [
    "DIMS",
    "FLOAT_DTYPES",
    "INT_DTYPES",
    "ZERO_DIM_SHARE",
    "StreamBuilder",
    "shapes",
    "strides_for_layout",
    "input_specs",
    "streams",
    "elementwise_streams",
    "matmul_streams",
    "CONVERSION_GENERATORS",
]

ZERO_DIM_SHARE = 8  # one stream in 8 may hold zero-size dims


@st.composite
def _stream(draw, generators: tuple, templates: tuple, max_ops: int, max_rank: int) -> Stream:
    builder = StreamBuilder(zero_dims=draw(st.integers(0, ZERO_DIM_SHARE - 1)) == 0)
    for _ in range(draw(st.integers(1, 3))):
        shape = draw(shapes(max_rank, dims=builder.dims()))
        dtype = draw(st.sampled_from(FLOAT_DTYPES + FLOAT_DTYPES + INT_DTYPES + (DType.BOOL,)))
        draw(input_specs(builder, shape, dtype))
    for _ in range(draw(st.integers(max(1, max_ops // 3), max_ops))):
        event, ops = draw(st.integers(0, 11)), builder.data_ops()
        if event == 0 and builder.live:
            builder.sync((draw(st.sampled_from(sorted(builder.live))),))
        elif event == 1 and len(builder.live) > 1:
            builder.drop(draw(st.sampled_from(sorted(builder.live))))
        elif event in (2, 3) and templates and max_rank >= 2 and ops + TEMPLATE_OPS <= max_ops:
            draw(st.sampled_from(templates))(draw, builder)
        elif ops < max_ops:
            draw(st.sampled_from(generators))(draw, builder)
    produced = sorted(t for t in builder.live if t not in builder.inputs)
    if not produced:  # a drop keeps one tensor live, so a full stream syncs that one
        produced = [creation(draw, builder)] if builder.data_ops() < max_ops \
            else sorted(builder.live)
    builder.sync(tuple(draw(st.lists(st.sampled_from(produced), min_size=1, max_size=3,
                                     unique=True))))
    return builder.build()


def streams(max_ops: int = 10, max_rank: int = 3,
            extra: tuple = ()) -> st.SearchStrategy[Stream]:
    """Valid streams with every kind of op fuselab fuses or runs; ``extra`` generators are
    drawn too (``CONVERSION_GENERATORS``: float → int conversions)."""
    return _stream(GENERATORS + tuple(extra), TEMPLATES, max_ops, max_rank)


def elementwise_streams(max_ops: int = 10, max_rank: int = 3) -> st.SearchStrategy[Stream]:
    """Valid streams of element-wise ops only (the ElementWise fuser's whole domain)."""
    return _stream(ELEMENTWISE_GENERATORS, (), max_ops, max_rank)


def matmul_streams(max_ops: int = 10, max_rank: int = 3) -> st.SearchStrategy[Stream]:
    """Valid streams where matmuls are frequent, among element-wise ops and views (the Matmul
    fuser's domain: epilogues with several outputs, batched, broadcast and transposed
    operands)."""
    return _stream(MATMUL_GENERATORS, (), max_ops, max_rank)
