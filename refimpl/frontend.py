"""The lazy frontend: a small tensor API that records op streams as burn's Fusion decorator does.

burn counterpart: ``crates/burn-fusion/src/tensor.rs`` (``FusionTensor``: a reference-counted
handle, ``into_ir`` / ``to_ir_out``, the ``Drop`` it registers) and the ``Fusion`` backend's op
implementations (``crates/burn-fusion/src/ops/*.rs``), each of which builds one
``OperationIr`` with ``TensorIr`` snapshots and registers it on the stream::

    s = Session()
    a, b, c = (s.random((4, 6), seed=k) for k in range(3))
    y = (a * b + c).exp()   # NumericFloat.Mul, NumericFloat.Add, Float.Exp
    y.numpy()               # Sync([y]): runs the new items, returns y's values
    s.stream                # the recorded Stream (inputs + items); s.to_json() its JSON

**Tensors.** ``s.tensor(data)`` and ``s.random(shape, seed=k)`` become stream ``inputs``
(optionally with ``strides=``); ``s.ones/zeros/full`` record the creation ops. Every method or
operator appends one ``OperationIr`` (two for ``2 - t`` and ``2 / t``, as in burn: ``Neg`` +
``AddScalar``, ``Recip`` + ``MulScalar``). The category comes from the first operand's dtype
class (``NumericFloat`` / ``NumericInt``, ``BaseFloat`` / ``BaseInt`` / ``BaseBool``, ...),
output shapes from ``refimpl.shapes``; comparisons give ``bool``, ``argmax`` / ``argmin`` /
``.int()`` give ``DEFAULT_INT`` (``i32``, burn's ``IntElem`` on cubecl), ``.float()``
``DEFAULT_FLOAT`` (``f32``). Dims may be negative (Python style). Reductions keep the reduced
dim with size 1, as in burn.

**Statuses** (notes §2.1). burn counts the handles of a tensor: consuming one while it is the
only handle gives ``ReadWrite`` (its last use), otherwise ``ReadOnly``; ``clone()`` adds a
handle. Python has no moves, so a handle also counts as *held* while Python code can still
reach it: the op-recording function reads ``sys.getrefcount`` of each operand, and a count no
higher than a temporary's (an operand only the expression being evaluated refers to, such as
``a * b`` inside ``(a * b).exp()``) means nobody else holds it. The temporary's count depends
only on the call path (method call, binary/unary operator slot, comparison, reflected operator,
``cat`` list), so it is measured once at import by running those paths on a known temporary
and a known named tensor (``refcount_calibration()``); a path where both counts coincide (an
interpreter that borrows references) records every use there as ``ReadOnly``, which is always
safe. Consequences: ``x = x + 1`` reads ``x`` ``ReadOnly`` and then drops it; write
``x = x.move() + 1`` for burn's moving ``x.add_scalar(1)``. ``t.move()`` hands the tensor to a
new handle and invalidates ``t`` (Rust's move); ``t.clone()`` is a second handle to the same
id. A function parameter, a container or an attribute holds its tensor too (a helper that
should consume its argument moves it: ``def step(x): return x.move() * 2``). Inside an
``assert`` under pytest, subexpressions are held by the assertion rewriter, so build streams
outside ``assert`` statements.

**Drop.** When the last handle of a tensor is garbage-collected and the tensor was never
consumed with ``ReadWrite``, ``Drop(TensorIr{status: ReadWrite})`` is appended (with the real
shape, so the snapshot matches the tensor's definition). Nothing is appended once the session
is closed. Using a handle whose tensor was consumed or moved raises ``TensorIdError`` naming
the tensor.

**Executors.** ``.numpy()`` and ``s.sync(*tensors)`` append ``Sync`` and then run the items
not yet executed through the session's executor, incrementally. ``Session(executor=...)``
takes ``"eager"`` (default: ``refimpl.eager.EagerExecutor``), ``None`` (record only: ``sync``
records the point and returns ``None``) or any object with the ``Executor`` protocol:
``load_inputs(inputs)`` (called again for inputs created later), ``execute(item)`` (every item
exactly once, in stream order; an executor may defer work until it receives a ``Sync``) and
``value(tensor_id)`` (only asked for ids of the ``Sync`` just executed). A planning executor
(refimpl or fastplan planner + interpreter / gpu) plugs in there.
"""

from __future__ import annotations

import dataclasses
import gc
import math
import numbers
import sys
import warnings
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Protocol, Self

import numpy as np

from refimpl.data import logical_values
from refimpl.dtypes import DType, DTypeClass
from refimpl.errors import (DTypeError, FuselabError, InputDataError, ShapeError, StrideError,
                            TensorIdError)
from refimpl.ir import (AdaptiveAvgPool2dOpIr, AvgPool2dOpIr, BinaryOpIr, CatOpIr, ClampOpIr,
                        CreationOpIr, DropOpIr, FieldKind, FlipOpIr, FullOpIr, GatherOpIr,
                        InterpolateOpIr, MaskFillOpIr, MaskWhereOpIr, MaxPool2dOpIr,
                        OperationIr, PermuteOpIr, ReduceDimOpIr, ScalarOpIr, SelectOpIr,
                        ShapeOpIr, SliceOpIr, StreamItem, SwapDimsOpIr, Sync, TensorIr,
                        TensorStatus, UnaryOpIr)
from refimpl.ops import OP_BY_NAME, Op, OutDType, op_named
from refimpl.shapes import expected_shape
from refimpl.stream import InputSpec, Stream, stream_to_json

__all__ = ["Session", "Tensor", "Executor", "FrontendError", "cat", "refcount_calibration",
           "DEFAULT_FLOAT", "DEFAULT_INT"]

DEFAULT_FLOAT = DType.F32  # burn's default FloatElem
DEFAULT_INT = DType.I32  # burn's IntElem on cubecl: argmax/argmin outputs, .int()

F, I, B = DTypeClass.FLOAT, DTypeClass.INT, DTypeClass.BOOL
RO, RW = TensorStatus.ReadOnly, TensorStatus.ReadWrite


class FrontendError(FuselabError, RuntimeError):
    """The session cannot do this: it is closed, records only, or the tensors are foreign."""


