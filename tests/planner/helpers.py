"""Shared helpers of the planner tests (burn's own test doubles are in ``burn_mocks.py``, the
fusers' op builders in ``fuser_ops.py``)."""

from __future__ import annotations

from dataclasses import dataclass

from refimpl.devices import profile_named
from refimpl.planner import StreamPlanner as RefStreamPlanner
from refimpl.planner.stream import cache as reference_cache
from refimpl.planner.stream.cache import ExecutionPlan
from refimpl.planner.fusers.registry import FusionRegistry as RefFusionRegistry
from refimpl.planner.search.strategy import BlockOptimization, Operations
from tests.planner.burn_mocks import add
from tests.planner.fuser_ops import NI, RO, RW, op, t


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


# --- workloads -------------------------------------------------------------------------------

# burn's reduce_broadcast workflows and variants: reductions chained with the element-wise
# ops that broadcast their results back (shapes are relative ids)
WORKFLOWS = [
    [
        op("BaseFloat.Ones", out=t(0, (1, 2), NI)),
        op("NumericFloat.SumDim", input=t(0, (1, 2), RW), out=t(1, (1, 0), NI), axis=1),
        op("NumericFloat.Add", lhs=t(1, (1, 0), RW), rhs=t(2, (1, 0), RW), out=t(3, (1, 0), NI)),
        op("NumericFloat.Add", lhs=t(3, (1, 0), RW), rhs=t(4, (1, 2), RW), out=t(5, (1, 2), NI)),
        op("NumericFloat.SumDim", input=t(5, (1, 2), RW), out=t(6, (1, 0), NI), axis=1),
        op("NumericFloat.Add", lhs=t(6, (1, 0), RW), rhs=t(7, (1, 2), RO), out=t(8, (1, 2), NI)),
        op("Float.Exp", input=t(8, (1, 2), RW), out=t(9, (1, 2), NI)),
    ],
    [
        op("BaseFloat.Ones", out=t(0, (1, 2), NI)),
        op("NumericFloat.Add", lhs=t(0, (1, 2), RO), rhs=t(2, (1, 2), RO), out=t(3, (1, 2), NI)),
        op("NumericFloat.SumDim", input=t(3, (1, 2), RO), out=t(1, (1, 0), NI), axis=1),
        op("NumericFloat.Sub", lhs=t(3, (1, 2), RW), rhs=t(1, (1, 0), RO), out=t(4, (1, 2), NI)),
        op("Float.Exp", input=t(4, (1, 2), RW), out=t(5, (1, 2), NI)),
        op("NumericFloat.SumDim", input=t(5, (1, 2), RO), out=t(6, (1, 0), NI), axis=1),
        op("NumericFloat.Div", lhs=t(5, (1, 2), RW), rhs=t(6, (1, 0), RW), out=t(7, (1, 2), NI)),
        op("NumericFloat.Add", lhs=t(1, (1, 0), RW), rhs=t(0, (1, 2), RW), out=t(8, (1, 2), NI)),
    ],
]


# Mock ops of the search tests (tests.planner.burn_mocks.add): A1 then A2 fuse, and so do
# B1 then B2; C1 stands alone.
A1 = add(10, 11, 12)
A2 = add(12, 13, 14)
B1 = add(20, 21, 22)
B2 = add(22, 23, 24)
C1 = add(30, 31, 32)


# --- stream planners -------------------------------------------------------------------------


def planners(impl) -> tuple:
    """``impl``'s and refimpl's ``StreamPlanner`` for the metal profile."""
    profile = profile_named("metal")
    return (impl.stream.processor.StreamPlanner(impl.fusers.registry.FusionRegistry().fusers(profile)),
            RefStreamPlanner(RefFusionRegistry().fusers(profile)))


# --- the plan-cache policy ---------------------------------------------------------------------

# refimpl's policy states as the ints fastplan's policy reports
_STATES = {reference_cache._State.Validating: 0, reference_cache._State.Found: 1,
           reference_cache._State.Invalidated: 2}


def execution_plan(ops, triggers) -> ExecutionPlan:
    """A stored plan of ``ops`` (executed unfused, in order) with ``triggers``."""
    ordering = tuple(range(len(ops)))
    return ExecutionPlan(tuple(ops), list(triggers),
                         BlockOptimization(Operations(ordering), ordering))


def policy_state(state) -> int:
    """A policy state, refimpl's or fastplan's, as fastplan's int."""
    return _STATES[state] if isinstance(state, reference_cache._State) else state


def availables(policy) -> list:
    """Each available plan: id, size, and where each of its trigger checks stands."""
    return [(available.plan_id, available.size,
             [(check.checked if check.checked is not None else -1,
               check.matching.target, policy_state(check.matching.state), check.matching.size)
              for check in available.triggers])
            for available in policy.availables]
