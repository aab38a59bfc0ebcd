"""The op stream: inputs that exist before it, then ``OperationIr``s and ``Sync`` points.

burn counterpart: the operation queue a ``burn-fusion`` stream accumulates
(``crates/burn-fusion/src/stream/queue``); the JSON form (format version 1, SPEC §2) is
fuselab's own and is documented in ``docs/stream-format.md``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from refimpl.dtypes import DType
from refimpl.ir import OperationIr, StreamItem, Sync

__all__ = ["InputSpec", "Stream", "FORMAT_VERSION"]

FORMAT_VERSION = 1


@dataclass(frozen=True, slots=True)
class InputSpec:
    """A tensor that exists before the stream starts.

    Its logical values come from ``data`` (nested lists in the tensor's shape, kept as given)
    or from ``random`` (a seed for the documented generator, ``refimpl.stream.random_values``).
    ``strides`` (in elements) say how its buffer lays those values out; ``None`` means
    contiguous row-major.
    """

    shape: tuple[int, ...]
    dtype: DType
    strides: tuple[int, ...] | None = None
    data: Any = field(default=None, compare=True)
    random: int | None = None


@dataclass(frozen=True, slots=True)
class Stream:
    """A whole stream: ``inputs`` by tensor id, then ``items`` in order."""

    inputs: dict[int, InputSpec]
    items: tuple[StreamItem, ...]

    # Positions in ``items`` are the op indices everywhere (plans, errors): a ``Sync`` takes a
    # position like any op, exactly as in the JSON ``ops`` list.

    @property
    def ops(self) -> tuple[OperationIr, ...]:
        """The operations, syncs left out."""
        return tuple(item for item in self.items if isinstance(item, OperationIr))

    def syncs(self) -> tuple[Sync, ...]:
        return tuple(item for item in self.items if isinstance(item, Sync))