class Executor(Protocol):
    """What a session runs its items through (see the module docstring)."""

    def load_inputs(self, inputs: Mapping[int, InputSpec]) -> None: ...

    def execute(self, item: StreamItem) -> None: ...

    def value(self, tensor_id: int) -> np.ndarray: ...


# --- op selection ---------------------------------------------------------------------------
# An op is chosen as (group, variant); the group and the first operand's dtype class give the
# category, e.g. ("Numeric", "Add") on i32 -> "NumericInt.Add".
_CATEGORIES = {
    "Base": {F: "BaseFloat", I: "BaseInt", B: "BaseBool"},
    "Numeric": {F: "NumericFloat", I: "NumericInt"},
    "Kind": {F: "Float", I: "Int", B: "Bool"},
    "Module": {F: "Module"},
}

# Casts by (from class, to class); same class -> Base*.Cast. No cast produces bool (burn has
# none; compare instead).
_CASTS = {
    (F, F): ("Base", "Cast"), (I, I): ("Base", "Cast"),
    (F, I): ("Kind", "IntoInt"), (I, F): ("Kind", "IntoFloat"),
    (B, F): ("Kind", "IntoFloat"), (B, I): ("Kind", "IntoInt"),
}

# Bitwise operators by dtype class: (tensor variant, scalar variant). Bool tensors use
# BoolOperationIr's And / Or / Not; other classes fall back to the int row and fail to resolve.
_BITWISE = {
    "and": {I: ("BitwiseAnd", "BitwiseAndScalar"), B: ("And", None)},
    "or": {I: ("BitwiseOr", "BitwiseOrScalar"), B: ("Or", None)},
    "xor": {I: ("BitwiseXor", "BitwiseXorScalar")},
    "lshift": {I: ("BitwiseLeftShift", "BitwiseLeftShiftScalar")},
    "rshift": {I: ("BitwiseRightShift", "BitwiseRightShiftScalar")},
}
_INVERT = {I: "BitwiseNot", B: "Not"}

# Input dtype by the numpy kind of host data when tensor() is given none.
_DEFAULT_FOR_KIND = {"b": DType.BOOL, "i": DEFAULT_INT, "u": DEFAULT_INT}

_DROP = op_named("Drop")

# Default output dtype per OutDType rule when the call gives none.
_DEFAULT_OUT = {OutDType.INT: DEFAULT_INT, OutDType.FLOAT: DEFAULT_FLOAT}


def _resolve(key: tuple[str, str], dtype: DType, index: int) -> Op:
    group, variant = key
    category = _CATEGORIES[group].get(dtype.cls)
    op = OP_BY_NAME.get(f"{category}.{variant}")
    if op is None:
        raise DTypeError(f"{variant} does not take {dtype.value} tensors (burn has no "
                         f"{category or group}.{variant})", op_index=index, op_name=variant)
    return op


# --- operand structs (build(inputs, out, scalars) -> desc) ----------------------------------
Build = Callable[[tuple, TensorIr, tuple], Any]


def _unary(i: tuple, o: TensorIr, s: tuple) -> UnaryOpIr:
    return UnaryOpIr(i[0], o)


def _binary(i: tuple, o: TensorIr, s: tuple) -> BinaryOpIr:
    return BinaryOpIr(i[0], i[1], o)


def _scalar_op(i: tuple, o: TensorIr, s: tuple) -> ScalarOpIr:
    return ScalarOpIr(i[0], s[0], o)


def _shape_op(i: tuple, o: TensorIr, s: tuple) -> ShapeOpIr:
    return ShapeOpIr(i[0], o)


def _creation(i: tuple, o: TensorIr, s: tuple) -> CreationOpIr:
    return CreationOpIr(o)


def _reduce(axis: int) -> Build:
    return lambda i, o, s: ReduceDimOpIr(i[0], o, axis)


# --- refcount statuses ----------------------------------------------------------------------
# Call paths to the measuring point; each has its own temporary count (calibrated below).
_METHOD, _BINARY, _REFLECTED, _UNARY, _COMPARE, _CAT, _CAT_LIST = (
    "method", "binary", "reflected", "unary", "compare", "cat", "cat_list")
_TEMPORARY: dict[str, int | None] = {}  # path -> a temporary's count (None: can't tell)
_MEASURED: dict[str, tuple[int, int]] = {}  # path -> (temporary, named) as measured


def refcount_calibration() -> dict[str, tuple[int, int]]:
    """The (temporary, named) reference counts measured at import, by call path."""
    return dict(_MEASURED)


def _statuses(path: str, counts: list[int], states: list[_TensorState],
              held: bool) -> list[TensorStatus]:
    limit = _TEMPORARY.get(path)
    uses: dict[int, int] = {}
    for st in states:
        uses[st.id] = uses.get(st.id, 0) + 1
    return [RW if (not held and limit is not None and count <= limit and st.handles == 1
                   and uses[st.id] == 1) else RO
            for st, count in zip(states, counts)]


# --- tensors --------------------------------------------------------------------------------


class _TensorState:
    """One tensor id and how many handles point at it (burn: the FusionTensor's count)."""

    __slots__ = ("consumed_at", "dtype", "handles", "id", "session", "shape")

    def __init__(self, session: Session, tid: int, shape: tuple[int, ...], dtype: DType):
        self.session, self.id, self.shape, self.dtype = session, tid, shape, dtype
        self.handles = 1
        self.consumed_at: int | None = None

    def ir(self, status: TensorStatus) -> TensorIr:
        return TensorIr(self.id, self.shape, self.dtype, status)


def _is_number(value: Any) -> bool:
    return isinstance(value, numbers.Number) and not isinstance(value, complex)


def _pair(group: str, variant: str | None, scalar_variant: str | None, lhs: Tensor,
          rhs: Any) -> tuple | None:
    """(key, operands, build, scalars) for ``lhs op rhs``; ``None`` if rhs doesn't fit."""
    if isinstance(rhs, Tensor) and variant:
        return (group, variant), (lhs, rhs), _binary, ()
    if scalar_variant and _is_number(rhs):
        return (group, scalar_variant), (lhs,), _scalar_op, (rhs,)
    return None


