"""Output-shape rules: for every ``ShapeRule`` of the op table, the shape an op must produce.

burn counterpart: the shape checks of burn-tensor's ``TensorCheck``
(``crates/burn-tensor/src/tensor/api/check.rs``: ``binary_ops_ew_shape``, ``cat``, ``gather``,
``matmul``, ``expand``, ``permute``, ``flip``, ...) and the output-shape computations of the
ops' default implementations (``Shape::broadcast``, pooling's ``calculate_pool_output_size``).
burn panics on a failed check; fuselab raises the typed error instead.

``SHAPE_RULES[rule](op, index)`` takes an ``OperationIr`` and its position in the stream and
returns the output shape the op must have (``None`` for ``ShapeRule.NONE``: ``Drop`` has no
output), or raises ``ShapeError`` / ``AxisError`` / ``FieldTypeError`` naming the op index and
the operand field at fault (``"rhs.shape"``, ``"axis"``, ``"tensors.2.shape"``).

Every rule first checks the op's axis attributes (``axis``, ``dim``, ``dim1``, ``dim2``,
``axes``) against the rank of its first tensor operand: in range, and ``axes`` without
duplicates. Shapes are tuples of ints; dimension limits (negative, absurd) are checked by
``refimpl.validate`` before any rule runs.
"""

from __future__ import annotations

from typing import Callable

from refimpl.errors import AxisError, FieldTypeError, ShapeError, StreamError
from refimpl.ir import FieldKind, OperationIr, TensorIr
from refimpl.ops import ShapeRule

__all__ = ["SHAPE_RULES", "ShapeFn", "expected_shape", "broadcast_shapes", "INTERPOLATE_MODES"]

Shape = tuple[int, ...]
ShapeFn = Callable[[OperationIr, int], "Shape | None"]

# Fields holding dimension indices of the op's first tensor operand.
_AXIS_FIELDS = ("axis", "dim", "dim1", "dim2", "axes")

# Interpolation modes the reference semantics implement.
INTERPOLATE_MODES = ("nearest", "bilinear")


def _fail(cls: type[StreamError], op: OperationIr, index: int, field: str, msg: str):
    raise cls(msg, op_index=index, field=field, op_name=op.name)


def _first_tensor(op: OperationIr) -> tuple[str, TensorIr]:
    """The op's first tensor operand (``lhs``, ``input``, ``tensor``, ``x``, ``tensors.0``)."""
    for field, kind in op.desc.SCHEMA:
        if field == "out":
            continue
        if kind is FieldKind.TENSOR:
            return field, getattr(op.desc, field)
        if kind is FieldKind.TENSORS:
            return f"{field}.0", getattr(op.desc, field)[0]
    raise AssertionError(f"{op.name} has no input tensor")


def _check_axis_fields(op: OperationIr, index: int) -> None:
    """Every axis attribute is a valid, non-repeated dimension of the first tensor operand."""
    names = tuple(f for f, _ in op.desc.SCHEMA if f in _AXIS_FIELDS)
    if not names:
        return
    _, ref = _first_tensor(op)
    for field in names:
        value = getattr(op.desc, field)
        values = tuple(value) if isinstance(value, tuple | list) else (value,)
        for axis in values:
            if not 0 <= axis < ref.rank:
                _fail(AxisError, op, index, field,
                      f"axis {axis} out of range for rank {ref.rank} (shape {list(ref.shape)})")
        if len(set(values)) != len(values):
            _fail(AxisError, op, index, field, f"axes {list(values)} contain duplicates")


def broadcast_shapes(a: Shape, b: Shape) -> Shape | None:
    """burn broadcasting: equal ranks, each pair of dims equal or one of them 1; else ``None``.

    >>> broadcast_shapes((4, 1), (4, 6))
    (4, 6)
    """
    if len(a) != len(b):
        return None
    out = []
    for x, y in zip(a, b):
        if x != y and x != 1 and y != 1:
            return None
        out.append(y if x == 1 else x)
    return tuple(out)


def _broadcast_fields(op: OperationIr, index: int, fields: tuple[str, ...]) -> Shape:
    """Broadcast the named tensor fields left to right; the first misfit is the error."""
    shape = getattr(op.desc, fields[0]).shape
    for field in fields[1:]:
        other = getattr(op.desc, field).shape
        if len(other) != len(shape):
            _fail(ShapeError, op, index, f"{field}.shape",
                  f"rank {len(other)} differs from rank {len(shape)} of {fields[0]} "
                  f"(shapes {list(other)} and {list(shape)})")
        merged = broadcast_shapes(shape, other)
        if merged is None:
            _fail(ShapeError, op, index, f"{field}.shape",
                  f"shape {list(other)} does not broadcast with {list(shape)}")
        shape = merged
    return shape


# --- the rules ------------------------------------------------------------------------------


def _same(op: OperationIr, index: int) -> Shape:
    return _first_tensor(op)[1].shape


