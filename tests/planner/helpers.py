"""Shared helpers of the planner tests (burn's own test doubles are in ``burn_mocks.py``, the
fusers' op builders in ``fuser_ops.py``)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class ShapeIdOptimization:
    """An optimization naming relative shape id ``shape_id`` (burn #5400 guard)."""

    shape_id: int
    name: str = "Probe"

    def len(self) -> int:
        return 1

    def max_relative_shape_id(self) -> int:
        return self.shape_id

    def global_inputs(self):
        return ()

    def global_outputs(self):
        return ()

    def block_op_names(self):
        return ()