def _bitwise(name: str, lhs: Tensor, rhs: Any) -> tuple | None:
    table = _BITWISE[name]
    variant, scalar_variant = table.get(lhs.dtype.cls, table[I])
    return _pair("Kind", variant, scalar_variant, lhs, rhs)


def _axis(dim: int, rank: int) -> int:
    return dim + rank if -rank <= dim < 0 else dim


def _pair2(value: int | Sequence[int]) -> tuple[int, int]:
    if isinstance(value, numbers.Integral):
        return (int(value), int(value))
    return tuple(int(v) for v in value)


def _parse_dtype(dtype: DType | str) -> DType:
    return dtype if isinstance(dtype, DType) else DType.parse(dtype)


def _check_shape(shape: Sequence[int], what: str) -> tuple[int, ...]:
    shape = tuple(shape)
    if not shape or not all(isinstance(d, numbers.Integral) and d >= 0 for d in shape):
        raise ShapeError(f"{what}: a shape is a non-empty list of non-negative ints, got "
                         f"{list(shape)}")
    return tuple(int(d) for d in shape)


def _reshape_target(shape: tuple[int, ...], target: Sequence[int]) -> tuple[int, ...]:
    """``target`` with one ``-1`` replaced by the size that keeps the element count."""
    target = tuple(int(d) for d in target)
    if target.count(-1) != 1:
        return target
    known = 1
    for d in target:
        known *= d if d != -1 else 1
    numel = math.prod(shape)
    fill = numel // known if known and numel % known == 0 else -1
    return tuple(fill if d == -1 else d for d in target)


def _expand_target(shape: tuple[int, ...], target: Sequence[int]) -> tuple[int, ...]:
    """``target`` with each ``-1`` keeping the aligned (right-justified) input dim."""
    lead = len(target) - len(shape)
    return tuple(shape[k - lead] if d == -1 and k >= lead else int(d)
                 for k, d in enumerate(target))


def _slice_ranges(shape: tuple[int, ...], ranges: Sequence) -> tuple[tuple[int, int], ...]:
    """One (start, end) per dim from pairs, ``slice`` objects (step 1) or ``None`` (all)."""
    sizes = tuple(shape) + (0,) * (len(ranges) - len(shape))  # extra ranges: shapes rejects
    out = []
    for d, size in enumerate(sizes):
        r = ranges[d] if d < len(ranges) else None
        if r is None:
            r = (0, size)
        elif isinstance(r, slice):
            start, stop, step = r.indices(size)
            if step != 1:
                raise ShapeError(f"slice steps other than 1 are not supported (dim {d})")
            r = (start, max(start, stop))
        start, end = (int(x) + size if int(x) < 0 else int(x) for x in r)
        out.append((start, end))
    return tuple(out)


