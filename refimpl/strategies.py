"""Hypothesis strategies that draw valid op streams (public: ``from refimpl.strategies import
streams``).

burn counterpart: none — this is how fuselab checks that every plan computes what the stream
means (``interp(plan(stream)) == eager(stream)``). Streams are valid by construction: a
``StreamBuilder`` records ops on the live tensors it knows (shapes and dtypes follow the op
table's rules), then ``refimpl.liveness.with_liveness`` derives burn's statuses and drops and
validates the result.

What a drawn stream may contain: element-wise ops of every fusable kind (unary math, binary
arithmetic with broadcasting, scalar ops, comparisons, bitwise ops, casts, clamp, masks,
creation ops), views (swap_dims, reshape, permute, expand, slice), per-axis and full
reductions, matmuls, cats, gathers, selects; inputs in several dtypes, some transposed or
padded (strided); explicit drops and syncs anywhere; tensors reused (``ReadOnly`` uses) or
consumed (``ReadWrite``). Sizes are small (dims from ``DIMS``, rank ≤ ``max_rank``,
≤ ``max_ops`` ops), so a property runs hundreds of examples in seconds.

>>> from hypothesis import find
>>> s = find(streams(), lambda s: len(s.ops) >= 3)
>>> len(s.ops) >= 3
True
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

from hypothesis import strategies as st

from refimpl import ir
from refimpl.dtypes import DType
from refimpl.ir import OperationIr, Sync, TensorIr, TensorStatus
from refimpl.liveness import with_liveness
from refimpl.ops import op_named
from refimpl.planner.layout import strides_for
from refimpl.stream import InputSpec, Stream

__all__ = [
    "DIMS",
    "FLOAT_DTYPES",
    "INT_DTYPES",
    "StreamBuilder",
    "shapes",
    "strides_for_layout",
    "input_specs",
    "streams",
    "elementwise_streams",
]

DIMS = (1, 2, 3, 4, 6, 8)
PITCH = 4  # padded strides are multiples of this (the widest wgpu vector)
FLOAT_DTYPES = (DType.F32, DType.F32, DType.F16, DType.F64)
INT_DTYPES = (DType.I32, DType.I64, DType.U8, DType.I16, DType.U32)
_CATEGORY = {"float": "Float", "int": "Int", "bool": "Bool"}


def _family(dtype: DType) -> str:
    return dtype.cls.value


@dataclass
class StreamBuilder:
    """Records inputs and ops on live tensors; ``build()`` derives statuses and drops."""

    inputs: dict[int, InputSpec] = field(default_factory=dict)
    items: list = field(default_factory=list)
    live: dict[int, tuple[tuple[int, ...], DType]] = field(default_factory=dict)
    next_id: int = 0

    def _new_id(self) -> int:
        self.next_id += 1
        return self.next_id - 1

    def tensor(self, tid: int) -> TensorIr:
        shape, dtype = self.live[tid]
        return TensorIr(tid, shape, dtype, TensorStatus.ReadOnly)

    def add_input(self, shape: tuple[int, ...], dtype: DType, strides=None, data=None,
                  seed: int = 0) -> int:
        tid = self._new_id()
        self.inputs[tid] = InputSpec(tuple(shape), dtype, strides, data,
                                     None if data is not None else seed)
        self.live[tid] = (tuple(shape), dtype)
        return tid

    def op(self, name: str, out_shape: tuple[int, ...], out_dtype: DType, **fields: Any) -> int:
        """Append op ``name``; tensor fields are ids (tuples of ids for ``tensors``)."""
        operation = op_named(name)
        out = self._new_id()
        values = {}
        for fname, kind in operation.struct.SCHEMA:
            if fname == "out":
                values[fname] = TensorIr(out, tuple(out_shape), out_dtype, TensorStatus.NotInit)
            elif kind is ir.FieldKind.TENSOR:
                values[fname] = self.tensor(fields[fname])
            elif kind is ir.FieldKind.TENSORS:
                values[fname] = tuple(self.tensor(t) for t in fields[fname])
            else:
                values[fname] = fields[fname]
        self.items.append(OperationIr(operation, operation.struct(**values)))
        self.live[out] = (tuple(out_shape), out_dtype)
        return out

    def sync(self, ids: tuple[int, ...]) -> None:
        self.items.append(Sync(tuple(ids)))

    def drop(self, tid: int) -> None:
        drop = op_named("Drop")
        self.items.append(OperationIr(drop, ir.DropOpIr(self.tensor(tid).with_status(
            TensorStatus.ReadWrite))))
        del self.live[tid]

    def build(self) -> Stream:
        """The stream with liveness-derived statuses and drops (validated)."""
        return with_liveness(Stream(dict(self.inputs), tuple(self.items)))


# --- inputs -------------------------------------------------------------------------------------


def shapes(max_rank: int = 3, min_rank: int = 1) -> st.SearchStrategy[tuple[int, ...]]:
    return st.lists(st.sampled_from(DIMS), min_size=min_rank, max_size=max_rank).map(tuple)


@st.composite
def strides_for_layout(draw, shape: tuple[int, ...]) -> tuple[int, ...] | None:
    """``None`` (contiguous), a permuted dense layout, or a padded one."""
    kind = draw(st.sampled_from(("contiguous", "contiguous", "permuted", "padded")))
    if kind == "contiguous" or len(shape) < 1:
        return None
    order = list(range(len(shape)))
    if kind == "permuted":
        order = draw(st.permutations(order))
        return strides_for(shape, order)
    strides, current = [0] * len(shape), 1
    for axis in reversed(order):
        strides[axis] = current
        current *= shape[axis]
        # Padding is pitched: a padded stride is rounded up to a multiple of PITCH, as a
        # pitched allocator does. burn sizes vectors on the *smallest* other stride only
        # (seed page), so an unpitched pad such as strides [5, 2, 1] would be vectorized
        # across rows: see test_interpreter.py::test_misaligned_padding_is_refused.
        if shape[axis] > 1 and draw(st.booleans()):
            current = -(-(current + 1) // PITCH) * PITCH
    return tuple(strides)


@st.composite
def input_specs(draw, builder: StreamBuilder, shape: tuple[int, ...], dtype: DType) -> int:
    strides = draw(strides_for_layout(shape))
    return builder.add_input(shape, dtype, strides, seed=draw(st.integers(0, 2**16)))


# --- op generators: each returns a new tensor id, or None when it does not apply ----------------


def _pick(draw, builder: StreamBuilder, accept: Callable[[tuple, DType], bool]) -> int | None:
    """A live tensor ``accept`` allows; the newest one two times out of three, so that ops
    chain (chains are what fuses)."""
    ids = sorted(tid for tid, (shape, dtype) in builder.live.items() if accept(shape, dtype))
    if not ids:
        return None
    if draw(st.integers(0, 2)) > 0:
        return ids[-1]
    return draw(st.sampled_from(ids))


def _broadcast_partner(draw, builder: StreamBuilder, tid: int) -> int:
    """A tensor of the same dtype whose shape broadcasts with ``tid``'s (maybe a new input)."""
    shape, dtype = builder.live[tid]
    found = _pick(draw, builder, lambda s, d: d is dtype and len(s) == len(shape) and all(
        a == b or a == 1 or b == 1 for a, b in zip(s, shape)))
    if found is not None and draw(st.booleans()):
        return found
    partner = tuple(d if draw(st.booleans()) else 1 for d in shape) if draw(st.booleans()) \
        else shape
    return draw(input_specs(builder, partner, dtype))


