"""The stream builder and the input strategies the op generators draw from.

burn counterpart: none. A ``StreamBuilder`` records inputs and ops on the live tensors it
knows; ``build()`` derives burn's statuses and drops (``refimpl.liveness``) and validates.
A builder made with ``zero_dims`` draws zero-size dims too (empty tensors, empty reduction
axes, ``K = 0`` matmuls, empty cat operands), so every backend meets them routinely.
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
from refimpl.planner.launch.layout import strides_for
from refimpl.stream import InputSpec, Stream

__all__ = [
    "DIMS",
    "FLOAT_DTYPES",
    "INT_DTYPES",
    "StreamBuilder",
    "shapes",
    "strides_for_layout",
    "input_specs",
    "pick",
    "family",
    "CATEGORY",
]

DIMS = (1, 2, 3, 4, 6, 8)
ZERO_DIMS = DIMS + (0, 0)  # an empty-capable stream: about one dim in four is 0
PITCH = 4  # padded strides are multiples of this (the widest wgpu vector)
FLOAT_DTYPES = (DType.F32, DType.F32, DType.F16, DType.F64)
INT_DTYPES = (DType.I32, DType.I64, DType.U8, DType.I16, DType.U32)
CATEGORY = {"float": "Float", "int": "Int", "bool": "Bool"}


def family(dtype: DType) -> str:
    return dtype.cls.value


@dataclass
class StreamBuilder:
    """Records inputs and ops on live tensors; ``build()`` derives statuses and drops."""

    inputs: dict[int, InputSpec] = field(default_factory=dict)
    items: list = field(default_factory=list)
    live: dict[int, tuple[tuple[int, ...], DType]] = field(default_factory=dict)
    next_id: int = 0
    zero_dims: bool = False

    def dims(self) -> tuple[int, ...]:
        """The dim sizes new shapes are drawn from."""
        return ZERO_DIMS if self.zero_dims else DIMS

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

    def data_ops(self) -> int:
        """Ops recorded so far, drops and syncs aside."""
        return sum(1 for item in self.items if isinstance(item, OperationIr)
                   and item.op.name != "Drop")

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


def shapes(max_rank: int = 3, min_rank: int = 1,
           dims: tuple[int, ...] = DIMS) -> st.SearchStrategy[tuple[int, ...]]:
    return st.lists(st.sampled_from(dims), min_size=min_rank, max_size=max_rank).map(tuple)


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


def pick(draw, builder: StreamBuilder, accept: Callable[[tuple, DType], bool]) -> int | None:
    """A live tensor ``accept`` allows; the newest one two times out of three, so that ops
    chain (chains are what fuses)."""
    ids = sorted(tid for tid, (shape, dtype) in builder.live.items() if accept(shape, dtype))
    if not ids:
        return None
    if draw(st.integers(0, 2)) > 0:
        return ids[-1]
    return draw(st.sampled_from(ids))
