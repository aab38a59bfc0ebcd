"""The session: records one op stream (inputs, ops, ``Drop``, ``Sync``) and, when values are
read, runs the new items through its executor.

burn counterpart: the ``Fusion`` backend's client (``FusionClient::register`` in
``crates/burn-fusion/src/client/``, which appends an ``OperationIr`` to the tensor's stream, and
its ``read_tensor_*``, which runs the stream before reading) together with the
``OperationStreams`` it keeps (``crates/burn-fusion/src/stream/``)::

    s = Session()
    a, b, c = (s.random((4, 6), seed=k) for k in range(3))
    y = (a * b + c).exp()   # NumericFloat.Mul, NumericFloat.Add, Float.Exp
    y.numpy()               # Sync([y]): runs the new items, returns y's values
    s.stream                # the recorded Stream (inputs + items); s.to_json() its JSON

**Inputs.** ``s.tensor(data)`` and ``s.random(shape, seed=k)`` become stream ``inputs``
(optionally with ``strides=``); ``s.ones/zeros/full`` record the creation ops. Every op a
tensor method records is checked and appended by ``Session._record``; nothing is appended
when a check fails.

**Drop.** When the last handle of a tensor is garbage-collected and the tensor was never
consumed with ``ReadWrite``, ``Drop(TensorIr{status: ReadWrite})`` is appended (with the real
shape, so the snapshot matches the tensor's definition). Nothing is appended once the session
is closed.

**Executors.** ``.numpy()`` and ``s.sync(*tensors)`` append ``Sync`` and then run the items
not yet executed through the session's executor, incrementally. ``Session(executor=...)``
takes ``"eager"`` (default: ``refimpl.eager.EagerExecutor``), ``None`` (record only: ``sync``
records the point and returns ``None``) or any object with the ``Executor`` protocol:
``load_inputs(inputs)`` (called again for inputs created later), ``execute(item)`` (every item
exactly once, in stream order; an executor may defer work until it receives a ``Sync``) and
``value(tensor_id)`` (only asked for ids of the ``Sync`` just executed). A planning executor
(refimpl or fastplan planner + interpreter / gpu) plugs in there.

Importing this module calibrates the reference counts of ``refimpl.frontend.status``.
"""

from __future__ import annotations

import dataclasses
import sys
from collections.abc import Mapping, Sequence
from typing import Any, Protocol, Self

import numpy as np

from refimpl.data import logical_values
from refimpl.dtypes import DType, DTypeClass
from refimpl.eager import EagerExecutor
from refimpl.errors import InputDataError, ShapeError, StrideError
from refimpl.frontend.operands import (DEFAULT_FLOAT, DEFAULT_FOR_KIND, Build, binary,
                                       check_dtypes, check_shape, creation, drop_desc,
                                       operation, out_dtype, parse_dtype, resolve, scalar,
                                       scalar_desc, scalar_op, snapshot, tensor_fields, unary)
from refimpl.frontend.status import METHOD, calibrate, statuses
from refimpl.frontend.tensor import FrontendError, Tensor, TensorState, cat, usable
from refimpl.ir import (BinaryOpIr, FullOpIr, OperationIr, ScalarOpIr, StreamItem, Sync,
                        TensorIr, TensorStatus, UnaryOpIr)
from refimpl.ops import Op, OutDType, ShapeRule, op_named
from refimpl.shapes import broadcast_shapes, expected_shape
from refimpl.stream import InputSpec, Stream, stream_to_json

__all__ = ["Session", "Executor"]

RW = TensorStatus.ReadWrite
_DROP = op_named("Drop")