def _broadcast(a: tuple, b: tuple) -> tuple:
    return tuple(max(x, y) for x, y in zip(a, b))


_UNARY_FLOAT = ("Exp", "Log", "Log1p", "Cos", "Sin", "Tanh", "Erf", "Sqrt", "Recip")
_BINARY = ("Add", "Sub", "Mul", "Div", "Rem")
_COMPARE = ("Lower", "Greater", "LowerEqual", "GreaterEqual")
_BITWISE = ("BitwiseAnd", "BitwiseOr", "BitwiseXor")


def _unary(draw, b: StreamBuilder) -> int | None:
    tid = _pick(draw, b, lambda s, d: d.is_float)
    if tid is None:
        return None
    shape, dtype = b.live[tid]
    return b.op(f"Float.{draw(st.sampled_from(_UNARY_FLOAT))}", shape, dtype, input=tid)


def _abs(draw, b: StreamBuilder) -> int | None:
    tid = _pick(draw, b, lambda s, d: d.is_float or d.is_int)
    if tid is None:
        return None
    shape, dtype = b.live[tid]
    return b.op(f"Numeric{_CATEGORY[_family(dtype)]}.Abs", shape, dtype, input=tid)


def _binary(draw, b: StreamBuilder) -> int | None:
    tid = _pick(draw, b, lambda s, d: d.is_float or d.is_int)
    if tid is None:
        return None
    shape, dtype = b.live[tid]
    other = _broadcast_partner(draw, b, tid)
    out = _broadcast(shape, b.live[other][0])
    names = _BINARY + ("Powf",) if dtype.is_float else _BINARY
    name = draw(st.sampled_from(names))
    category = "Float" if name == "Powf" else f"Numeric{_CATEGORY[_family(dtype)]}"
    lhs, rhs = (tid, other) if draw(st.booleans()) else (other, tid)
    return b.op(f"{category}.{name}", out, dtype, lhs=lhs, rhs=rhs)