class Tensor:
    """A handle to a lazily recorded tensor (burn ``FusionTensor``). Make them with a Session."""

    __slots__ = ("_moved", "_state")
    __array_ufunc__ = None  # numpy scalars defer to our reflected operators

    def __init__(self, state: _TensorState) -> None:
        self._state = state
        self._moved = False

    def __del__(self) -> None:
        state = getattr(self, "_state", None)
        if state is None or self._moved:
            return
        state.handles -= 1
        if state.handles == 0 and state.consumed_at is None:
            state.session._drop(state)

    # --- identity and handles ---------------------------------------------------------------
    @property
    def id(self) -> int:
        return self._state.id

    @property
    def shape(self) -> tuple[int, ...]:
        return self._state.shape

    @property
    def dtype(self) -> DType:
        return self._state.dtype

    @property
    def rank(self) -> int:
        return len(self._state.shape)

    @property
    def session(self) -> Session:
        return self._state.session

    def __repr__(self) -> str:
        return f"Tensor(id={self.id}, shape={list(self.shape)}, dtype={self.dtype.value})"

    def __bool__(self) -> bool:
        raise TypeError("a lazy Tensor has no truth value; read it with .numpy()")

    def clone(self) -> Tensor:
        """Another handle to the same tensor id (burn ``clone``): uses become ``ReadOnly``."""
        _usable(self, self._state.session, None, "tensor")
        self._state.handles += 1
        return Tensor(self._state)

    def move(self) -> Tensor:
        """Hand the tensor to a new handle and invalidate this one (Rust's move), so that
        ``(a.move() * b)`` reads ``a`` ``ReadWrite`` when ``a`` has no other handle."""
        _usable(self, self._state.session, None, "tensor")
        self._moved = True
        return Tensor(self._state)

    def numpy(self) -> np.ndarray:
        """Read the values back: appends ``Sync([id])`` and runs the pending items."""
        return self._state.session._read((self,))[0]

    # --- arithmetic (NumericOperationIr) ----------------------------------------------------
    def __add__(self, other: Any) -> Tensor:
        spec = _pair("Numeric", "Add", "AddScalar", self, other)
        return NotImplemented if spec is None else _record(_BINARY, *spec)

    def __sub__(self, other: Any) -> Tensor:
        spec = _pair("Numeric", "Sub", "SubScalar", self, other)
        return NotImplemented if spec is None else _record(_BINARY, *spec)

    def __mul__(self, other: Any) -> Tensor:
        spec = _pair("Numeric", "Mul", "MulScalar", self, other)
        return NotImplemented if spec is None else _record(_BINARY, *spec)

    def __truediv__(self, other: Any) -> Tensor:
        spec = _pair("Numeric", "Div", "DivScalar", self, other)
        return NotImplemented if spec is None else _record(_BINARY, *spec)

    def __mod__(self, other: Any) -> Tensor:
        spec = _pair("Numeric", "Rem", "RemScalar", self, other)
        return NotImplemented if spec is None else _record(_BINARY, *spec)

    def __radd__(self, other: Any) -> Tensor:
        spec = _pair("Numeric", None, "AddScalar", self, other)
        return NotImplemented if spec is None else _record(_REFLECTED, *spec)

    def __rmul__(self, other: Any) -> Tensor:
        spec = _pair("Numeric", None, "MulScalar", self, other)
        return NotImplemented if spec is None else _record(_REFLECTED, *spec)

    def __rsub__(self, other: Any) -> Tensor:
        """``2 - t`` = ``t.neg().add_scalar(2)`` (burn)."""
        if not _is_number(other):
            return NotImplemented
        return _record(_REFLECTED, ("Numeric", "AddScalar"),
                       (_record(_REFLECTED, ("Numeric", "Neg"), (self,), _unary),),
                       _scalar_op, (other,))

    def __rtruediv__(self, other: Any) -> Tensor:
        """``2 / t`` = ``t.recip().mul_scalar(2)`` (burn; float tensors only)."""
        if not _is_number(other):
            return NotImplemented
        return _record(_REFLECTED, ("Numeric", "MulScalar"),
                       (_record(_REFLECTED, ("Kind", "Recip"), (self,), _unary),),
                       _scalar_op, (other,))

    def __neg__(self) -> Tensor:
        return _record(_UNARY, ("Numeric", "Neg"), (self,), _unary)

    def __abs__(self) -> Tensor:
        return _record(_UNARY, ("Numeric", "Abs"), (self,), _unary)

    def abs(self) -> Tensor:
        return _record(_METHOD, ("Numeric", "Abs"), (self,), _unary)

    def clamp(self, min: float, max: float) -> Tensor:
        return _record(_METHOD, ("Numeric", "Clamp"), (self,),
                       lambda i, o, s: ClampOpIr(i[0], s[0], s[1], o), (min, max))

    def clamp_min(self, min: float) -> Tensor:
        return _record(_METHOD, ("Numeric", "ClampMin"), (self,), _scalar_op, (min,))

    def clamp_max(self, max: float) -> Tensor:
        return _record(_METHOD, ("Numeric", "ClampMax"), (self,), _scalar_op, (max,))

    # --- comparisons (-> bool) --------------------------------------------------------------
    def __lt__(self, other: Any) -> Tensor:
        spec = _pair("Numeric", "Lower", "LowerElem", self, other)
        return NotImplemented if spec is None else _record(_COMPARE, *spec)

    def __gt__(self, other: Any) -> Tensor:
        spec = _pair("Numeric", "Greater", "GreaterElem", self, other)
        return NotImplemented if spec is None else _record(_COMPARE, *spec)

    def __le__(self, other: Any) -> Tensor:
        spec = _pair("Numeric", "LowerEqual", "LowerEqualElem", self, other)
        return NotImplemented if spec is None else _record(_COMPARE, *spec)

    def __ge__(self, other: Any) -> Tensor:
        spec = _pair("Numeric", "GreaterEqual", "GreaterEqualElem", self, other)
        return NotImplemented if spec is None else _record(_COMPARE, *spec)

    def equal(self, other: Tensor | float) -> Tensor:
        """``Base*.Equal`` / ``EqualElem`` (``==`` keeps Python's identity meaning)."""
        spec = _pair("Base", "Equal", "EqualElem", self, other)
        if spec is None:
            raise TypeError(f"equal() takes a Tensor or a number, not {type(other).__name__}")
        return _record(_METHOD, *spec)

    def not_equal(self, other: Tensor | float) -> Tensor:
        spec = _pair("Base", "NotEqual", "NotEqualElem", self, other)
        if spec is None:
            raise TypeError(f"not_equal() takes a Tensor or a number, not "
                            f"{type(other).__name__}")
        return _record(_METHOD, *spec)

    # --- float math (FloatOperationIr) ------------------------------------------------------
    def exp(self) -> Tensor:
        return _record(_METHOD, ("Kind", "Exp"), (self,), _unary)

    def log(self) -> Tensor:
        return _record(_METHOD, ("Kind", "Log"), (self,), _unary)

    def log1p(self) -> Tensor:
        return _record(_METHOD, ("Kind", "Log1p"), (self,), _unary)

    def sin(self) -> Tensor:
        return _record(_METHOD, ("Kind", "Sin"), (self,), _unary)

    def cos(self) -> Tensor:
        return _record(_METHOD, ("Kind", "Cos"), (self,), _unary)

    def tanh(self) -> Tensor:
        return _record(_METHOD, ("Kind", "Tanh"), (self,), _unary)

    def erf(self) -> Tensor:
        return _record(_METHOD, ("Kind", "Erf"), (self,), _unary)

    def sqrt(self) -> Tensor:
        return _record(_METHOD, ("Kind", "Sqrt"), (self,), _unary)

    def recip(self) -> Tensor:
        return _record(_METHOD, ("Kind", "Recip"), (self,), _unary)

    def powf(self, other: Tensor | float) -> Tensor:
        spec = _pair("Kind", "Powf", "PowfScalar", self, other)
        if spec is None:
            raise TypeError(f"powf() takes a Tensor or a number, not {type(other).__name__}")
        return _record(_METHOD, *spec)

    def __pow__(self, other: Any) -> Tensor:
        spec = _pair("Kind", "Powf", "PowfScalar", self, other)
        return NotImplemented if spec is None else _record(_BINARY, *spec)

    def matmul(self, other: Tensor) -> Tensor:
        return _record(_METHOD, ("Kind", "Matmul"), (self, other), _binary)

    def __matmul__(self, other: Any) -> Tensor:
        spec = _pair("Kind", "Matmul", None, self, other)
        return NotImplemented if spec is None else _record(_BINARY, *spec)

    # --- bitwise (IntOperationIr; & | ~ on bool tensors: BoolOperationIr) -------------------
    def __and__(self, other: Any) -> Tensor:
        spec = _bitwise("and", self, other)
        return NotImplemented if spec is None else _record(_BINARY, *spec)

    def __or__(self, other: Any) -> Tensor:
        spec = _bitwise("or", self, other)
        return NotImplemented if spec is None else _record(_BINARY, *spec)

    def __xor__(self, other: Any) -> Tensor:
        spec = _bitwise("xor", self, other)
        return NotImplemented if spec is None else _record(_BINARY, *spec)

    def __lshift__(self, other: Any) -> Tensor:
        spec = _bitwise("lshift", self, other)
        return NotImplemented if spec is None else _record(_BINARY, *spec)

    def __rshift__(self, other: Any) -> Tensor:
        spec = _bitwise("rshift", self, other)
        return NotImplemented if spec is None else _record(_BINARY, *spec)

    def __invert__(self) -> Tensor:
        variant = _INVERT.get(self.dtype.cls, _INVERT[I])
        return _record(_UNARY, ("Kind", variant), (self,), _unary)

    # --- reductions: per dim (dim kept with size 1) and full (shape [1]) --------------------
    def sum_dim(self, dim: int) -> Tensor:
        return _record(_METHOD, ("Numeric", "SumDim"), (self,), _reduce(_axis(dim, self.rank)))

    def mean_dim(self, dim: int) -> Tensor:
        return _record(_METHOD, ("Numeric", "MeanDim"), (self,), _reduce(_axis(dim, self.rank)))

    def prod_dim(self, dim: int) -> Tensor:
        return _record(_METHOD, ("Numeric", "ProdDim"), (self,), _reduce(_axis(dim, self.rank)))

    def max_dim(self, dim: int) -> Tensor:
        return _record(_METHOD, ("Numeric", "MaxDim"), (self,), _reduce(_axis(dim, self.rank)))

    def min_dim(self, dim: int) -> Tensor:
        return _record(_METHOD, ("Numeric", "MinDim"), (self,), _reduce(_axis(dim, self.rank)))

    def argmax(self, dim: int) -> Tensor:
        return _record(_METHOD, ("Numeric", "ArgMax"), (self,), _reduce(_axis(dim, self.rank)))

    def argmin(self, dim: int) -> Tensor:
        return _record(_METHOD, ("Numeric", "ArgMin"), (self,), _reduce(_axis(dim, self.rank)))

    def any_dim(self, dim: int) -> Tensor:
        return _record(_METHOD, ("Base", "AnyDim"), (self,), _reduce(_axis(dim, self.rank)))

    def all_dim(self, dim: int) -> Tensor:
        return _record(_METHOD, ("Base", "AllDim"), (self,), _reduce(_axis(dim, self.rank)))

    def sum(self) -> Tensor:
        return _record(_METHOD, ("Numeric", "Sum"), (self,), _unary)

    def mean(self) -> Tensor:
        return _record(_METHOD, ("Numeric", "Mean"), (self,), _unary)

    def prod(self) -> Tensor:
        return _record(_METHOD, ("Numeric", "Prod"), (self,), _unary)

    def max(self) -> Tensor:
        return _record(_METHOD, ("Numeric", "Max"), (self,), _unary)

    def min(self) -> Tensor:
        return _record(_METHOD, ("Numeric", "Min"), (self,), _unary)

    def any(self) -> Tensor:
        return _record(_METHOD, ("Base", "Any"), (self,), _unary)

    def all(self) -> Tensor:
        return _record(_METHOD, ("Base", "All"), (self,), _unary)

    # --- views and movement (BaseOperationIr) -----------------------------------------------
    def reshape(self, shape: Sequence[int]) -> Tensor:
        """New shape with the same element count; one ``-1`` is inferred."""
        return _record(_METHOD, ("Base", "Reshape"), (self,), _shape_op,
                       shape=_reshape_target(self.shape, shape))

    def swap_dims(self, dim1: int, dim2: int) -> Tensor:
        d1, d2 = _axis(dim1, self.rank), _axis(dim2, self.rank)
        return _record(_METHOD, ("Base", "SwapDims"), (self,),
                       lambda i, o, s: SwapDimsOpIr(i[0], o, d1, d2))

    def transpose(self) -> Tensor:
        """Swap the last two dims (burn ``transpose``)."""
        d1, d2 = self.rank - 2, self.rank - 1
        return _record(_METHOD, ("Base", "SwapDims"), (self,),
                       lambda i, o, s: SwapDimsOpIr(i[0], o, d1, d2))

    def permute(self, axes: Sequence[int]) -> Tensor:
        order = tuple(_axis(a, self.rank) for a in axes)
        return _record(_METHOD, ("Base", "Permute"), (self,),
                       lambda i, o, s: PermuteOpIr(i[0], o, order))

    def flip(self, axes: Sequence[int]) -> Tensor:
        order = tuple(_axis(a, self.rank) for a in axes)
        return _record(_METHOD, ("Base", "Flip"), (self,),
                       lambda i, o, s: FlipOpIr(i[0], o, order))

    def expand(self, shape: Sequence[int]) -> Tensor:
        """Grow size-1 dims (and add leading dims); ``-1`` keeps a dim."""
        return _record(_METHOD, ("Base", "Expand"), (self,), _shape_op,
                       shape=_expand_target(self.shape, shape))

    def slice(self, ranges: Sequence) -> Tensor:
        """Per dim a ``(start, end)`` pair, a step-1 ``slice`` or ``None``; missing dims: all."""
        spans = _slice_ranges(self.shape, ranges)
        return _record(_METHOD, ("Base", "Slice"), (self,),
                       lambda i, o, s: SliceOpIr(i[0], spans, o))

    # --- indexed reads and masks ------------------------------------------------------------
    def gather(self, dim: int, indices: Tensor) -> Tensor:
        axis = _axis(dim, self.rank)
        return _record(_METHOD, ("Base", "Gather"), (self, indices),
                       lambda i, o, s: GatherOpIr(i[0], axis, i[1], o))

    def select(self, dim: int, indices: Tensor) -> Tensor:
        axis = _axis(dim, self.rank)
        return _record(_METHOD, ("Base", "Select"), (self, indices),
                       lambda i, o, s: SelectOpIr(i[0], axis, i[1], o))

    def mask_where(self, mask: Tensor, value: Tensor) -> Tensor:
        """``value`` where ``mask`` is true, else this tensor."""
        return _record(_METHOD, ("Base", "MaskWhere"), (self, mask, value),
                       lambda i, o, s: MaskWhereOpIr(i[0], i[1], i[2], o))

    def mask_fill(self, mask: Tensor, value: float) -> Tensor:
        return _record(_METHOD, ("Base", "MaskFill"), (self, mask),
                       lambda i, o, s: MaskFillOpIr(i[0], i[1], s[0], o), (value,))

    # --- modules (NCHW float tensors) -------------------------------------------------------
    def max_pool2d(self, kernel_size: int | Sequence[int], stride: Any = None,
                   padding: Any = 0, dilation: Any = 1) -> Tensor:
        k, p, d = _pair2(kernel_size), _pair2(padding), _pair2(dilation)
        st = k if stride is None else _pair2(stride)
        return _record(_METHOD, ("Module", "MaxPool2d"), (self,),
                       lambda i, o, s: MaxPool2dOpIr(i[0], k, st, p, d, o))

    def avg_pool2d(self, kernel_size: int | Sequence[int], stride: Any = None,
                   padding: Any = 0, count_include_pad: bool = True) -> Tensor:
        k, p = _pair2(kernel_size), _pair2(padding)
        st, inc = (k if stride is None else _pair2(stride)), bool(count_include_pad)
        return _record(_METHOD, ("Module", "AvgPool2d"), (self,),
                       lambda i, o, s: AvgPool2dOpIr(i[0], k, st, p, inc, o))

    def adaptive_avg_pool2d(self, output_size: int | Sequence[int]) -> Tensor:
        size = _pair2(output_size)
        return _record(_METHOD, ("Module", "AdaptiveAvgPool2d"), (self,),
                       lambda i, o, s: AdaptiveAvgPool2dOpIr(i[0], size, o))

    def interpolate(self, output_size: int | Sequence[int], mode: str = "nearest") -> Tensor:
        size = _pair2(output_size)
        return _record(_METHOD, ("Module", "Interpolate"), (self,),
                       lambda i, o, s: InterpolateOpIr(i[0], size, mode, o))

    # --- casts (last: the methods ``int`` / ``float`` shadow the builtins in this body) -----
    def cast(self, dtype: DType | str) -> Tensor:
        """Another dtype; the same dtype returns this handle unchanged."""
        target = _parse_dtype(dtype)
        key = _cast_key(self.dtype, target)
        return self if key is None else _record(_METHOD, key, (self,), _unary, dtype=target)

    def int(self) -> Tensor:
        """Cast to ``DEFAULT_INT`` (``Float.IntoInt``, ``Bool.IntoInt`` or ``BaseInt.Cast``)."""
        key = _cast_key(self.dtype, DEFAULT_INT)
        return self if key is None else _record(_METHOD, key, (self,), _unary, dtype=DEFAULT_INT)

    def float(self) -> Tensor:
        """Cast to ``DEFAULT_FLOAT`` (``Int.IntoFloat``, ``Bool.IntoFloat``, ``BaseFloat.Cast``)."""
        key = _cast_key(self.dtype, DEFAULT_FLOAT)
        return self if key is None else _record(_METHOD, key, (self,), _unary,
                                                dtype=DEFAULT_FLOAT)


