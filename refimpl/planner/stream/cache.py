"""The plan cache: stored ``ExecutionPlan``s keyed by their relative op sequence, and the
``Policy`` that decides, op by op, whether to explore, wait, or execute a cached plan.

burn counterpart: ``crates/burn-fusion/src/stream/store/{base,index}.rs`` (``ExecutionPlan``,
``ExecutionTrigger``, ``ExecutionPlanStore``, ``ExecutionPlanIndex``) and
``crates/burn-fusion/src/stream/execution/{policy,validator}.rs`` (``Policy``, ``Action``,
``OperationsValidator``, ``TriggerValidator``); notes §7.4 and §9.4.

A plan is keyed by the exact relative ops it covers (ids by first appearance, shape ids with
size 1 → 0, scalar placeholders, statuses, dtypes). Its triggers say when, lazily, it may run:
``OnOperations(next ops)`` once those ops have followed it, ``Always`` as soon as it matches,
``OnSync`` only at a sync. The index maps a plan's first op to the plans starting with it.

Policy (per queued op, ``update``; then ``action``):

* a found plan (an available plan whose trigger matched, or ``Always``) that fits the queue →
  ``Execute``;
* lazily: ``Defer`` while a candidate is still matching, an available plan covers the whole
  queue, or an ``OnOperations`` trigger is still matching; otherwise ``Explore``;
* at a sync: ``Execute`` an available (then candidate) plan exactly as long as the queue,
  otherwise ``Explore``. A sync never defers.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import Sequence

from refimpl.ir import OperationIr
from refimpl.planner.search.strategy import BlockOptimization

__all__ = [
    "ExecutionMode",
    "ExecutionTrigger",
    "OnOperations",
    "OnSync",
    "Always",
    "ExecutionPlan",
    "ExecutionPlanStore",
    "Action",
    "Explore",
    "Defer",
    "Execute",
    "Policy",
]


class ExecutionMode(enum.Enum):
    """Lazy: called after every registered op. Sync: the queue must be drained."""

    Lazy = "Lazy"
    Sync = "Sync"


class ExecutionTrigger:
    """When a cached plan may run (burn ``ExecutionTrigger``)."""

    __slots__ = ()


@dataclass(frozen=True, slots=True)
class OnOperations(ExecutionTrigger):
    """Run once these relative ops have followed the plan's ops."""

    operations: tuple[OperationIr, ...]


@dataclass(frozen=True, slots=True)
class OnSync(ExecutionTrigger):
    """Run at a sync whose queue the plan covers exactly."""


@dataclass(frozen=True, slots=True)
class Always(ExecutionTrigger):
    """Run as soon as the plan's ops match (nothing could extend it)."""


@dataclass
class ExecutionPlan:
    """An exploration's outcome (burn ``ExecutionPlan``): the relative ops it covers, the
    triggers seen so far (each once, in order of discovery), and the optimization."""

    operations: tuple[OperationIr, ...]
    triggers: list[ExecutionTrigger]
    optimization: BlockOptimization


class ExecutionPlanStore:
    """Every plan found on a device, addressed by id = insertion order."""

    def __init__(self) -> None:
        self.plans: list[ExecutionPlan] = []
        self._starters: dict[OperationIr, list[int]] = {}

    def __len__(self) -> int:
        return len(self.plans)

    def find(self, first: OperationIr) -> list[int]:
        """Ids of the plans whose first op equals ``first``, oldest first."""
        return list(self._starters.get(first, ()))

    def add(self, plan: ExecutionPlan) -> int:
        """Store a plan (it must cover at least one op) and return its id."""
        if not plan.operations:
            raise ValueError("can't add an execution plan that covers no operation")
        plan_id = len(self.plans)
        self._starters.setdefault(plan.operations[0], []).append(plan_id)
        self.plans.append(plan)
        return plan_id

    def get(self, plan_id: int) -> ExecutionPlan:
        return self.plans[plan_id]

    def add_trigger(self, plan_id: int, trigger: ExecutionTrigger) -> None:
        """Record another trigger for a plan, unless it already has it."""
        triggers = self.plans[plan_id].triggers
        if trigger not in triggers:
            triggers.append(trigger)


# --- actions ---------------------------------------------------------------------------------


class Action:
    """What the policy advises (burn ``Action``)."""

    __slots__ = ()


@dataclass(frozen=True, slots=True)
class Explore(Action):
    """Run (or continue) the search."""


@dataclass(frozen=True, slots=True)
class Defer(Action):
    """A cached plan may still match: wait for more ops."""