def _scalar_value(draw, dtype: DType):
    if dtype.is_float:
        return draw(st.sampled_from((0.5, -1.5, 2.0, 3.0, 0.0, 1e-3)))
    if dtype.is_signed:
        return draw(st.integers(-5, 5))
    return draw(st.integers(0, 5))


def _scalar(draw, b: StreamBuilder) -> int | None:
    tid = _pick(draw, b, lambda s, d: d.is_float or d.is_int)
    if tid is None:
        return None
    shape, dtype = b.live[tid]
    category = f"Numeric{_CATEGORY[_family(dtype)]}"
    choice = draw(st.sampled_from(("arith", "compare", "powf", "bitwise")))
    value = _scalar_value(draw, dtype)
    if choice == "compare":
        name = draw(st.sampled_from(("LowerElem", "GreaterElem", "LowerEqualElem",
                                     "GreaterEqualElem")))
        return b.op(f"{category}.{name}", shape, DType.BOOL, lhs=tid, rhs=value)
    if choice == "powf" and dtype.is_float:
        return b.op("Float.PowfScalar", shape, dtype, lhs=tid, rhs=value)
    if choice == "bitwise" and dtype.is_int:
        name = draw(st.sampled_from(("BitwiseAndScalar", "BitwiseOrScalar", "BitwiseXorScalar",
                                     "BitwiseLeftShiftScalar", "BitwiseRightShiftScalar")))
        return b.op(f"Int.{name}", shape, dtype, lhs=tid, rhs=abs(value))
    name = draw(st.sampled_from(("AddScalar", "SubScalar", "MulScalar", "DivScalar",
                                 "RemScalar")))
    return b.op(f"{category}.{name}", shape, dtype, lhs=tid, rhs=value)


def _compare(draw, b: StreamBuilder) -> int | None:
    tid = _pick(draw, b, lambda s, d: True)
    if tid is None:
        return None
    shape, dtype = b.live[tid]
    other = _broadcast_partner(draw, b, tid)
    out = _broadcast(shape, b.live[other][0])
    if dtype is DType.BOOL or draw(st.booleans()):
        return b.op(f"Base{_CATEGORY[_family(dtype)]}.Equal", out, DType.BOOL, lhs=tid,
                    rhs=other)
    name = draw(st.sampled_from(_COMPARE))
    return b.op(f"Numeric{_CATEGORY[_family(dtype)]}.{name}", out, DType.BOOL, lhs=tid,
                rhs=other)


def _int_ops(draw, b: StreamBuilder) -> int | None:
    tid = _pick(draw, b, lambda s, d: d.is_int)
    if tid is None:
        return None
    shape, dtype = b.live[tid]
    kind = draw(st.sampled_from(("bitwise", "not", "float")))
    if kind == "not":
        return b.op("Int.BitwiseNot", shape, dtype, input=tid)
    if kind == "float":
        return b.op("Int.IntoFloat", shape, draw(st.sampled_from(FLOAT_DTYPES)), input=tid)
    other = _broadcast_partner(draw, b, tid)
    return b.op(f"Int.{draw(st.sampled_from(_BITWISE))}", _broadcast(shape, b.live[other][0]),
                dtype, lhs=tid, rhs=other)


