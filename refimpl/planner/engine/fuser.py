"""The fuser abstraction the search drives: ``OperationFuser``, ``FuserStatus``,
``FuserProperties``, and the ``Optimization`` a fuser finishes into.

burn counterpart: ``crates/burn-fusion/src/backend.rs`` (``OperationFuser``, ``FuserStatus``,
``FuserProperties``, ``NumOperations``).

A fuser is a prefix acceptor: it is fed the ops of one block in order, accepts a prefix and
closes on its first refusal. The search (``refimpl.planner.search.search``) only ever talks to
fusers through this protocol, so burn's mock-fuser tests (notes §10.2) run against it unchanged.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Protocol

from refimpl.ir import OperationIr

__all__ = ["FuserStatus", "FuserProperties", "Optimization", "OperationFuser"]


class FuserStatus(enum.Enum):
    """Whether a fuser can still accept ops (burn ``FuserStatus``)."""

    Closed = "Closed"
    Open = "Open"


@dataclass(frozen=True, slots=True)
class FuserProperties:
    """What the search needs to choose (burn ``FuserProperties``): higher score is better; a
    fuser that is not ``ready`` cannot be executed yet."""

    score: int = 0
    ready: bool = False


class Optimization(Protocol):
    """What ``OperationFuser.finish`` returns (burn ``NumOperations`` + ``Optimization``):
    it covers the first ``len()`` ops of its block, and is named after the fuser that made it."""

    def len(self) -> int: ...

    @property
    def name(self) -> str: ...


class OperationFuser(Protocol):
    """burn ``OperationFuser<O>``. ``len()`` counts every accepted op, drops and views
    included; once closed, further ops are ignored and ``len()`` is frozen."""

    @property
    def name(self) -> str: ...

    def fuse(self, operation: OperationIr) -> None: ...

    def finish(self) -> Optimization: ...

    def reset(self) -> None: ...

    def status(self) -> FuserStatus: ...

    def properties(self) -> FuserProperties: ...

    def len(self) -> int: ...

    def clone(self) -> OperationFuser: ...