def _broadcast(op: OperationIr, index: int) -> Shape:
    return _broadcast_fields(op, index, ("lhs", "rhs"))


def _reduce_dim(op: OperationIr, index: int) -> Shape:
    shape = list(op.desc.input.shape)
    shape[op.desc.axis] = 1
    return tuple(shape)


def _reduce_full(op: OperationIr, index: int) -> Shape:
    return (1,)


def _reshape(op: OperationIr, index: int) -> Shape:
    src, out = op.desc.input, op.desc.out
    if src.numel != out.numel:
        _fail(ShapeError, op, index, "out.shape",
              f"reshape of {list(src.shape)} ({src.numel} elements) to {list(out.shape)} "
              f"({out.numel} elements)")
    return out.shape


def _expand(op: OperationIr, index: int) -> Shape:
    src, out = op.desc.input.shape, op.desc.out.shape
    if len(out) < len(src):
        _fail(ShapeError, op, index, "out.shape",
              f"expand cannot lower the rank: {list(src)} to {list(out)}")
    lead = len(out) - len(src)
    for d, size in enumerate(src):
        if size != 1 and size != out[lead + d]:
            _fail(ShapeError, op, index, "out.shape",
                  f"dim {d} of size {size} cannot expand to {out[lead + d]} "
                  f"({list(src)} to {list(out)})")
    return out


def _swap_dims(op: OperationIr, index: int) -> Shape:
    shape = list(op.desc.input.shape)
    d1, d2 = op.desc.dim1, op.desc.dim2
    shape[d1], shape[d2] = shape[d2], shape[d1]
    return tuple(shape)


def _permute(op: OperationIr, index: int) -> Shape:
    shape, axes = op.desc.input.shape, op.desc.axes
    if len(axes) != len(shape):
        _fail(AxisError, op, index, "axes",
              f"{list(axes)} is not a permutation of the {len(shape)} axes")
    return tuple(shape[a] for a in axes)


def _slice(op: OperationIr, index: int) -> Shape:
    shape, ranges = list(op.desc.tensor.shape), op.desc.ranges
    if len(ranges) > len(shape):
        _fail(AxisError, op, index, "ranges",
              f"{len(ranges)} ranges for a tensor of rank {len(shape)}")
    for d, (start, end) in enumerate(ranges):
        if not 0 <= start <= end <= shape[d]:
            _fail(ShapeError, op, index, f"ranges.{d}",
                  f"range [{start}, {end}) is not within dim {d} of size {shape[d]}")
        shape[d] = end - start
    return tuple(shape)


def _cat(op: OperationIr, index: int) -> Shape:
    tensors, dim = op.desc.tensors, op.desc.dim
    first = tensors[0].shape
    total = 0
    for i, t in enumerate(tensors):
        if len(t.shape) != len(first):
            _fail(ShapeError, op, index, f"tensors.{i}.shape",
                  f"rank {len(t.shape)} differs from rank {len(first)} of tensors.0")
        for d, (a, b) in enumerate(zip(t.shape, first)):
            if d != dim and a != b:
                _fail(ShapeError, op, index, f"tensors.{i}.shape",
                      f"shape {list(t.shape)} differs from {list(first)} outside dim {dim}")
        total += t.shape[dim]
    return first[:dim] + (total,) + first[dim + 1:]


def _gather(op: OperationIr, index: int) -> Shape:
    src, idx, dim = op.desc.tensor.shape, op.desc.indices.shape, op.desc.dim
    if len(idx) != len(src):
        _fail(ShapeError, op, index, "indices.shape",
              f"indices rank {len(idx)} differs from tensor rank {len(src)}")
    for d, (a, b) in enumerate(zip(idx, src)):
        if d != dim and a != b:
            _fail(ShapeError, op, index, "indices.shape",
                  f"indices {list(idx)} differ from tensor {list(src)} at dim {d}")
    return idx


def _select(op: OperationIr, index: int) -> Shape:
    shape, idx, dim = list(op.desc.tensor.shape), op.desc.indices.shape, op.desc.dim
    if len(idx) != 1:
        _fail(ShapeError, op, index, "indices.shape",
              f"indices must have rank 1, got shape {list(idx)}")
    shape[dim] = idx[0]
    return tuple(shape)


def _mask(op: OperationIr, index: int) -> Shape:
    fields = tuple(f for f, k in op.desc.SCHEMA if k is FieldKind.TENSOR and f != "out")
    return _broadcast_fields(op, index, fields)