def _cast(draw, b: StreamBuilder) -> int | None:
    tid = _pick(draw, b, lambda s, d: d.is_float or d.is_int)
    if tid is None:
        return None
    shape, dtype = b.live[tid]
    pool = FLOAT_DTYPES if dtype.is_float else INT_DTYPES
    return b.op(f"Base{_CATEGORY[_family(dtype)]}.Cast", shape, draw(st.sampled_from(pool)),
                input=tid)


def _clamp(draw, b: StreamBuilder) -> int | None:
    tid = _pick(draw, b, lambda s, d: d.is_float or d.is_int)
    if tid is None:
        return None
    shape, dtype = b.live[tid]
    low, high = sorted((_scalar_value(draw, dtype), _scalar_value(draw, dtype)))
    return b.op(f"Numeric{_CATEGORY[_family(dtype)]}.Clamp", shape, dtype, tensor=tid,
                min=low, max=high)


def _mask(draw, b: StreamBuilder) -> int | None:
    tid = _pick(draw, b, lambda s, d: True)
    if tid is None:
        return None
    shape, dtype = b.live[tid]
    mask = _pick(draw, b, lambda s, d: d is DType.BOOL and len(s) == len(shape) and all(
        x == y or x == 1 for x, y in zip(s, shape)))
    if mask is None:
        mask = b.add_input(tuple(d if draw(st.booleans()) else 1 for d in shape), DType.BOOL,
                           seed=draw(st.integers(0, 99)))
    category = f"Base{_CATEGORY[_family(dtype)]}"
    if draw(st.booleans()):
        value = draw(st.booleans()) if dtype is DType.BOOL else _scalar_value(draw, dtype)
        return b.op(f"{category}.MaskFill", shape, dtype, tensor=tid, mask=mask, value=value)
    value = b.add_input(shape, dtype, seed=draw(st.integers(0, 99)))
    return b.op(f"{category}.MaskWhere", shape, dtype, tensor=tid, mask=mask, value=value)


def _creation(draw, b: StreamBuilder) -> int | None:
    shape = draw(shapes(3))
    dtype = draw(st.sampled_from(FLOAT_DTYPES + INT_DTYPES))
    name = draw(st.sampled_from(("Ones", "Zeros", "Full")))
    if name == "Full":
        return b.op(f"Numeric{_CATEGORY[_family(dtype)]}.Full", shape, dtype,
                    value=_scalar_value(draw, dtype))
    return b.op(f"Base{_CATEGORY[_family(dtype)]}.{name}", shape, dtype)


def _view(draw, b: StreamBuilder) -> int | None:
    tid = _pick(draw, b, lambda s, d: len(s) >= 2 or True)
    if tid is None:
        return None
    shape, dtype = b.live[tid]
    base = f"Base{_CATEGORY[_family(dtype)]}"
    kind = draw(st.sampled_from(("swap", "reshape", "permute", "expand", "slice", "flip")))
    rank = len(shape)
    if kind == "swap" and rank >= 2:
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
        for d in shape:
            start = draw(st.integers(0, d - 1))
            ranges.append((start, draw(st.integers(start + 1, d))))
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


_REDUCE = ("SumDim", "MeanDim", "MaxDim", "MinDim", "ProdDim", "MaxAbsDim", "ArgMax", "ArgMin")


def _reduce(draw, b: StreamBuilder) -> int | None:
    tid = _pick(draw, b, lambda s, d: d.is_float or d.is_int)
    if tid is None:
        return None
    shape, dtype = b.live[tid]
    category = f"Numeric{_CATEGORY[_family(dtype)]}"
    if draw(st.integers(0, 5)) == 0:
        return b.op(f"{category}.{draw(st.sampled_from(('Sum', 'Max', 'Mean')))}", (1,),
                    dtype, input=tid)
    axis = draw(st.integers(0, len(shape) - 1))
    out = shape[:axis] + (1,) + shape[axis + 1:]
    name = draw(st.sampled_from(_REDUCE))
    out_dtype = draw(st.sampled_from((DType.I32, DType.I64))) if name.startswith("Arg") else dtype
    return b.op(f"{category}.{name}", out, out_dtype, input=tid, axis=axis)


