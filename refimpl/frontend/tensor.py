"""The Tensor API: handles to lazily recorded tensors, whose methods and operators record ops.

burn counterpart: ``crates/burn-fusion/src/tensor.rs`` (``FusionTensor``: a reference-counted
handle, ``into_ir`` / ``to_ir_out``, the ``Drop`` it registers) and the ``Fusion`` backend's op
implementations (``crates/burn-fusion/src/ops/*.rs``), each of which builds one
``OperationIr`` with ``TensorIr`` snapshots and registers it on the stream.

Every method or operator appends one ``OperationIr`` (two for ``2 - t`` and ``2 / t``, as in
burn: ``Neg`` + ``AddScalar``, ``Recip`` + ``MulScalar``); the methods along dims come from
``refimpl.frontend.dims``. The category comes from the first operand's dtype class
(``NumericFloat`` / ``NumericInt``, ``BaseFloat`` / ``BaseInt`` / ``BaseBool``, ...), output
shapes from ``refimpl.shapes``; comparisons give ``bool``, ``.int()`` ``DEFAULT_INT`` (``i32``,
burn's ``IntElem`` on cubecl), ``.float()`` ``DEFAULT_FLOAT`` (``f32``). Division is burn's:
``/`` on int tensors truncates toward zero, ``%`` is floor modulo, and ``//`` (burn has none)
raises ``FrontendError``. ``docs/frontend.md`` lists every method.

``t.clone()`` is a second handle to the same id; ``t.move()`` hands the tensor to a new handle
and invalidates ``t`` (Rust's move); statuses come from ``refimpl.frontend.status``. When the
last handle of a tensor is garbage-collected and the tensor was never consumed with
``ReadWrite``, its session appends ``Drop``. Using a handle whose tensor was consumed or moved
raises ``TensorIdError`` naming the tensor.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import Any, Protocol

import numpy as np

from refimpl.dtypes import DType
from refimpl.errors import FuselabError, TensorIdError
from refimpl.frontend.dims import DimMethods
from refimpl.frontend.operands import (DEFAULT_FLOAT, DEFAULT_INT, Build, binary,
                                       bitwise_variants, cast_key, dim_index, invert_variant,
                                       is_number, parse_dtype, record, scalar_op, snapshot,
                                       unary)
from refimpl.frontend.status import (BINARY, CAT, CAT_LIST, COMPARE, METHOD, REFLECTED, UNARY,
                                     list_is_held)
from refimpl.ir import CatOpIr, ClampOpIr, TensorIr, TensorStatus

__all__ = ["Tensor", "TensorState", "Recorder", "FrontendError", "cat", "usable"]


class FrontendError(FuselabError, RuntimeError):
    """The session cannot do this: it is closed, records only, the tensors are foreign, or
    burn has no such op (``//``)."""


_NO_FLOOR_DIVISION = (
    "'//' is not a burn op. burn's '/' on int tensors truncates toward zero (Div: -7 / 2 == "
    "-3) and '%' is floor modulo with the divisor's sign (Rem: -7 % 2 == 1, as in Python); "
    "on float tensors write (a / b).floor()")


class Recorder(Protocol):
    """What a tensor needs from the session recording it (``Session``)."""

    _probe: list[tuple[str, tuple[int, ...]]] | None

    def _record(self, path: str, key: tuple[str, str], operands: tuple[Tensor, ...],
                build: Build, scalars: tuple = (), *, dtype: DType | None = None,
                shape: tuple[int, ...] = (), held: bool = False) -> Tensor: ...

    def _drop(self, state: TensorState) -> None: ...

    def _read(self, tensors: tuple[Tensor, ...]) -> tuple[np.ndarray, ...]: ...


class TensorState:
    """One tensor id and how many handles point at it (burn: the FusionTensor's count)."""

    __slots__ = ("consumed_at", "dtype", "handles", "id", "session", "shape")

    def __init__(self, session: Recorder, tid: int, shape: tuple[int, ...], dtype: DType):
        self.session, self.id, self.shape, self.dtype = session, tid, shape, dtype
        self.handles = 1
        self.consumed_at: int | None = None

    def ir(self, status: TensorStatus) -> TensorIr:
        return snapshot(self.id, self.shape, self.dtype, status)


def _pair(group: str, variant: str | None, scalar_variant: str | None, lhs: Tensor,
          rhs: Any) -> tuple | None:
    """(key, operands, build, scalars) for ``lhs op rhs``; ``None`` if rhs doesn't fit."""
    if isinstance(rhs, Tensor) and variant:
        return (group, variant), (lhs, rhs), binary, ()
    if scalar_variant and is_number(rhs):
        return (group, scalar_variant), (lhs,), scalar_op, (rhs,)
    return None


def _bitwise(name: str, lhs: Tensor, rhs: Any) -> tuple | None:
    variant, scalar_variant = bitwise_variants(name, lhs.dtype)
    return _pair("Kind", variant, scalar_variant, lhs, rhs)


class Tensor(DimMethods):
    """A handle to a lazily recorded tensor (burn ``FusionTensor``). Make them with a Session."""

    __slots__ = ("_moved", "_state")
    __array_ufunc__ = None  # numpy scalars defer to our reflected operators

    def __init__(self, state: TensorState) -> None:
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
    def session(self) -> Recorder:
        """The ``Session`` recording this tensor."""
        return self._state.session

    def __repr__(self) -> str:
        return f"Tensor(id={self.id}, shape={list(self.shape)}, dtype={self.dtype.value})"

    def __bool__(self) -> bool:
        raise TypeError("a lazy Tensor has no truth value; read it with .numpy()")

    def clone(self) -> Tensor:
        """Another handle to the same tensor id (burn ``clone``): uses become ``ReadOnly``.
        The handle is of this handle's class, so that every handle of a session compares
        through the same methods."""
        usable(self, self._state.session, None, "tensor")
        self._state.handles += 1
        return type(self)(self._state)

    def move(self) -> Tensor:
        """Hand the tensor to a new handle and invalidate this one (Rust's move), so that
        ``(a.move() * b)`` reads ``a`` ``ReadWrite`` when ``a`` has no other handle."""
        usable(self, self._state.session, None, "tensor")
        self._moved = True
        return type(self)(self._state)

    def numpy(self) -> np.ndarray:
        """Read the values back: appends ``Sync([id])`` and runs the pending items."""
        return self._state.session._read((self,))[0]

    # --- arithmetic (NumericOperationIr) ----------------------------------------------------
    def __add__(self, other: Any) -> Tensor:
        spec = _pair("Numeric", "Add", "AddScalar", self, other)
        return NotImplemented if spec is None else record(BINARY, *spec)

    def __sub__(self, other: Any) -> Tensor:
        spec = _pair("Numeric", "Sub", "SubScalar", self, other)
        return NotImplemented if spec is None else record(BINARY, *spec)

    def __mul__(self, other: Any) -> Tensor:
        spec = _pair("Numeric", "Mul", "MulScalar", self, other)
        return NotImplemented if spec is None else record(BINARY, *spec)

    def __truediv__(self, other: Any) -> Tensor:
        """burn ``Div``: IEEE on floats; on ints it truncates toward zero (``-7 / 2 == -3``)
        and ``x / 0 == x`` (burn's rule, not Python's true division)."""
        spec = _pair("Numeric", "Div", "DivScalar", self, other)
        return NotImplemented if spec is None else record(BINARY, *spec)

    def __mod__(self, other: Any) -> Tensor:
        """burn ``Rem``: floor modulo, the divisor's sign as in Python (``-7 % 2 == 1``);
        ints: ``x % 0 == 0``; floats: ``x - y * floor(x / y)`` in the dtype."""
        spec = _pair("Numeric", "Rem", "RemScalar", self, other)
        return NotImplemented if spec is None else record(BINARY, *spec)

    def __floordiv__(self, other: Any) -> Tensor:
        """Refused with ``FrontendError``: burn has no floor division (see ``__truediv__``)."""
        if not isinstance(other, Tensor) and not is_number(other):
            return NotImplemented
        raise FrontendError(_NO_FLOOR_DIVISION)

    def __rfloordiv__(self, other: Any) -> Tensor:
        if not is_number(other):
            return NotImplemented
        raise FrontendError(_NO_FLOOR_DIVISION)

    def __radd__(self, other: Any) -> Tensor:
        spec = _pair("Numeric", None, "AddScalar", self, other)
        return NotImplemented if spec is None else record(REFLECTED, *spec)

    def __rmul__(self, other: Any) -> Tensor:
        spec = _pair("Numeric", None, "MulScalar", self, other)
        return NotImplemented if spec is None else record(REFLECTED, *spec)

    def __rsub__(self, other: Any) -> Tensor:
        """``2 - t`` = ``t.neg().add_scalar(2)`` (burn)."""
        if not is_number(other):
            return NotImplemented
        return record(REFLECTED, ("Numeric", "AddScalar"),
                      (record(REFLECTED, ("Numeric", "Neg"), (self,), unary),),
                      scalar_op, (other,))

    def __rtruediv__(self, other: Any) -> Tensor:
        """``2 / t`` = ``t.recip().mul_scalar(2)`` (burn; float tensors only)."""
        if not is_number(other):
            return NotImplemented
        return record(REFLECTED, ("Numeric", "MulScalar"),
                      (record(REFLECTED, ("Kind", "Recip"), (self,), unary),),
                      scalar_op, (other,))

    def __neg__(self) -> Tensor:
        return record(UNARY, ("Numeric", "Neg"), (self,), unary)

    def __abs__(self) -> Tensor:
        return record(UNARY, ("Numeric", "Abs"), (self,), unary)

    def abs(self) -> Tensor:
        return record(METHOD, ("Numeric", "Abs"), (self,), unary)

    def sign(self) -> Tensor:
        """-1, 0 or 1 by the sign, in the input's dtype (``sign(NaN)`` is NaN)."""
        return record(METHOD, ("Numeric", "Sign"), (self,), unary)

    def clamp(self, min: float, max: float) -> Tensor:
        return record(METHOD, ("Numeric", "Clamp"), (self,),
                      lambda i, o, s: ClampOpIr(i[0], s[0], s[1], o), (min, max))

    def clamp_min(self, min: float) -> Tensor:
        return record(METHOD, ("Numeric", "ClampMin"), (self,), scalar_op, (min,))

    def clamp_max(self, max: float) -> Tensor:
        return record(METHOD, ("Numeric", "ClampMax"), (self,), scalar_op, (max,))

    # --- comparisons (-> bool) --------------------------------------------------------------
    def __lt__(self, other: Any) -> Tensor:
        spec = _pair("Numeric", "Lower", "LowerElem", self, other)
        return NotImplemented if spec is None else record(COMPARE, *spec)

    def __gt__(self, other: Any) -> Tensor:
        spec = _pair("Numeric", "Greater", "GreaterElem", self, other)
        return NotImplemented if spec is None else record(COMPARE, *spec)

    def __le__(self, other: Any) -> Tensor:
        spec = _pair("Numeric", "LowerEqual", "LowerEqualElem", self, other)
        return NotImplemented if spec is None else record(COMPARE, *spec)

    def __ge__(self, other: Any) -> Tensor:
        spec = _pair("Numeric", "GreaterEqual", "GreaterEqualElem", self, other)
        return NotImplemented if spec is None else record(COMPARE, *spec)

    def equal(self, other: Tensor | float) -> Tensor:
        """``Base*.Equal`` / ``EqualElem`` (``==`` keeps Python's identity meaning)."""
        spec = _pair("Base", "Equal", "EqualElem", self, other)
        if spec is None:
            raise TypeError(f"equal() takes a Tensor or a number, not {type(other).__name__}")
        return record(METHOD, *spec)

    def not_equal(self, other: Tensor | float) -> Tensor:
        spec = _pair("Base", "NotEqual", "NotEqualElem", self, other)
        if spec is None:
            raise TypeError(f"not_equal() takes a Tensor or a number, not "
                            f"{type(other).__name__}")
        return record(METHOD, *spec)

    # --- float math (FloatOperationIr) ------------------------------------------------------
    def exp(self) -> Tensor:
        return record(METHOD, ("Kind", "Exp"), (self,), unary)

    def log(self) -> Tensor:
        return record(METHOD, ("Kind", "Log"), (self,), unary)

    def log1p(self) -> Tensor:
        return record(METHOD, ("Kind", "Log1p"), (self,), unary)

    def sin(self) -> Tensor:
        return record(METHOD, ("Kind", "Sin"), (self,), unary)

    def cos(self) -> Tensor:
        return record(METHOD, ("Kind", "Cos"), (self,), unary)

    def tan(self) -> Tensor:
        return record(METHOD, ("Kind", "Tan"), (self,), unary)

    def tanh(self) -> Tensor:
        return record(METHOD, ("Kind", "Tanh"), (self,), unary)

    def erf(self) -> Tensor:
        return record(METHOD, ("Kind", "Erf"), (self,), unary)

    def sqrt(self) -> Tensor:
        return record(METHOD, ("Kind", "Sqrt"), (self,), unary)

    def recip(self) -> Tensor:
        return record(METHOD, ("Kind", "Recip"), (self,), unary)

    def round(self) -> Tensor:
        """Round half to even (burn ``round``: ``2.5 -> 2``, ``3.5 -> 4``)."""
        return record(METHOD, ("Kind", "Round"), (self,), unary)

    def floor(self) -> Tensor:
        return record(METHOD, ("Kind", "Floor"), (self,), unary)

    def ceil(self) -> Tensor:
        return record(METHOD, ("Kind", "Ceil"), (self,), unary)

    def is_nan(self) -> Tensor:
        """A bool tensor, true where the value is NaN (``Float.IsNan``)."""
        return record(METHOD, ("Kind", "IsNan"), (self,), unary)

    def is_inf(self) -> Tensor:
        """A bool tensor, true where the value is +inf or -inf (``Float.IsInf``)."""
        return record(METHOD, ("Kind", "IsInf"), (self,), unary)

    def powf(self, other: Tensor | float) -> Tensor:
        spec = _pair("Kind", "Powf", "PowfScalar", self, other)
        if spec is None:
            raise TypeError(f"powf() takes a Tensor or a number, not {type(other).__name__}")
        return record(METHOD, *spec)

    def __pow__(self, other: Any) -> Tensor:
        spec = _pair("Kind", "Powf", "PowfScalar", self, other)
        return NotImplemented if spec is None else record(BINARY, *spec)

    def matmul(self, other: Tensor) -> Tensor:
        return record(METHOD, ("Kind", "Matmul"), (self, other), binary)

    def __matmul__(self, other: Any) -> Tensor:
        spec = _pair("Kind", "Matmul", None, self, other)
        return NotImplemented if spec is None else record(BINARY, *spec)

    # --- bitwise (IntOperationIr; & | ~ on bool tensors: BoolOperationIr) -------------------
    def __and__(self, other: Any) -> Tensor:
        spec = _bitwise("and", self, other)
        return NotImplemented if spec is None else record(BINARY, *spec)

    def __or__(self, other: Any) -> Tensor:
        spec = _bitwise("or", self, other)
        return NotImplemented if spec is None else record(BINARY, *spec)

    def __xor__(self, other: Any) -> Tensor:
        spec = _bitwise("xor", self, other)
        return NotImplemented if spec is None else record(BINARY, *spec)

    def __lshift__(self, other: Any) -> Tensor:
        spec = _bitwise("lshift", self, other)
        return NotImplemented if spec is None else record(BINARY, *spec)

    def __rshift__(self, other: Any) -> Tensor:
        spec = _bitwise("rshift", self, other)
        return NotImplemented if spec is None else record(BINARY, *spec)

    def __invert__(self) -> Tensor:
        return record(UNARY, ("Kind", invert_variant(self.dtype)), (self,), unary)

    # --- casts (last: the methods ``int`` / ``float`` shadow the builtins in this body) -----
    def cast(self, dtype: DType | str) -> Tensor:
        """Another dtype; the same dtype returns this handle unchanged."""
        target = parse_dtype(dtype)
        key = cast_key(self.dtype, target)
        return self if key is None else record(METHOD, key, (self,), unary, dtype=target)

    def int(self) -> Tensor:
        """Cast to ``DEFAULT_INT`` (``Float.IntoInt``, ``Bool.IntoInt`` or ``BaseInt.Cast``)."""
        key = cast_key(self.dtype, DEFAULT_INT)
        return self if key is None else record(METHOD, key, (self,), unary, dtype=DEFAULT_INT)

    def float(self) -> Tensor:
        """Cast to ``DEFAULT_FLOAT`` (``Int.IntoFloat``, ``Bool.IntoFloat``, ``BaseFloat.Cast``)."""
        key = cast_key(self.dtype, DEFAULT_FLOAT)
        return self if key is None else record(METHOD, key, (self,), unary,
                                               dtype=DEFAULT_FLOAT)


def cat(tensors: Sequence[Tensor], dim: int) -> Tensor:
    """Concatenate along ``dim`` (``Base*.Cat``); also ``Session.cat``."""
    container = sys.getrefcount(tensors)
    if not isinstance(tensors, list | tuple) or not tensors:
        raise TypeError("cat() takes a non-empty list or tuple of tensors")
    operands = tuple(list(tensors))  # noqa: C414 (a new tuple even when given one)
    if not isinstance(operands[0], Tensor):  # the others are checked when recording
        raise TypeError(f"cat() takes tensors, got {type(operands[0]).__name__}")
    session = operands[0].session
    if session._probe is not None:
        session._probe.append((CAT_LIST, (container,)))
    dim = dim_index(dim, operands[0].rank)
    return record(CAT, ("Base", "Cat"), operands, lambda i, o, s: CatOpIr(i, dim, o),
                  held=list_is_held(container))


def usable(handle: Tensor, session: Recorder, index: int | None, field: str) -> TensorState:
    """The handle's tensor state, if ``session`` may record a use of it now."""
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