def _matmul(op: OperationIr, index: int) -> Shape:
    lhs, rhs = op.desc.lhs.shape, op.desc.rhs.shape
    for field, shape in (("lhs", lhs), ("rhs", rhs)):
        if len(shape) < 2:
            _fail(ShapeError, op, index, f"{field}.shape",
                  f"matmul needs rank >= 2, got shape {list(shape)}")
    if len(lhs) != len(rhs):
        _fail(ShapeError, op, index, "rhs.shape",
              f"rank {len(rhs)} differs from lhs rank {len(lhs)}")
    if lhs[-1] != rhs[-2]:
        _fail(ShapeError, op, index, "rhs.shape",
              f"inner dims differ: lhs {list(lhs)} x rhs {list(rhs)}")
    batch = broadcast_shapes(lhs[:-2], rhs[:-2])
    if batch is None:
        _fail(ShapeError, op, index, "rhs.shape",
              f"batch dims of {list(rhs)} do not broadcast with {list(lhs)}")
    return batch + (lhs[-2], rhs[-1])


def _pair(op: OperationIr, index: int, field: str, low: int) -> tuple[int, int]:
    """A 2-entry INTS attribute whose entries are all >= ``low``."""
    value = getattr(op.desc, field)
    if len(value) != 2 or min(value) < low:
        _fail(ShapeError, op, index, field,
              f"needs 2 entries >= {low}, got {list(value)}")
    return value


def _nchw(op: OperationIr, index: int) -> Shape:
    shape = op.desc.x.shape
    if len(shape) != 4:
        _fail(ShapeError, op, index, "x.shape",
              f"2d pooling needs an NCHW tensor of rank 4, got shape {list(shape)}")
    return shape


def _pool2d(op: OperationIr, index: int) -> Shape:
    n, c, h, w = _nchw(op, index)
    kernel = _pair(op, index, "kernel_size", 1)
    stride = _pair(op, index, "stride", 1)
    padding = _pair(op, index, "padding", 0)
    has_dilation = any(f == "dilation" for f, _ in op.desc.SCHEMA)
    dilation = _pair(op, index, "dilation", 1) if has_dilation else (1, 1)
    out = [n, c]
    for size, k, s, p, d in zip((h, w), kernel, stride, padding, dilation):
        span = size + 2 * p - d * (k - 1) - 1
        if span < 0:
            _fail(ShapeError, op, index, "kernel_size",
                  f"kernel {list(kernel)} (dilation {list(dilation)}) exceeds the padded "
                  f"input {[h + 2 * padding[0], w + 2 * padding[1]]}")
        out.append(span // s + 1)
    return tuple(out)


def _adaptive_pool2d(op: OperationIr, index: int) -> Shape:
    n, c, _, _ = _nchw(op, index)
    oh, ow = _pair(op, index, "output_size", 0)
    return (n, c, oh, ow)


def _interpolate(op: OperationIr, index: int) -> Shape:
    n, c, _, _ = _nchw(op, index)
    oh, ow = _pair(op, index, "output_size", 0)
    if op.desc.mode not in INTERPOLATE_MODES:
        _fail(FieldTypeError, op, index, "mode",
              f"unknown mode {op.desc.mode!r} (one of {', '.join(INTERPOLATE_MODES)})")
    return (n, c, oh, ow)


def _creation(op: OperationIr, index: int) -> Shape:
    return op.desc.out.shape


def _none(op: OperationIr, index: int) -> None:
    return None


def _checked(rule: ShapeFn) -> ShapeFn:
    """Run the axis-attribute checks before the rule proper."""

    def run(op: OperationIr, index: int) -> Shape | None:
        _check_axis_fields(op, index)
        return rule(op, index)

    run.__name__ = rule.__name__.lstrip("_")
    run.__doc__ = rule.__doc__
    return run


SHAPE_RULES: dict[ShapeRule, ShapeFn] = {
    ShapeRule.SAME: _checked(_same),
    ShapeRule.BROADCAST: _checked(_broadcast),
    ShapeRule.REDUCE_DIM: _checked(_reduce_dim),
    ShapeRule.REDUCE_FULL: _checked(_reduce_full),
    ShapeRule.RESHAPE: _checked(_reshape),
    ShapeRule.EXPAND: _checked(_expand),
    ShapeRule.SWAP_DIMS: _checked(_swap_dims),
    ShapeRule.PERMUTE: _checked(_permute),
    ShapeRule.SLICE: _checked(_slice),
    ShapeRule.CAT: _checked(_cat),
    ShapeRule.GATHER: _checked(_gather),
    ShapeRule.SELECT: _checked(_select),
    ShapeRule.MASK: _checked(_mask),
    ShapeRule.MATMUL: _checked(_matmul),
    ShapeRule.POOL2D: _checked(_pool2d),
    ShapeRule.ADAPTIVE_POOL2D: _checked(_adaptive_pool2d),
    ShapeRule.INTERPOLATE: _checked(_interpolate),
    ShapeRule.CREATION: _checked(_creation),
    ShapeRule.NONE: _checked(_none),
}


def expected_shape(op: OperationIr, index: int) -> Shape | None:
    """The output shape ``op`` (at stream position ``index``) must have; ``None`` if no output."""
    return SHAPE_RULES[op.op.shape](op, index)