def _cast_key(source: DType, target: DType) -> tuple[str, str] | None:
    if source is target:
        return None
    key = _CASTS.get((source.cls, target.cls))
    if key is None:
        raise DTypeError(f"no cast from {source.value} to {target.value} (burn has none; "
                         "compare instead, e.g. t.not_equal(0))")
    return key


def cat(tensors: Sequence[Tensor], dim: int) -> Tensor:
    """Concatenate along ``dim`` (``Base*.Cat``); also ``Session.cat``."""
    container = sys.getrefcount(tensors)
    if not isinstance(tensors, list | tuple) or not tensors:
        raise TypeError("cat() takes a non-empty list or tuple of tensors")
    operands = tuple(list(tensors))  # noqa: C414 (a new tuple even when given one)
    if not isinstance(operands[0], Tensor):  # the others are checked by _record
        raise TypeError(f"cat() takes tensors, got {type(operands[0]).__name__}")
    session = operands[0].session
    if session._probe is not None:
        session._probe.append((_CAT_LIST, (container,)))
    limit = _TEMPORARY.get(_CAT_LIST)
    held = limit is None or container > limit  # the caller keeps the list: all ReadOnly
    axis = _axis(dim, operands[0].rank)
    return _record(_CAT, ("Base", "Cat"), operands,
                   lambda i, o, s: CatOpIr(i, axis, o), held=held)


