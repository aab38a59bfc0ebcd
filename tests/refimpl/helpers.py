"""Shared helpers of the refimpl tests: reading what a frontend session recorded."""

from __future__ import annotations

from refimpl.frontend import Session
from refimpl.ir import OperationIr, TensorStatus


def recorded_ops(s: Session) -> list[OperationIr]:
    """The session's ops so far (``Sync`` items left out)."""
    return [item for item in s.stream.items if isinstance(item, OperationIr)]


def input_uses(item: OperationIr) -> list[tuple[int, TensorStatus]]:
    """(id, status) of every tensor the op reads."""
    return [(t.id, t.status) for t in item.inputs()]


def item_names(s: Session) -> list[str]:
    """The name of every item so far, ``"Sync"`` for syncs."""
    return [item.name if isinstance(item, OperationIr) else "Sync" for item in s.stream.items]
