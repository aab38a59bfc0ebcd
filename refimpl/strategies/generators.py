"""Op generators: each draws one op on the builder's live tensors and returns the new
tensor's id, or ``None`` when it does not apply.

burn counterpart: none. Shapes and dtypes follow the op table's rules, so every stream a
generator builds is valid. Under ``StreamBuilder.zero_dims`` they also draw zero-size dims:
an empty slice, select or gather along an empty axis, empty cat operands, ``K = 0``.
"""

from __future__ import annotations

from hypothesis import strategies as st

from refimpl import ir
from refimpl.dtypes import DType
from refimpl.ops import OPS, Category, OpKind, OutDType, op_named
from refimpl.strategies.builder import (
    CATEGORY, DIMS, FLOAT_DTYPES, INT_DTYPES, StreamBuilder, family, input_specs, pick, shapes,
)

__all__ = ["CONVERSION_GENERATORS", "ELEMENTWISE_GENERATORS", "GENERATORS", "MATMUL_GENERATORS",
           "VIEW_KINDS", "broadcast", "broadcast_partner",
           "creation", "view_of"]


def broadcast_partner(draw, builder: StreamBuilder, tid: int) -> int:
    """A tensor of the same dtype whose shape broadcasts with ``tid``'s (maybe a new input)."""
    shape, dtype = builder.live[tid]
    found = pick(draw, builder, lambda s, d: d is dtype and len(s) == len(shape) and all(
        a == b or a == 1 or b == 1 for a, b in zip(s, shape)))
    if found is not None and draw(st.booleans()):
        return found
    partner = tuple(d if draw(st.booleans()) else 1 for d in shape) if draw(st.booleans()) \
        else shape
    return draw(input_specs(builder, partner, dtype))


def broadcast(a: tuple, b: tuple) -> tuple:
    """The broadcast of two shapes of one rank (a size-1 dim takes the other's, 0 included)."""
    return tuple(y if x == 1 else x for x, y in zip(a, b))


def _variants(category: Category, struct: type, out: OutDType = OutDType.SAME,
              kind: OpKind = OpKind.ELEMENTWISE) -> tuple[str, ...]:
    """The variants of ``category`` with operand struct ``struct``, kind ``kind`` and output
    dtype rule ``out``, in table order (``refimpl.ops``: the generators list no op by hand).
    The Float categories stand for both families: the Int ones carry the same variant sets."""
    return tuple(op.variant for op in OPS if op.category is category and op.struct is struct
                 and op.kind is kind and op.out_dtype is out)


_UNARY_FLOAT = _variants(Category.Float, ir.UnaryOpIr)  # Exp, Log, ..., Recip
_BINARY = _variants(Category.NumericFloat, ir.BinaryOpIr)  # Add, Sub, Mul, Div, Rem
_COMPARE = _variants(Category.NumericFloat, ir.BinaryOpIr, OutDType.BOOL)  # Lower, ...
_COMPARE_SCALAR = _variants(Category.NumericFloat, ir.ScalarOpIr, OutDType.BOOL)  # LowerElem, ...
_ARITH_SCALAR = _variants(Category.NumericFloat, ir.ScalarOpIr)  # AddScalar, ..., RemScalar
_BITWISE_SCALAR = _variants(Category.Int, ir.ScalarOpIr)  # BitwiseAndScalar, ... (shifts too)
# Tensor-by-tensor bitwise ops less the shifts (And, Or, Xor): no generator has drawn a tensor
# of shift counts (_scalar draws scalar counts); drawing them would be a coverage change.
_TENSOR_SHIFTS = ("BitwiseLeftShift", "BitwiseRightShift")
_BITWISE = tuple(v for v in _variants(Category.Int, ir.BinaryOpIr) if v not in _TENSOR_SHIFTS)


def _unary(draw, b: StreamBuilder) -> int | None:
    tid = pick(draw, b, lambda s, d: d.is_float)
    if tid is None:
        return None
    shape, dtype = b.live[tid]
    return b.op(f"Float.{draw(st.sampled_from(_UNARY_FLOAT))}", shape, dtype, input=tid)


def _abs(draw, b: StreamBuilder) -> int | None:
    tid = pick(draw, b, lambda s, d: d.is_float or d.is_int)
    if tid is None:
        return None
    shape, dtype = b.live[tid]
    return b.op(f"Numeric{CATEGORY[family(dtype)]}.Abs", shape, dtype, input=tid)