# --- recording ------------------------------------------------------------------------------


def _record(path: str, key: tuple[str, str], operands: tuple, build: Build,
            scalars: tuple = (), *, session: Session | None = None, dtype: DType | None = None,
            shape: tuple[int, ...] = (), held: bool = False) -> Tensor:
    """Append one op: the single place that reads reference counts (keep it first)."""
    counts = []
    for handle in operands:
        counts.append(sys.getrefcount(handle))
    session = operands[0]._state.session if operands else session
    index = session._open_index()
    if session._probe is not None:
        session._probe.append((path, tuple(counts)))
    main = operands[0].dtype if operands else dtype
    op = _resolve(key, main, index)
    fields = _tensor_fields(op, len(operands))
    states = [_usable(h, session, index, f) for h, f in zip(operands, fields)]
    statuses = _statuses(path, counts, states, held)
    ins = tuple(st.ir(status) for st, status in zip(states, statuses))
    out_dtype = _out_dtype(op, main, dtype, index)
    out = TensorIr(session._next_id, tuple(shape), out_dtype, TensorStatus.NotInit)
    precision = ins[0].dtype if op.struct is ScalarOpIr else out_dtype
    values = tuple(_scalar(v, op, precision, index) for v in scalars)
    item = OperationIr(op, build(ins, out, values))
    _check_dtypes(item, index)
    final = tuple(expected_shape(item, index))
    if not final or min(final) < 0:
        raise ShapeError(f"{op.name} gives shape {list(final)}: a tensor has rank >= 1 and "
                         "non-negative dims", op_index=index, field="out.shape", op_name=op.name)
    if final != out.shape:
        item = OperationIr(op, dataclasses.replace(item.desc, out=TensorIr(
            out.id, final, out_dtype, TensorStatus.NotInit)))
    return session._commit(item, states, statuses)


def _tensor_fields(op: Op, count: int) -> list[str]:
    """Field paths of the op's ``count`` input tensors (``tensors.k`` for Cat)."""
    fields = []
    for name, kind in op.struct.SCHEMA:
        if name != "out" and kind is FieldKind.TENSOR:
            fields.append(name)
        elif kind is FieldKind.TENSORS:
            fields.extend(f"{name}.{k}" for k in range(count))
    return fields