@dataclass(frozen=True, slots=True)
class Execute(Action):
    """Run the cached plan ``plan_id``."""

    plan_id: int


# --- validators ------------------------------------------------------------------------------


class _State(enum.Enum):
    Validating = "Validating"
    Found = "Found"
    Invalidated = "Invalidated"


@dataclass
class _Validator:
    """Matches incoming ops one by one against a stored op list (burn
    ``OperationsValidator``)."""

    target: int  # a plan id, or a trigger index
    state: _State = _State.Validating
    size: int = 0

    def update(self, added: OperationIr, position: int, expected: Sequence[OperationIr]) -> None:
        if self.state is not _State.Validating:
            return
        if position >= len(expected) or expected[position] != added:
            self.state = _State.Invalidated
            return
        if len(expected) == position + 1:
            self.state = _State.Found
            self.size = len(expected)


@dataclass
class _TriggerCheck:
    """One trigger of an available plan being checked against the ops that follow it."""

    trigger: ExecutionTrigger
    matching: _Validator
    checked: int | None = None  # None: not started (the op that completed the plan)


@dataclass
class _Available:
    plan_id: int
    size: int
    triggers: list[_TriggerCheck] = field(default_factory=list)


class Policy:
    """Tracks which cached plans still match the queue (burn ``Policy``)."""

    def __init__(self) -> None:
        self.candidates: list[_Validator] = []
        self.availables: list[_Available] = []
        self.found: tuple[int, int] | None = None  # (plan id, its number of ops)
        self.num_operations = 0

    def reset(self) -> None:
        self.candidates = []
        self.availables = []
        self.found = None
        self.num_operations = 0

    def action(self, store: ExecutionPlanStore, operations: Sequence[OperationIr],
               mode: ExecutionMode) -> Action:
        """The advice for the queue ``operations`` (all of them already ``update``d)."""
        if self.num_operations < len(operations):
            raise RuntimeError("policy asked about more operations than it has seen")
        if self.found is not None and self.found[1] <= len(operations):
            return Execute(self.found[0])
        if mode is ExecutionMode.Lazy:
            return self._action_lazy(operations)
        return self._action_sync(store, operations)

    def update(self, store: ExecutionPlanStore, operation: OperationIr) -> None:
        """Take the next queued op into account."""
        if self.num_operations == 0:
            self.candidates = [_Validator(plan_id) for plan_id in store.find(operation)]
        for candidate in self.candidates:
            candidate.update(operation, self.num_operations,
                             store.get(candidate.target).operations)
        self._check_candidates(store)
        self._update_availables(store, operation)
        self._check_availables()
        self.num_operations += 1

    def _check_candidates(self, store: ExecutionPlanStore) -> None:
        """Fully matched candidates become available plans; failed ones are dropped."""
        remaining: list[_Validator] = []
        for candidate in self.candidates:
            if candidate.state is _State.Found:
                plan = store.get(candidate.target)
                checks = [_TriggerCheck(trigger, _Validator(index))
                          for index, trigger in enumerate(plan.triggers)]
                self.availables.append(_Available(candidate.target, candidate.size, checks))
            elif candidate.state is _State.Validating:
                remaining.append(candidate)
        self.candidates = remaining

    def _update_availables(self, store: ExecutionPlanStore, operation: OperationIr) -> None:
        for available in self.availables:
            for check in available.triggers:
                if not isinstance(check.trigger, OnOperations):
                    continue
                if check.checked is None:
                    check.checked = 0
                    continue
                check.matching.update(operation, check.checked, check.trigger.operations)
                check.checked += 1

    def _check_availables(self) -> None:
        for available in self.availables:
            for check in available.triggers:
                fired = isinstance(check.trigger, Always) or (
                    isinstance(check.trigger, OnOperations)
                    and check.matching.state is _State.Found)
                if fired:
                    self.found = (available.plan_id, available.size)
                    return

    def _action_lazy(self, operations: Sequence[OperationIr]) -> Action:
        if self.candidates:
            return Defer()
        for available in self.availables:
            if available.size == len(operations):
                return Defer()
            for check in available.triggers:
                if isinstance(check.trigger, OnOperations) and \
                        check.matching.state is _State.Validating:
                    return Defer()
        return Explore()

    def _action_sync(self, store: ExecutionPlanStore,
                     operations: Sequence[OperationIr]) -> Action:
        for available in self.availables:
            if available.size == len(operations):
                return Execute(available.plan_id)
        for candidate in self.candidates:
            if len(store.get(candidate.target).operations) == len(operations):
                return Execute(candidate.target)
        return Explore()