def _binary(draw, b: StreamBuilder) -> int | None:
    tid = pick(draw, b, lambda s, d: d.is_float or d.is_int)
    if tid is None:
        return None
    shape, dtype = b.live[tid]
    other = broadcast_partner(draw, b, tid)
    out = broadcast(shape, b.live[other][0])
    names = _BINARY + ("Powf",) if dtype.is_float else _BINARY
    name = draw(st.sampled_from(names))
    category = "Float" if name == "Powf" else f"Numeric{CATEGORY[family(dtype)]}"
    lhs, rhs = (tid, other) if draw(st.booleans()) else (other, tid)
    return b.op(f"{category}.{name}", out, dtype, lhs=lhs, rhs=rhs)


def _scalar_value(draw, dtype: DType):
    if dtype.is_float:
        return draw(st.sampled_from((0.5, -1.5, 2.0, 3.0, 0.0, 1e-3)))
    if dtype.is_signed:
        return draw(st.integers(-5, 5))
    return draw(st.integers(0, 5))


def _scalar(draw, b: StreamBuilder) -> int | None:
    tid = pick(draw, b, lambda s, d: d.is_float or d.is_int)
    if tid is None:
        return None
    shape, dtype = b.live[tid]
    category = f"Numeric{CATEGORY[family(dtype)]}"
    choice = draw(st.sampled_from(("arith", "compare", "powf", "bitwise")))
    value = _scalar_value(draw, dtype)
    if choice == "compare":
        name = draw(st.sampled_from(_COMPARE_SCALAR))
        return b.op(f"{category}.{name}", shape, DType.BOOL, lhs=tid, rhs=value)
    if choice == "powf" and dtype.is_float:
        return b.op("Float.PowfScalar", shape, dtype, lhs=tid, rhs=value)
    if choice == "bitwise" and dtype.is_int:
        name = draw(st.sampled_from(_BITWISE_SCALAR))
        return b.op(f"Int.{name}", shape, dtype, lhs=tid, rhs=abs(value))
    name = draw(st.sampled_from(_ARITH_SCALAR))
    return b.op(f"{category}.{name}", shape, dtype, lhs=tid, rhs=value)


def _compare(draw, b: StreamBuilder) -> int | None:
    tid = pick(draw, b, lambda s, d: True)
    if tid is None:
        return None
    shape, dtype = b.live[tid]
    # one comparison in four reads one tensor twice: drawn floats never tie, and a tie is
    # where ``<`` and ``<=`` (``>`` and ``>=``) part
    other = tid if draw(st.integers(0, 3)) == 0 else broadcast_partner(draw, b, tid)
    out = broadcast(shape, b.live[other][0])
    if dtype is DType.BOOL or draw(st.booleans()):
        return b.op(f"Base{CATEGORY[family(dtype)]}.Equal", out, DType.BOOL, lhs=tid,
                    rhs=other)
    name = draw(st.sampled_from(_COMPARE))
    return b.op(f"Numeric{CATEGORY[family(dtype)]}.{name}", out, DType.BOOL, lhs=tid,
                rhs=other)


def _int_ops(draw, b: StreamBuilder) -> int | None:
    tid = pick(draw, b, lambda s, d: d.is_int)
    if tid is None:
        return None
    shape, dtype = b.live[tid]
    kind = draw(st.sampled_from(("bitwise", "not", "float")))
    if kind == "not":
        return b.op("Int.BitwiseNot", shape, dtype, input=tid)
    if kind == "float":
        return b.op("Int.IntoFloat", shape, draw(st.sampled_from(FLOAT_DTYPES)), input=tid)
    other = broadcast_partner(draw, b, tid)
    return b.op(f"Int.{draw(st.sampled_from(_BITWISE))}", broadcast(shape, b.live[other][0]),
                dtype, lhs=tid, rhs=other)


def _cast(draw, b: StreamBuilder) -> int | None:
    tid = pick(draw, b, lambda s, d: d.is_float or d.is_int)
    if tid is None:
        return None
    shape, dtype = b.live[tid]
    pool = FLOAT_DTYPES if dtype.is_float else INT_DTYPES
    return b.op(f"Base{CATEGORY[family(dtype)]}.Cast", shape, draw(st.sampled_from(pool)),
                input=tid)


