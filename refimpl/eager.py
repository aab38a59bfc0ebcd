"""The eager oracle: runs a stream op by op on numpy, no fusion. The semantic truth.

burn counterpart: running the stream without ``burn-fusion`` (every ``OperationIr`` executed
by its own backend kernel), with a ``HandleContainer``-like store: a ``ReadWrite`` use or a
``Drop`` removes the tensor (notes §2.1), so a stream that uses a tensor after its last use
fails here with ``TensorIdError`` naming the op index.

The executor is incremental: the lazy frontend calls ``execute`` item by item and reads
values with ``value``; ``run_stream`` does the whole stream at once. Inputs are materialised
through their strided buffers (``refimpl.data``), so the layout path is exercised even here.
Stored values are contiguous, read-only arrays of the snapshot's shape and dtype.
"""

from __future__ import annotations

from typing import Iterable, Mapping

import numpy as np

from refimpl.data import logical_values, read_strided, strided_buffer
from refimpl.errors import (DTypeError, InputDataError, ShapeError, StreamError, StrideError,
                            TensorIdError)
from refimpl.ir import OperationIr, StreamItem, Sync, TensorIr, TensorStatus
from refimpl.ops import OpKind
from refimpl.semantics import NUMPY_IMPL
from refimpl.stream import InputSpec, Stream
from refimpl.validate import tensor_fields

__all__ = ["EagerExecutor", "materialise_input", "init_targets", "run_stream"]


def materialise_input(spec: InputSpec, tensor_id: int | None = None) -> np.ndarray:
    """An input's logical values, written to its strided buffer and read back through it."""
    values = logical_values(spec, tensor_id)
    try:
        buffer = strided_buffer(values, spec.strides)
        return read_strided(buffer, spec.shape, spec.strides)
    except StrideError as exc:
        raise StrideError(exc.reason, field=f"inputs.{tensor_id}.strides") from None


def init_targets(stream: Stream) -> tuple[int, ...]:
    """Ids of the stream's inputs that an ``Init`` op creates (ascending)."""
    targets = {item.desc.out.id for item in stream.items
               if isinstance(item, OperationIr) and item.op.kind is OpKind.INIT}
    return tuple(sorted(targets & set(stream.inputs)))


def _frozen(values: np.ndarray) -> np.ndarray:
    owned = np.array(values, order="C")
    owned.setflags(write=False)
    return owned


def _input_fields(op: OperationIr) -> list[tuple[str, TensorIr]]:
    """(field path, snapshot) for every tensor the op reads: ``lhs``, ``tensors.1``, ..."""
    return [(path, tensor) for path, tensor in tensor_fields(op) if path != "out"]


def _located(exc: StreamError, index: int, op: OperationIr) -> StreamError:
    """The same error, now naming the op it happened in."""
    return type(exc)(exc.reason, op_index=index, field=exc.field, op_name=op.name)