def _out_dtype(op: Op, main: DType, explicit: DType | None, index: int) -> DType:
    """The output dtype by the op's ``OutDType`` rule (``explicit``: a cast's target)."""
    rule = op.out_dtype
    if rule is OutDType.SAME:
        return main
    if rule is OutDType.BOOL:
        return DType.BOOL
    out = explicit or _DEFAULT_OUT.get(rule)
    if out is None:
        raise DTypeError(f"{op.name} needs an output dtype", op_index=index, op_name=op.name)
    return out


def _usable(handle: Tensor, session: Session, index: int | None, field: str) -> _TensorState:
    if not isinstance(handle, Tensor):
        raise TypeError(f"{field}: expected a Tensor, got {type(handle).__name__}")
    st = handle._state
    if st.session is not session:
        raise FrontendError(f"{field}: tensor {st.id} belongs to another session")
    if handle._moved:
        raise TensorIdError(f"tensor {st.id} was moved out of this handle (.move()); use the "
                            "handle move() returned", op_index=index, field=field)
    if st.consumed_at is not None:
        raise TensorIdError(f"tensor {st.id} was consumed (ReadWrite) by op {st.consumed_at}; "
                            "a consumed tensor can't be used again", op_index=index,
                            field=field)
    return st


def _scalar(value: Any, op: Op, precision: DType, index: int) -> float | int | bool:
    """A scalar operand in the op family's type (burn ``ScalarIr::with_dtype``)."""
    if not _is_number(value) and not isinstance(value, np.bool_):
        raise DTypeError(f"scalar {value!r} is not a number", op_index=index, op_name=op.name)
    if op.family is B:
        return bool(value)
    if op.family is not I:
        return float(value)
    if not isinstance(value, numbers.Integral) and not float(value).is_integer():
        raise DTypeError(f"{op.name} takes an integral scalar, got {value!r}",
                         op_index=index, op_name=op.name)
    whole = int(value)
    info = np.iinfo(precision.numpy) if precision.is_int else None
    if info is not None and not info.min <= whole <= info.max:
        raise DTypeError(f"scalar {whole} is out of range for {precision.value}",
                         op_index=index, op_name=op.name)
    return whole


# Operand fields with a fixed dtype rule; every other input must match the first one's dtype.
_FIXED_DTYPE = {"mask": (lambda d: d is DType.BOOL, "bool"),
                "indices": (lambda d: d.is_int, "an int dtype")}


def _check_dtypes(item: OperationIr, index: int) -> None:
    main = item.inputs()[0].dtype if item.inputs() else None
    for name, kind in item.desc.SCHEMA:
        if name == "out" or kind not in (FieldKind.TENSOR, FieldKind.TENSORS):
            continue
        values = getattr(item.desc, name)
        for k, t in enumerate(values if kind is FieldKind.TENSORS else (values,)):
            field = f"{name}.{k}" if kind is FieldKind.TENSORS else name
            ok, text = _FIXED_DTYPE.get(name, (lambda d: d is main, main and main.value))
            if not ok(t.dtype):
                raise DTypeError(f"{item.name} needs {text} here, got {t.dtype.value}",
                                 op_index=index, field=f"{field}.dtype", op_name=item.name)


# --- sessions -------------------------------------------------------------------------------