def _clamp(draw, b: StreamBuilder) -> int | None:
    tid = pick(draw, b, lambda s, d: d.is_float or d.is_int)
    if tid is None:
        return None
    shape, dtype = b.live[tid]
    low, high = sorted((_scalar_value(draw, dtype), _scalar_value(draw, dtype)))
    return b.op(f"Numeric{CATEGORY[family(dtype)]}.Clamp", shape, dtype, tensor=tid,
                min=low, max=high)


def _mask(draw, b: StreamBuilder) -> int | None:
    tid = pick(draw, b, lambda s, d: True)
    if tid is None:
        return None
    shape, dtype = b.live[tid]
    mask = pick(draw, b, lambda s, d: d is DType.BOOL and len(s) == len(shape) and all(
        x == y or x == 1 for x, y in zip(s, shape)))
    if mask is None:
        mask = b.add_input(tuple(d if draw(st.booleans()) else 1 for d in shape), DType.BOOL,
                           seed=draw(st.integers(0, 99)))
    category = f"Base{CATEGORY[family(dtype)]}"
    if draw(st.booleans()):
        value = draw(st.booleans()) if dtype is DType.BOOL else _scalar_value(draw, dtype)
        return b.op(f"{category}.MaskFill", shape, dtype, tensor=tid, mask=mask, value=value)
    value = b.add_input(shape, dtype, seed=draw(st.integers(0, 99)))
    return b.op(f"{category}.MaskWhere", shape, dtype, tensor=tid, mask=mask, value=value)


def creation(draw, b: StreamBuilder) -> int | None:
    shape = draw(shapes(3, dims=b.dims()))
    dtype = draw(st.sampled_from(FLOAT_DTYPES + INT_DTYPES))
    name = draw(st.sampled_from(("Ones", "Zeros", "Full")))
    if name == "Full":
        return b.op(f"Numeric{CATEGORY[family(dtype)]}.Full", shape, dtype,
                    value=_scalar_value(draw, dtype))
    return b.op(f"Base{CATEGORY[family(dtype)]}.{name}", shape, dtype)


def _view(draw, b: StreamBuilder) -> int | None:
    tid = pick(draw, b, lambda s, d: True)
    if tid is None:
        return None
    return view_of(draw, b, tid)


VIEW_KINDS = ("swap", "reshape", "permute", "expand", "slice", "flip")


def view_of(draw, b: StreamBuilder, tid: int, kinds: tuple[str, ...] = VIEW_KINDS,
            identity_swaps: bool = False) -> int:
    """A view of ``tid`` of one of ``kinds`` (a reshape when the kind does not apply);
    ``identity_swaps`` lets swap_dims swap a dim with itself."""
    shape, dtype = b.live[tid]
    base = f"Base{CATEGORY[family(dtype)]}"
    kind = draw(st.sampled_from(kinds))
    rank = len(shape)
    if kind == "swap" and rank >= 2:
        if identity_swaps:
            d1, d2 = draw(st.integers(0, rank - 1)), draw(st.integers(0, rank - 1))
        else:
            d1, d2 = draw(st.permutations(range(rank)))[:2]
        out = list(shape)
        out[d1], out[d2] = out[d2], out[d1]
        return b.op(f"{base}.SwapDims", tuple(out), dtype, input=tid, dim1=d1, dim2=d2)
    if kind == "permute" and rank >= 2:
        axes = tuple(draw(st.permutations(range(rank))))
        return b.op(f"{base}.Permute", tuple(shape[a] for a in axes), dtype, input=tid,
                    axes=axes)
    if kind == "expand" and 1 in shape:
        out = tuple(draw(st.sampled_from((2, 3))) if d == 1 else d for d in shape)
        return b.op(f"{base}.Expand", out, dtype, input=tid)
    if kind == "slice":
        ranges = []
        for d in shape:  # a non-empty range of each non-empty dim; empty only when d is 0
            start = draw(st.integers(0, max(d - 1, 0)))
            ranges.append((start, draw(st.integers(min(start + 1, d), d))))
        out = tuple(e - s for s, e in ranges)
        return b.op(f"{base}.Slice", out, dtype, tensor=tid, ranges=tuple(ranges))
    if kind == "flip":
        axes = tuple(sorted(set(draw(st.lists(st.integers(0, rank - 1), min_size=1,
                                              max_size=rank)))))
        return b.op(f"{base}.Flip", shape, dtype, input=tid, axes=axes)
    numel = 1
    for d in shape:
        numel *= d
    target = draw(st.sampled_from(_reshape_targets(shape, numel)))
    return b.op(f"{base}.Reshape", target, dtype, input=tid)