class Executor(Protocol):
    """What a session runs its items through (see the module docstring)."""

    def load_inputs(self, inputs: Mapping[int, InputSpec]) -> None: ...

    def execute(self, item: StreamItem) -> None: ...

    def value(self, tensor_id: int) -> np.ndarray: ...


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
        target = (parse_dtype(dtype) if dtype is not None
                  else DEFAULT_FOR_KIND.get(values.dtype.kind, DEFAULT_FLOAT))
        shape = check_shape(values.shape, "tensor()")
        spec = InputSpec(shape, target, _strides(strides, shape), data=values.tolist())
        checked = logical_values(spec)
        return self._input(dataclasses.replace(spec, data=checked.tolist()))

    def random(self, shape: Sequence[int], dtype: DType | str = DEFAULT_FLOAT, *,
               seed: int | None = None, strides: Sequence[int] | None = None) -> Tensor:
        """An input from the documented generator (``seed`` defaults to the tensor id)."""
        shape = check_shape(shape, "random()")
        seed = self._next_id if seed is None else int(seed)
        if seed < 0:
            raise InputDataError(f"random seed {seed} is negative")
        return self._input(InputSpec(shape, parse_dtype(dtype), _strides(strides, shape),
                                     random=seed))

    def ones(self, shape: Sequence[int], dtype: DType | str = DEFAULT_FLOAT) -> Tensor:
        """``Base*.Ones``."""
        return self._record(METHOD, ("Base", "Ones"), (), creation, dtype=parse_dtype(dtype),
                            shape=check_shape(shape, "ones()"))

    def zeros(self, shape: Sequence[int], dtype: DType | str = DEFAULT_FLOAT) -> Tensor:
        """``Base*.Zeros``."""
        return self._record(METHOD, ("Base", "Zeros"), (), creation, dtype=parse_dtype(dtype),
                            shape=check_shape(shape, "zeros()"))

    def full(self, shape: Sequence[int], value: float,
             dtype: DType | str = DEFAULT_FLOAT) -> Tensor:
        """``Numeric*.Full``; for bool, ``BaseBool.Ones`` / ``Zeros`` (burn has no bool Full)."""
        target, shape = parse_dtype(dtype), check_shape(shape, "full()")
        if target is DType.BOOL:
            key = ("Base", "Ones" if value else "Zeros")
            return self._record(METHOD, key, (), creation, dtype=target, shape=shape)
        return self._record(METHOD, ("Numeric", "Full"), (), lambda i, o, s: FullOpIr(o, s[0]),
                            (value,), dtype=target, shape=shape)

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

    @property
    def recorded(self) -> int:
        """How many stream items (ops, drops, syncs) are recorded so far, without building
        the stream."""
        return len(self._items)

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
        return Tensor(TensorState(self, tid, spec.shape, spec.dtype))

    def _record(self, path: str, key: tuple[str, str], operands: tuple[Tensor, ...],
                build: Build, scalars: tuple = (), *, dtype: DType | None = None,
                shape: tuple[int, ...] = (), held: bool = False) -> Tensor:
        """Append one op: the single place that reads reference counts (keep it first).

        ``key`` names the op as (group, variant), resolved by the first operand's dtype class
        (``dtype`` without operands: creation ops, and a cast's target); ``build(inputs, out,
        scalars)`` makes the operand struct; ``shape`` is the out shape a creation op, a reshape
        or an expand asks for; ``held``: the caller keeps the operands (``cat`` of a named
        list).
        """
        counts = []
        for handle in operands:
            counts.append(sys.getrefcount(handle))
        index = self._open_index()
        if self._probe is not None:
            self._probe.append((path, tuple(counts)))
        main = operands[0].dtype if operands else dtype
        form = _FORMS.get((key, id(main), len(operands)))
        if form is None:
            form = _form(key, main, len(operands), index)
        op, fields, rule, rule_build = form
        states = [usable(h, self, index, f) for h, f in zip(operands, fields)]
        uses = statuses(path, counts, states, held)
        ins = tuple([st.ir(status) for st, status in zip(states, uses)])
        out_type = out_dtype(op, main, dtype, index)
        if build is rule_build and dtype is None and not shape:
            item = self._typed(op, rule, ins, out_type, scalars, index)
            if item is not None:
                return self._commit(item, states, uses)
        out = TensorIr(self._next_id, tuple(shape), out_type, TensorStatus.NotInit)
        precision = ins[0].dtype if op.struct is ScalarOpIr else out_type
        values = tuple(scalar(v, op, precision, index) for v in scalars)
        item = OperationIr(op, build(ins, out, values))
        check_dtypes(item, index)
        final = tuple(expected_shape(item, index))
        if not final or min(final) < 0:
            raise ShapeError(f"{op.name} gives shape {list(final)}: a tensor has rank >= 1 and "
                             "non-negative dims", op_index=index, field="out.shape",
                             op_name=op.name)
        if final != out.shape:
            item = OperationIr(op, dataclasses.replace(item.desc, out=TensorIr(
                out.id, final, out_type, TensorStatus.NotInit)))
        return self._commit(item, states, uses)

    def _typed(self, op: Op, rule: ShapeRule, ins: tuple[TensorIr, ...], out_type: DType,
               scalars: tuple, index: int) -> OperationIr | None:
        """The item of a unary, binary or scalar element-wise op built in one pass (the output
        snapshot made once, with its final shape); ``None`` when a dtype or shape check
        fails, for ``_record``'s general path to raise its error."""
        main = ins[0].dtype
        for t in ins:
            if t.dtype is not main:
                return None
        shape = ins[0].shape
        if rule is ShapeRule.BROADCAST:
            shape = broadcast_shapes(shape, ins[1].shape)
            if shape is None:
                return None
        out = snapshot(self._next_id, shape, out_type, TensorStatus.NotInit)
        if op.struct is UnaryOpIr:
            return operation(op, UnaryOpIr(ins[0], out))
        if op.struct is BinaryOpIr:
            return operation(op, BinaryOpIr(ins[0], ins[1], out))
        value = scalars[0]
        if type(value) is not float or op.category.family is not DTypeClass.FLOAT:
            value = scalar(value, op, main, index)
        return operation(op, scalar_desc(ins[0], value, out))

    def _commit(self, item: OperationIr, states: list[TensorState],
                uses: list[TensorStatus]) -> Tensor:
        index = len(self._items)
        for st, status in zip(states, uses):
            if status is RW:
                st.consumed_at = index
        self._items.append(item)
        self._next_id += 1
        out = item.desc.out
        return Tensor(TensorState(self, out.id, out.shape, out.dtype))

    def _drop(self, state: TensorState) -> None:
        if not self._closed:
            self._items.append(operation(_DROP, drop_desc(state.ir(RW))))

    def _append_sync(self, tensors: tuple) -> tuple[int, tuple[int, ...]]:
        """Append ``Sync`` (each id once); its index and the requested ids."""
        index = self._open_index()
        ids = tuple(usable(t, self, index, f"tensors.{k}").id for k, t in enumerate(tensors))
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