class Session:
    """Records one stream; reads (``.numpy()``, ``sync``) run it through the executor."""

    cat = staticmethod(cat)

    def __init__(self, executor: Executor | str | None = "eager") -> None:
        if isinstance(executor, str) and executor != "eager":
            raise ValueError(f"unknown executor {executor!r} (use 'eager', None or an object)")
        self._inputs: dict[int, InputSpec] = {}
        self._items: list[StreamItem] = []
        self._next_id = 0
        self._choice = executor
        self._executor: Executor | None = None
        self._loaded: set[int] = set()
        self._executed = 0
        self._closed = False
        # (path, counts) of every recorded op; set by the import-time calibration only
        self._probe: list[tuple[str, tuple[int, ...]]] | None = None

    # --- inputs and creation ops ------------------------------------------------------------
    def tensor(self, data: Any, dtype: DType | str | None = None, *,
               strides: Sequence[int] | None = None) -> Tensor:
        """An input from host data; ``dtype`` defaults to f32 / i32 / bool by the data."""
        values = np.asarray(data)
        target = (_parse_dtype(dtype) if dtype is not None
                  else _DEFAULT_FOR_KIND.get(values.dtype.kind, DEFAULT_FLOAT))
        shape = _check_shape(values.shape, "tensor()")
        spec = InputSpec(shape, target, _strides(strides, shape), data=values.tolist())
        checked = logical_values(spec)
        return self._input(dataclasses.replace(spec, data=checked.tolist()))

    def random(self, shape: Sequence[int], dtype: DType | str = DEFAULT_FLOAT, *,
               seed: int | None = None, strides: Sequence[int] | None = None) -> Tensor:
        """An input from the documented generator (``seed`` defaults to the tensor id)."""
        shape = _check_shape(shape, "random()")
        seed = self._next_id if seed is None else int(seed)
        if seed < 0:
            raise InputDataError(f"random seed {seed} is negative")
        return self._input(InputSpec(shape, _parse_dtype(dtype), _strides(strides, shape),
                                     random=seed))

    def ones(self, shape: Sequence[int], dtype: DType | str = DEFAULT_FLOAT) -> Tensor:
        """``Base*.Ones``."""
        return _record(_METHOD, ("Base", "Ones"), (), _creation, session=self,
                       dtype=_parse_dtype(dtype), shape=_check_shape(shape, "ones()"))

    def zeros(self, shape: Sequence[int], dtype: DType | str = DEFAULT_FLOAT) -> Tensor:
        """``Base*.Zeros``."""
        return _record(_METHOD, ("Base", "Zeros"), (), _creation, session=self,
                       dtype=_parse_dtype(dtype), shape=_check_shape(shape, "zeros()"))

    def full(self, shape: Sequence[int], value: float,
             dtype: DType | str = DEFAULT_FLOAT) -> Tensor:
        """``Numeric*.Full``; for bool, ``BaseBool.Ones`` / ``Zeros`` (burn has no bool Full)."""
        target, shape = _parse_dtype(dtype), _check_shape(shape, "full()")
        if target is DType.BOOL:
            key = ("Base", "Ones" if value else "Zeros")
            return _record(_METHOD, key, (), _creation, session=self, dtype=target, shape=shape)
        return _record(_METHOD, ("Numeric", "Full"), (), lambda i, o, s: FullOpIr(o, s[0]),
                       (value,), session=self, dtype=target, shape=shape)

    # --- reading ----------------------------------------------------------------------------
    def sync(self, *tensors: Tensor) -> tuple[np.ndarray, ...] | None:
        """Append ``Sync`` (no tensors: a device sync) and run; the values, or ``None`` when
        the session records only."""
        if self._choice is None:
            self._append_sync(tensors)
            return None
        return self._read(tensors)

    @property
    def stream(self) -> Stream:
        """The stream recorded so far."""
        return Stream(inputs=dict(self._inputs), items=tuple(self._items))

    def to_json(self) -> str:
        """The recorded stream's canonical JSON text (``stream_to_json``)."""
        return stream_to_json(self.stream)

    @property
    def closed(self) -> bool:
        return self._closed

    def close(self) -> Stream:
        """Stop recording (later garbage-collected tensors append no ``Drop``); the stream."""
        self._closed = True
        return self.stream

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # --- internals --------------------------------------------------------------------------
    def _open_index(self) -> int:
        if self._closed:
            raise FrontendError("the session is closed")
        return len(self._items)

    def _input(self, spec: InputSpec) -> Tensor:
        self._open_index()
        tid = self._next_id
        self._inputs[tid] = spec
        self._next_id += 1
        return Tensor(_TensorState(self, tid, spec.shape, spec.dtype))

    def _commit(self, item: OperationIr, states: list[_TensorState],
                statuses: list[TensorStatus]) -> Tensor:
        index = len(self._items)
        for st, status in zip(states, statuses):
            if status is RW:
                st.consumed_at = index
        self._items.append(item)
        self._next_id += 1
        out = item.desc.out
        return Tensor(_TensorState(self, out.id, out.shape, out.dtype))

    def _drop(self, state: _TensorState) -> None:
        if not self._closed:
            self._items.append(OperationIr(_DROP, DropOpIr(state.ir(RW))))

    def _append_sync(self, tensors: tuple) -> tuple[int, tuple[int, ...]]:
        """Append ``Sync`` (each id once); its index and the requested ids."""
        index = self._open_index()
        ids = tuple(_usable(t, self, index, f"tensors.{k}").id for k, t in enumerate(tensors))
        self._items.append(Sync(tuple(dict.fromkeys(ids))))
        return index, ids

    def _read(self, tensors: tuple) -> tuple[np.ndarray, ...]:
        if self._choice is None:
            raise FrontendError("this session records only (executor=None): nothing to read")
        index, ids = self._append_sync(tensors)
        executor = self._run(index)
        return tuple(np.array(executor.value(tid)) for tid in ids)

    def _run(self, upto: int) -> Executor:
        if self._executor is None:
            self._executor = _make_executor(self._choice)
        fresh = {tid: spec for tid, spec in self._inputs.items() if tid not in self._loaded}
        if fresh:
            self._executor.load_inputs(fresh)
            self._loaded.update(fresh)
        while self._executed <= upto:
            self._executor.execute(self._items[self._executed])
            self._executed += 1
        return self._executor


def _make_executor(choice: Executor | str) -> Executor:
    if isinstance(choice, str):  # "eager", checked by Session.__init__
        from refimpl.eager import EagerExecutor  # the oracle; imported on first read only

        return EagerExecutor()
    return choice


def _strides(strides: Sequence[int] | None, shape: tuple[int, ...]) -> tuple[int, ...] | None:
    if strides is None:
        return None
    strides = tuple(int(s) for s in strides)
    if len(strides) != len(shape) or min(strides) < 0:
        raise StrideError(f"strides {list(strides)} do not fit shape {list(shape)}",
                          field="strides")
    return strides


# --- calibration ----------------------------------------------------------------------------


def _calibrate() -> None:
    """Measure, per call path, the count of a temporary and of a named first operand."""
    probe = Session(executor=None)
    probe._probe = log = []
    named, other = probe.zeros((1,)), probe.zeros((1,))
    held = [other]
    # (path, a use of a temporary, the same use of a named tensor / list)
    uses = (
        (_METHOD, lambda: probe.zeros((1,)).exp(), lambda: named.exp()),
        (_BINARY, lambda: probe.zeros((1,)) * other, lambda: named * other),
        (_REFLECTED, lambda: 2.0 * probe.zeros((1,)), lambda: 2.0 * named),
        (_UNARY, lambda: -probe.zeros((1,)), lambda: -named),
        (_COMPARE, lambda: probe.zeros((1,)) < other, lambda: named < other),
        (_CAT, lambda: cat([probe.zeros((1,))], 0), lambda: cat([named], 0)),
        (_CAT_LIST, lambda: cat([named], 0), lambda: cat(held, 0)),
    )
    for path, temporary_use, named_use in uses:
        counts = []
        for use in (temporary_use, named_use):
            use()
            counts.append([c for p, c in log if p == path][-1][0])
        _MEASURED[path] = (counts[0], counts[1])
        _TEMPORARY[path] = counts[0] if counts[1] > counts[0] else None
    probe.close()


def _calibrated() -> None:
    """Calibrate; an interpreter event during import (a tracer, a collection) can blur one
    measurement, so a blind path is measured again before giving up on it."""
    for _ in range(3):
        _calibrate()
        if all(limit is not None for limit in _TEMPORARY.values()):
            return
        gc.collect()
    blind = [path for path, limit in _TEMPORARY.items() if limit is None]
    if blind:
        warnings.warn(f"refimpl.frontend: reference counts cannot tell temporaries on this "
                      f"interpreter (paths {blind}); those uses are recorded ReadOnly",
                      RuntimeWarning, stacklevel=2)


_calibrated()