def _reshape_targets(shape: tuple, numel: int) -> list[tuple]:
    targets = [shape, (numel,), (1,) + shape, shape + (1,)]
    if len(shape) >= 2:
        targets.append((shape[0] * shape[1],) + shape[2:])
    for d in DIMS[1:]:
        if numel % d == 0:
            targets.append((numel // d, d))
    return [t for t in targets if len(t) <= 4]


# SumDim, MeanDim, ProdDim, MaxDim, MinDim, MaxAbsDim, ArgMax, ArgMin (AnyDim / AllDim are Base*)
_REDUCE = tuple(op.variant for op in OPS
                if op.category is Category.NumericFloat and op.kind is OpKind.REDUCE_DIM)


def _reduce(draw, b: StreamBuilder) -> int | None:
    tid = pick(draw, b, lambda s, d: d.is_float or d.is_int)
    if tid is None:
        return None
    shape, dtype = b.live[tid]
    category = f"Numeric{CATEGORY[family(dtype)]}"
    if draw(st.integers(0, 5)) == 0:
        return b.op(f"{category}.{draw(st.sampled_from(('Sum', 'Max', 'Mean')))}", (1,),
                    dtype, input=tid)
    axis = draw(st.integers(0, len(shape) - 1))
    out = shape[:axis] + (1,) + shape[axis + 1:]
    name = f"{category}.{draw(st.sampled_from(_REDUCE))}"
    out_dtype = draw(st.sampled_from((DType.I32, DType.I64))) \
        if op_named(name).out_dtype is OutDType.INT else dtype
    return b.op(name, out, out_dtype, input=tid, axis=axis)


def _matmul(draw, b: StreamBuilder) -> int | None:
    tid = pick(draw, b, lambda s, d: d.is_float and len(s) >= 2)
    if tid is None:
        return None
    shape, dtype = b.live[tid]
    n = draw(st.sampled_from(b.dims()))
    rhs_shape = shape[:-2] + (shape[-1], n)
    rhs = pick(draw, b, lambda s, d: d is dtype and s == rhs_shape)
    if rhs is None or draw(st.booleans()):
        rhs = draw(input_specs(b, rhs_shape, dtype))
    return b.op("Float.Matmul", shape[:-1] + (n,), dtype, lhs=tid, rhs=rhs)


def _matmul_epilogue(draw, b: StreamBuilder) -> int | None:
    """A matmul, then one to three element-wise ops on its result (what the Matmul fuser
    fuses): unary math, a scalar op, a broadcast row added, or burn's relu. Without a
    float matrix live, its lhs is a new input."""
    if not any(d.is_float and len(s) >= 2 for s, d in b.live.values()):
        rank = draw(st.integers(2, 3))
        lhs = tuple(draw(st.sampled_from(b.dims())) for _ in range(rank))
        draw(input_specs(b, lhs, draw(st.sampled_from(FLOAT_DTYPES))))
    out = _matmul(draw, b)
    if out is None:
        return None
    shape, dtype = b.live[out]
    for _ in range(draw(st.integers(1, 3))):
        kind = draw(st.sampled_from(("unary", "scalar", "bias", "relu")))
        if kind == "unary":
            out = b.op(f"Float.{draw(st.sampled_from(_UNARY_FLOAT))}", shape, dtype, input=out)
        elif kind == "scalar":
            name = draw(st.sampled_from(_ARITH_SCALAR))
            out = b.op(f"NumericFloat.{name}", shape, dtype, lhs=out,
                       rhs=_scalar_value(draw, dtype))
        elif kind == "bias":
            row = draw(input_specs(b, (1,) * (len(shape) - 1) + shape[-1:], dtype))
            out = b.op("NumericFloat.Add", shape, dtype, lhs=out, rhs=row)
        else:
            mask = b.op("NumericFloat.LowerEqualElem", shape, DType.BOOL, lhs=out, rhs=0.0)
            out = b.op("BaseFloat.MaskFill", shape, dtype, tensor=out, mask=mask, value=0.0)
    return out


def _cat(draw, b: StreamBuilder) -> int | None:
    tid = pick(draw, b, lambda s, d: True)
    if tid is None:
        return None
    shape, dtype = b.live[tid]
    dim = draw(st.integers(0, len(shape) - 1))
    parts = [tid]
    for _ in range(draw(st.integers(1, 2))):
        size = draw(st.sampled_from((1, 2, 3, 0) if b.zero_dims else (1, 2, 3)))
        part_shape = shape[:dim] + (size,) + shape[dim + 1:]
        parts.append(draw(input_specs(b, part_shape, dtype)))
    order = draw(st.permutations(parts))
    total = sum(b.live[p][0][dim] for p in order)
    base = f"Base{CATEGORY[family(dtype)]}"
    return b.op(f"{base}.Cat", shape[:dim] + (total,) + shape[dim + 1:], dtype,
                tensors=tuple(order), dim=dim)


def _nested(flat: list, shape: tuple) -> list:
    if len(shape) == 1:
        return list(flat)
    step = len(flat) // shape[0] if shape[0] else 0
    return [_nested(flat[i * step:(i + 1) * step], shape[1:]) for i in range(shape[0])]


def _gather(draw, b: StreamBuilder) -> int | None:
    tid = pick(draw, b, lambda s, d: True)
    if tid is None:
        return None
    shape, dtype = b.live[tid]
    dim = draw(st.integers(0, len(shape) - 1))
    base = f"Base{CATEGORY[family(dtype)]}"
    index_dtype = draw(st.sampled_from((DType.I32, DType.I64)))
    if shape[dim] == 0:  # nothing to index: an empty select or gather along the empty axis
        indices = b.add_input((0,), index_dtype, data=[])
        return b.op(f"{base}.Select", shape, dtype, tensor=tid, dim=dim, indices=indices)
    if draw(st.booleans()):
        count = draw(st.sampled_from((1, 2, 3, 4)))
        values = draw(st.lists(st.integers(0, shape[dim] - 1), min_size=count, max_size=count))
        indices = b.add_input((count,), index_dtype, data=values)
        out = shape[:dim] + (count,) + shape[dim + 1:]
        return b.op(f"{base}.Select", out, dtype, tensor=tid, dim=dim, indices=indices)
    out = shape[:dim] + (draw(st.sampled_from((1, 2, 4))),) + shape[dim + 1:]
    numel = 1
    for d in out:
        numel *= d
    values = draw(st.lists(st.integers(0, shape[dim] - 1), min_size=numel, max_size=numel))
    # nested lists cannot hold an empty shape such as [1, 0, 1]: no data, nothing to read
    indices = b.add_input(out, index_dtype, data=_nested(values, out) if numel else None)
    return b.op(f"{base}.Gather", out, dtype, tensor=tid, dim=dim, indices=indices)


def _into_int(draw, b: StreamBuilder) -> int | None:
    """A float tensor converted to an int dtype (``Float.IntoInt``: Rust's ``as``)."""
    tid = pick(draw, b, lambda s, d: d.is_float)
    if tid is None:
        return None
    shape, _ = b.live[tid]
    return b.op("Float.IntoInt", shape, draw(st.sampled_from(INT_DTYPES)), input=tid)


# Drawn only where a caller asks for them (``streams(extra=...)``): not in GENERATORS, so the
# properties built on GENERATORS keep their coverage.
CONVERSION_GENERATORS = (_into_int,)

ELEMENTWISE_GENERATORS = (_unary, _abs, _binary, _binary, _scalar, _scalar, _compare, _int_ops,
                          _cast, _clamp, _mask, creation)
GENERATORS = ELEMENTWISE_GENERATORS + (_view, _view, _reduce, _reduce, _matmul, _cat, _gather)
# The Matmul fuser's domain: matmuls (batched, broadcast, on transposing views) and epilogues.
MATMUL_GENERATORS = (_matmul_epilogue,) * 8 + (_matmul,) + ELEMENTWISE_GENERATORS + (_view,)