def _matmul(draw, b: StreamBuilder) -> int | None:
    tid = _pick(draw, b, lambda s, d: d.is_float and len(s) >= 2)
    if tid is None:
        return None
    shape, dtype = b.live[tid]
    n = draw(st.sampled_from(DIMS))
    rhs_shape = shape[:-2] + (shape[-1], n)
    rhs = _pick(draw, b, lambda s, d: d is dtype and s == rhs_shape)
    if rhs is None or draw(st.booleans()):
        rhs = draw(input_specs(b, rhs_shape, dtype))
    return b.op("Float.Matmul", shape[:-1] + (n,), dtype, lhs=tid, rhs=rhs)


def _cat(draw, b: StreamBuilder) -> int | None:
    tid = _pick(draw, b, lambda s, d: True)
    if tid is None:
        return None
    shape, dtype = b.live[tid]
    dim = draw(st.integers(0, len(shape) - 1))
    parts = [tid]
    for _ in range(draw(st.integers(1, 2))):
        size = draw(st.sampled_from((1, 2, 3)))
        part_shape = shape[:dim] + (size,) + shape[dim + 1:]
        parts.append(draw(input_specs(b, part_shape, dtype)))
    order = draw(st.permutations(parts))
    total = sum(b.live[p][0][dim] for p in order)
    base = f"Base{_CATEGORY[_family(dtype)]}"
    return b.op(f"{base}.Cat", shape[:dim] + (total,) + shape[dim + 1:], dtype,
                tensors=tuple(order), dim=dim)


def _nested(flat: list, shape: tuple) -> list:
    if len(shape) == 1:
        return list(flat)
    step = len(flat) // shape[0]
    return [_nested(flat[i * step:(i + 1) * step], shape[1:]) for i in range(shape[0])]


def _gather(draw, b: StreamBuilder) -> int | None:
    tid = _pick(draw, b, lambda s, d: True)
    if tid is None:
        return None
    shape, dtype = b.live[tid]
    dim = draw(st.integers(0, len(shape) - 1))
    base = f"Base{_CATEGORY[_family(dtype)]}"
    index_dtype = draw(st.sampled_from((DType.I32, DType.I64)))
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
    indices = b.add_input(out, index_dtype, data=_nested(values, out))
    return b.op(f"{base}.Gather", out, dtype, tensor=tid, dim=dim, indices=indices)


ELEMENTWISE_GENERATORS = (_unary, _abs, _binary, _binary, _scalar, _scalar, _compare, _int_ops,
                          _cast, _clamp, _mask, _creation)
GENERATORS = ELEMENTWISE_GENERATORS + (_view, _view, _reduce, _reduce, _matmul, _cat, _gather)


@st.composite
def _stream(draw, generators: tuple, max_ops: int, max_rank: int) -> Stream:
    builder = StreamBuilder()
    for _ in range(draw(st.integers(1, 3))):
        shape = draw(shapes(max_rank))
        dtype = draw(st.sampled_from(FLOAT_DTYPES + FLOAT_DTYPES + INT_DTYPES + (DType.BOOL,)))
        draw(input_specs(builder, shape, dtype))
    for _ in range(draw(st.integers(max(1, max_ops // 3), max_ops))):
        event = draw(st.integers(0, 9))
        if event == 0 and builder.live:
            builder.sync((draw(st.sampled_from(sorted(builder.live))),))
        elif event == 1 and len(builder.live) > 1:
            builder.drop(draw(st.sampled_from(sorted(builder.live))))
        else:
            draw(st.sampled_from(generators))(draw, builder)
    produced = sorted(t for t in builder.live if t not in builder.inputs)
    if not produced:
        produced = [_creation(draw, builder)]
    builder.sync(tuple(draw(st.lists(st.sampled_from(produced), min_size=1, max_size=3,
                                     unique=True))))
    return builder.build()


def streams(max_ops: int = 10, max_rank: int = 3) -> st.SearchStrategy[Stream]:
    """Valid streams with every kind of op fuselab fuses or runs."""
    return _stream(GENERATORS, max_ops, max_rank)


def elementwise_streams(max_ops: int = 10, max_rank: int = 3) -> st.SearchStrategy[Stream]:
    """Valid streams of element-wise ops only (the ElementWise fuser's whole domain)."""
    return _stream(ELEMENTWISE_GENERATORS, max_ops, max_rank)