# (key, id of the main dtype, operand count) -> (op, operand fields, shape rule of the typed
# pass or None, the build function it stands for): what _record resolves once per form.
_FORMS: dict[tuple[tuple[str, str], int, int], tuple] = {}
# Structs the typed pass builds (element-wise, output dtype SAME or BOOL), with the build
# function of each, and the shape rules it computes.
_TYPED = {UnaryOpIr: unary, BinaryOpIr: binary, ScalarOpIr: scalar_op}
_TYPED_RULES = (ShapeRule.SAME, ShapeRule.BROADCAST)


def _form(key: tuple[str, str], main: DType | None, count: int, index: int) -> tuple:
    """Resolve an op form and remember it (``resolve`` raises for an op burn lacks)."""
    op = resolve(key, main, index)
    build = _TYPED.get(op.struct)
    typed = (build is not None and op.shape in _TYPED_RULES
             and (op.shape is ShapeRule.BROADCAST) == (op.struct is BinaryOpIr)
             and op.out_dtype in (OutDType.SAME, OutDType.BOOL))
    form = (op, tensor_fields(op, count), op.shape if typed else None,
            build if typed else None)
    _FORMS[(key, id(main), count)] = form
    return form


def _make_executor(choice: Executor | str) -> Executor:
    if isinstance(choice, str):  # "eager", checked by Session.__init__
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


def _probe_session() -> Session:
    """A record-only session that logs the reference counts of every op it records."""
    probe = Session(executor=None)
    probe._probe = []
    return probe


calibrate(_probe_session, cat)