class EagerExecutor:
    """A tensor store (id → logical values) that executes stream items one at a time."""

    def __init__(self) -> None:
        self._store: dict[int, np.ndarray] = {}
        self._inputs: dict[int, InputSpec] = {}
        self._synced: dict[int, np.ndarray] = {}
        self._position = 0

    # --- state ------------------------------------------------------------------------------

    @property
    def position(self) -> int:
        """The op index the next ``execute`` call is reported under."""
        return self._position

    @property
    def synced(self) -> dict[int, np.ndarray]:
        """Every tensor read back at a ``Sync`` so far (the last value per id)."""
        return dict(self._synced)

    def live_ids(self) -> tuple[int, ...]:
        """Ids currently held, ascending."""
        return tuple(sorted(self._store))

    def value(self, tensor_id: int) -> np.ndarray:
        """The current (read-only) values of a live tensor."""
        try:
            return self._store[tensor_id]
        except KeyError:
            raise TensorIdError(f"tensor {tensor_id} is not live") from None

    # --- loading and running ----------------------------------------------------------------

    def load_inputs(self, inputs: Mapping[int, InputSpec],
                    init_targets: Iterable[int] = ()) -> None:
        """Remember the inputs' specs and materialise them (ascending id).

        Inputs in ``init_targets`` are only remembered: an ``Init`` op creates them later
        (the liveness rule of ``refimpl.validate``).
        """
        deferred = frozenset(init_targets)
        for tensor_id in sorted(inputs):
            spec = inputs[tensor_id]
            self._inputs[tensor_id] = spec
            if tensor_id not in deferred:
                self._store[tensor_id] = _frozen(materialise_input(spec, tensor_id))

    def run_stream(self, stream: Stream) -> dict[int, np.ndarray]:
        """Load the inputs, execute every item; return the synced tensors by id."""
        self.load_inputs(stream.inputs, init_targets(stream))
        for item in stream.items:
            self.execute(item)
        return self.synced

    def execute(self, item: StreamItem) -> None:
        """Execute one ``OperationIr`` or ``Sync`` at op index ``position``."""
        with np.errstate(all="ignore"):
            if isinstance(item, Sync):
                self._sync(item, self._position)
            else:
                handler = _HANDLERS.get(item.op.kind, EagerExecutor._compute)
                handler(self, item, self._position)
        self._position += 1

    # --- item handlers ----------------------------------------------------------------------

    def _sync(self, item: Sync, index: int) -> None:
        for k, tensor_id in enumerate(item.tensors):
            if tensor_id not in self._store:
                raise TensorIdError(f"tensor {tensor_id} is not live at this sync",
                                    op_index=index, field=f"tensors.{k}", op_name="Sync")
            self._synced[tensor_id] = self._store[tensor_id]

    def _drop(self, op: OperationIr, index: int) -> None:
        tensor_id = op.desc.tensor.id
        if self._store.pop(tensor_id, None) is None:
            raise TensorIdError(f"tensor {tensor_id} is dropped but not live",
                                op_index=index, field="tensor", op_name=op.name)

    def _init(self, op: OperationIr, index: int) -> None:
        out = op.desc.out
        spec = self._inputs.get(out.id)
        if spec is None:
            raise InputDataError(f"Init of tensor {out.id}, but the inputs hold no data for it",
                                 op_index=index, field="out", op_name=op.name)
        self._store[out.id] = _frozen(self._checked_output(materialise_input(spec, out.id),
                                                           op, index))

    def _compute(self, op: OperationIr, index: int) -> None:
        reads = _input_fields(op)
        env = {tensor.id: self._read(tensor, field, op, index) for field, tensor in reads}
        out = op.desc.out
        if out.id in self._store:
            raise TensorIdError(f"output tensor {out.id} is already live",
                                op_index=index, field="out", op_name=op.name)
        try:
            result = NUMPY_IMPL[op.name](op.desc, env)
        except StreamError as exc:
            raise _located(exc, index, op) from None
        except (ValueError, IndexError) as exc:
            raise ShapeError(f"operands cannot be evaluated: {exc}", op_index=index,
                             field="out", op_name=op.name) from None
        result = self._checked_output(np.asarray(result), op, index)
        for _, tensor in reads:
            if tensor.status is TensorStatus.ReadWrite:
                self._store.pop(tensor.id, None)
        self._store[out.id] = _frozen(result)

    # --- checks -----------------------------------------------------------------------------

    def _read(self, tensor: TensorIr, field: str, op: OperationIr, index: int) -> np.ndarray:
        try:
            values = self._store[tensor.id]
        except KeyError:
            raise TensorIdError(f"tensor {tensor.id} is not live (never defined, dropped, or "
                                "consumed by a ReadWrite use)", op_index=index, field=field,
                                op_name=op.name) from None
        if values.shape != tuple(tensor.shape):
            raise ShapeError(f"snapshot says {list(tensor.shape)}, the tensor has "
                             f"{list(values.shape)}", op_index=index, field=f"{field}.shape",
                             op_name=op.name)
        if values.dtype != tensor.dtype.numpy:
            raise DTypeError(f"snapshot says {tensor.dtype.value}, the tensor holds "
                             f"{values.dtype}", op_index=index, field=f"{field}.dtype",
                             op_name=op.name)
        return values

    @staticmethod
    def _checked_output(result: np.ndarray, op: OperationIr, index: int) -> np.ndarray:
        out = op.desc.out
        if result.shape != tuple(out.shape):
            raise ShapeError(f"the op yields shape {list(result.shape)}, the snapshot says "
                             f"{list(out.shape)}", op_index=index, field="out.shape",
                             op_name=op.name)
        if result.dtype != out.dtype.numpy:
            raise DTypeError(f"the op yields {result.dtype}, the snapshot says "
                             f"{out.dtype.value}", op_index=index, field="out.dtype",
                             op_name=op.name)
        return result


_HANDLERS = {OpKind.INIT: EagerExecutor._init, OpKind.DROP: EagerExecutor._drop}


def run_stream(stream: Stream) -> dict[int, np.ndarray]:
    """Run a whole stream on a fresh executor; the synced tensors by id."""
    return EagerExecutor().run_stream(stream)
