"""fuselab's error classes: every rejection of bad input is one of these.

burn counterpart: none (burn panics on malformed IR; SPEC §8 asks for typed errors instead).

Every error raised about a stream names *where*: the op index (``None`` for the ``inputs``
table or the document itself) and the field (``"lhs.shape"``, ``"inputs.3.strides"``, ...).
refimpl and fastplan raise the same class for the same stream; tests compare classes, and
messages are for people.
"""

from __future__ import annotations

__all__ = [
    "FuselabError",
    "StreamError",
    "StreamFormatError",
    "UnknownOpError",
    "MissingFieldError",
    "FieldTypeError",
    "TensorIdError",
    "StatusError",
    "ShapeError",
    "DTypeError",
    "AxisError",
    "StrideError",
    "InputDataError",
    "RegistryError",
    "DuplicateOptimization",
    "ServiceRunning",
    "MemoryLimitError",
    "ResultsFileError",
]


class FuselabError(Exception):
    """Base class of every error fuselab raises on purpose."""


class StreamError(FuselabError, ValueError):
    """A stream (JSON or Python) is not valid.

    ``op_index`` is the position in ``ops`` (``None`` when the problem is in ``inputs`` or in
    the document as a whole) and ``field`` the operand field or JSON key at fault.
    """

    def __init__(self, message: str, *, op_index: int | None = None, field: str | None = None,
                 op_name: str | None = None):
        self.op_index = op_index
        self.field = field
        self.op_name = op_name
        self.reason = message
        super().__init__(self._render())

    def _render(self) -> str:
        where = []
        if self.op_index is not None:
            where.append(f"op {self.op_index}")
            if self.op_name:
                where[-1] += f" ({self.op_name})"
        if self.field:
            where.append(f"field {self.field!r}")
        prefix = ", ".join(where)
        return f"{prefix}: {self.reason}" if prefix else self.reason


class StreamFormatError(StreamError):
    """Not a stream document at all: bad JSON, wrong version, wrong top-level types."""


class UnknownOpError(StreamError):
    """``"op"`` names no entry of the op table."""


class MissingFieldError(StreamError):
    """A field the op's operand struct needs is absent (or an unknown one is present)."""


class FieldTypeError(StreamError):
    """A field holds the wrong kind of JSON value (a string where a tensor is expected, ...)."""


class TensorIdError(StreamError):
    """A tensor id is unknown, already dropped or consumed, or defined twice."""


class StatusError(StreamError):
    """A status is impossible here (an output not ``NotInit``, a use after ``ReadWrite``, ...)."""


class ShapeError(StreamError):
    """A shape disagrees with the op's rule or with the tensor's earlier snapshot, or a
    dimension is negative or absurdly large."""


class DTypeError(StreamError):
    """A dtype is unknown or disagrees with the op's rule."""


class AxisError(StreamError):
    """An axis / dim attribute is out of range for the tensor's rank."""


class StrideError(StreamError):
    """Input strides are malformed or make two elements share memory."""


class InputDataError(StreamError):
    """An input's ``data`` / ``random`` does not describe its shape and dtype."""


class RegistryError(FuselabError):
    """The fuser registry refused a change (burn ``RegistryError``)."""


class DuplicateOptimization(RegistryError):
    """A fuser with this name is already registered."""


class ServiceRunning(RegistryError):
    """The registry is sealed: the first op was registered."""


class MemoryLimitError(FuselabError, MemoryError):
    """A run would hold more bytes than the machine has available (checked before it starts,
    ``refimpl.footprint``): ``op_index`` (``None`` for the inputs table) and ``tensor`` name
    the allocation that crosses the limit, ``nbytes`` its size."""

    def __init__(self, message: str, *, op_index: int | None, tensor: int, nbytes: int,
                 available: int):
        self.op_index = op_index
        self.tensor = tensor
        self.nbytes = nbytes
        self.available = available
        super().__init__(message)


class ResultsFileError(FuselabError):
    """A results file (``fuselab run --out``) is not an ``.npz`` of arrays ``t<id>``."""
