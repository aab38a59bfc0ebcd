"""The lazy driver: after every registered op (and at every sync) decide whether to explore,
wait, or execute — and cache what the exploration found.

burn counterpart: ``crates/burn-fusion/src/stream/execution/{processor,explorer}.rs``
(``Processor``, ``StreamSegment``, ``Explorer``, ``ExplorationAction``); notes §9.4.

``Processor.process(segment, store, mode)``:

* Lazy (called once per newly queued op): update the policy with it, then loop: ``Explore``
  registers the deferred ops into the ``StreamOptimizer``; while some fuser of some block is
  still open nothing runs; once none is (or the block cap stopped the optimizer) the search
  result covers a prefix of the queue, is stored with trigger ``OnOperations(rest)`` (or
  ``Always`` when nothing is left), and executed. ``Execute`` runs a cached plan. ``Defer``
  returns.
* Sync (drain): the same loop, but exploration always completes; the drained tail is folded
  in as unfused ops (``include_trailing``) and the plan is stored with ``OnSync``.

After each execution the segment re-relativises its remaining ops and the policy and
explorer restart from them.

Counters: ``num_explorations`` (searches run), ``num_cache_hits`` (cached plans executed
through the policy without a new search).

``StreamPlanner.run(stream)`` (burn ``MultiStream::register`` / ``drain`` for one stream) feeds
the items one by one exactly as burn's lazy queue sees them: each op is queued (global and
relative form) and processed lazily. A ``Sync`` drains the queue (Sync mode) when it reads a
tensor some pending op still has to produce, or when it lists no tensor (``Backend::sync``);
reading an already materialised tensor does not drain (burn ``ReadPlan::Direct``). The end of
the stream drains too. The plan cache (``ExecutionPlanStore``) and the processor persist
across ``run`` calls, so a repeated iteration is served from the cache.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from refimpl.devices import resolve_device
from refimpl.ir import OperationIr, Sync
from refimpl.planner.engine.fuser import OperationFuser
from refimpl.planner.launch.execute import launch_plan_stream
from refimpl.planner.log import (
    NO_LOG,
    FusionLog,
    LogLevel,
    log_cached_plan,
    log_capped,
    log_left_at_sync,
    remember_plan,
)
from refimpl.planner.search.search import MAX_BLOCKS, StreamOptimizer
from refimpl.planner.search.strategy import BlockOptimization, Operations, include_trailing
from refimpl.planner.stream.cache import (
    Always,
    Defer,
    Execute,
    ExecutionMode,
    ExecutionPlan,
    ExecutionPlanStore,
    Explore,
    OnOperations,
    OnSync,
    Policy,
)
from refimpl.planner.stream.plan import PlanStep
from refimpl.planner.stream.queue import OperationQueue
from refimpl.stream import Stream

__all__ = ["StreamSegment", "Explorer", "Exploration", "Processor", "StreamPlanner"]


class StreamSegment(Protocol):
    """A queue the processor can read and partially execute (burn ``StreamSegment``)."""

    def operations(self) -> Sequence[OperationIr]:
        """The queued ops in relative form."""

    def execute(self, plan_id: int, store: ExecutionPlanStore) -> None:
        """Run the leading ops covered by a stored plan, then re-relativise the rest."""

    def execute_unfused(self, optimization: BlockOptimization) -> None:
        """Run the leading ops with a one-off strategy (not stored)."""


@dataclass(frozen=True, slots=True)
class Exploration:
    """What ``Explorer.explore`` concluded: ``kind`` is ``"Completed"`` (cache and run
    ``optimization``), ``"Continue"`` (wait for more ops) or ``"Unfused"`` (exploration cap
    reached: run ``optimization`` without caching)."""

    kind: str
    optimization: BlockOptimization | None = None


class Explorer:
    """Feeds deferred ops to the ``StreamOptimizer`` (burn ``Explorer``)."""

    def __init__(self, fusers: Sequence[OperationFuser], max_blocks: int | None = MAX_BLOCKS,
                 max_explorations: int | None = None, log: FusionLog = NO_LOG):
        self.optimizer = StreamOptimizer(fusers, max_blocks, log)
        self.num_deferred = 0
        self.num_explored = 0
        self.is_still_optimizing = True
        self.num_explorations = 0
        self.max_explorations = max_explorations
        self.log = log

    def on_new_operation(self) -> None:
        self.num_deferred += 1

    def is_up_to_date(self) -> bool:
        return self.num_deferred == 0

    def reset(self, operations: Sequence[OperationIr]) -> None:
        """Start over on the remaining ``operations`` (all deferred)."""
        self.optimizer.reset()
        self.num_explored = 0
        self.num_deferred = len(operations)
        self.is_still_optimizing = True

    def explore(self, operations: Sequence[OperationIr], mode: ExecutionMode) -> Exploration:
        """Register what was deferred; conclude if nothing can improve or at a sync."""
        if self.max_explorations is not None and self.num_explorations >= self.max_explorations:
            self.num_deferred = 0
            self.is_still_optimizing = False
            ordering = tuple(range(len(operations)))
            log_capped(self.log, operations, self.max_explorations)
            return Exploration("Unfused", BlockOptimization(Operations(ordering), ordering))
        self._update(operations)
        if mode is ExecutionMode.Lazy and self.is_still_optimizing:
            return Exploration("Continue")
        optimization = self.optimizer.optimize(operations)
        self.num_explorations += 1
        if mode is ExecutionMode.Sync:
            log_left_at_sync(self.log, operations, len(optimization.ordering),
                             self.optimizer.length, self.optimizer.stopped)
            optimization = include_trailing(optimization, len(operations))
        return Exploration("Completed", optimization)

    def _update(self, operations: Sequence[OperationIr]) -> None:
        """Register the deferred ops (the last ``num_deferred``) until the optimizer stops
        optimizing; the rest stay unregistered."""
        for back in range(self.num_deferred - 1, -1, -1):
            if not self.is_still_optimizing:
                break
            self.optimizer.register(operations[len(operations) - 1 - back])
            self.num_explored += 1
            self.is_still_optimizing = self.optimizer.still_optimizing()
        self.num_deferred = 0


class Processor:
    """Policy + explorer over one stream (burn ``Processor``)."""

    def __init__(self, fusers: Sequence[OperationFuser], max_blocks: int | None = MAX_BLOCKS,
                 max_explorations: int | None = None, log: FusionLog = NO_LOG):
        self.policy = Policy()
        self.explorer = Explorer(fusers, max_blocks, max_explorations, log)
        self.num_cache_hits = 0
        self.log = log

    @property
    def num_explorations(self) -> int:
        return self.explorer.num_explorations

    def process(self, segment: StreamSegment, store: ExecutionPlanStore,
                mode: ExecutionMode) -> None:
        """React to a newly queued op (Lazy) or drain the queue (Sync)."""
        if mode is ExecutionMode.Lazy:
            self.policy.update(store, segment.operations()[-1])
            self.explorer.on_new_operation()
        while segment.operations():
            action = self.policy.action(store, segment.operations(), mode)
            if isinstance(action, Explore):
                self._explore(segment, store, mode)
                if self.explorer.is_up_to_date():
                    break
            elif isinstance(action, Defer):
                if mode is ExecutionMode.Sync:
                    raise RuntimeError("the policy deferred during a sync")
                break
            else:
                self._execute_cached(segment, store, mode, action)

    def _execute_cached(self, segment: StreamSegment, store: ExecutionPlanStore,
                        mode: ExecutionMode, action: Execute) -> None:
        self.num_cache_hits += 1
        if self.log.enabled(LogLevel.FULL):
            self.log.write(f"[plan] cache hit: execute plan #{action.plan_id} ({mode.value}, "
                           f"segment has {len(segment.operations())} ops)")
        log_cached_plan(self.log, action.plan_id)
        if mode is ExecutionMode.Sync:
            store.add_trigger(action.plan_id, OnSync())
        segment.execute(action.plan_id, store)
        self._reset(store, segment.operations())

    def _explore(self, segment: StreamSegment, store: ExecutionPlanStore,
                 mode: ExecutionMode) -> None:
        found = self.explorer.explore(segment.operations(), mode)
        if found.kind == "Continue":
            if mode is ExecutionMode.Sync:
                raise RuntimeError("exploration can't continue during a sync")
            return
        if found.kind == "Unfused":
            segment.execute_unfused(found.optimization)
        else:
            plan_id = self._store(segment.operations(), store, found.optimization, mode)
            remember_plan(self.log, plan_id, found.optimization, segment.operations())
            segment.execute(plan_id, store)
        self._reset(store, segment.operations())

    def _reset(self, store: ExecutionPlanStore, operations: Sequence[OperationIr]) -> None:
        self.explorer.reset(operations)
        self.policy.reset()
        for operation in operations:
            self.policy.update(store, operation)

    def _store(self, operations: Sequence[OperationIr], store: ExecutionPlanStore,
               optimization: BlockOptimization, mode: ExecutionMode) -> int:
        """Cache a completed exploration (or add a trigger to an identical cached plan)."""
        covered = len(optimization.ordering)
        relative = tuple(operations[:covered])
        if self.log.enabled(LogLevel.FULL):
            self.log.write(f"[plan] exploration completed: {mode.value}, "
                           f"{covered}/{len(operations)} ops optimized")
        if mode is ExecutionMode.Lazy:
            rest = tuple(operations[covered:])
            trigger = OnOperations(rest) if rest else Always()
        else:
            trigger = OnSync()
        existing = self.policy.action(store, relative, ExecutionMode.Sync)
        if isinstance(existing, Execute):
            store.add_trigger(existing.plan_id, trigger)
            return existing.plan_id
        return store.add(ExecutionPlan(relative, [trigger], optimization))


class StreamPlanner:
    """Plans streams op by op, like burn's fusion stream, keeping its plan cache."""

    def __init__(self, fusers: Sequence[OperationFuser], *, max_blocks: int | None = MAX_BLOCKS,
                 max_explorations: int | None = None, log: FusionLog = NO_LOG):
        self.store = ExecutionPlanStore()
        self.queue = OperationQueue(log)
        # the search numbers ops by queue position: its log prints each as its stream index
        self.processor = Processor(fusers, max_blocks, max_explorations,
                                   log.at(self.queue.indices))

    @property
    def num_explorations(self) -> int:
        return self.processor.num_explorations

    @property
    def num_cache_hits(self) -> int:
        return self.processor.num_cache_hits

    def register(self, index: int, operation: OperationIr) -> None:
        """Queue one op and let the processor react lazily."""
        self.queue.add(index, operation)
        self.processor.process(self.queue, self.store, ExecutionMode.Lazy)

    def sync(self, tensors: Sequence[int] = ()) -> None:
        """A read of ``tensors`` (all pending ops if empty): drain when it needs a pending
        op's result."""
        if not tensors or self.queue.produces_pending(tensors):
            self.drain()

    def drain(self) -> None:
        """Execute everything pending (Sync mode)."""
        self.processor.process(self.queue, self.store, ExecutionMode.Sync)

    def forget_steps(self) -> None:
        """Drop the executed steps the queue keeps (``OperationQueue.forget_steps``).

        A runtime that plans iteration after iteration calls it once it has launch-planned
        each iteration's steps, so that the planner keeps its pending ops and its plan cache
        only. Without it every executed step stays, with its context."""
        self.queue.forget_steps()

    def run(self, stream: Stream) -> list[PlanStep]:
        """Plan one pass over ``stream``; the steps it executed, in order."""
        start = len(self.queue.steps)
        for index, item in enumerate(stream.items):
            if isinstance(item, Sync):
                self.sync(item.tensors)
            else:
                self.register(index, item)
        self.drain()
        return self.queue.steps[start:]

    def launch_planned(self, stream: Stream, start: int = 0, device: Any = "metal",
                       memo: Any = None) -> tuple[PlanStep, ...]:
        """The steps executed from ``start`` on, launch-planned: ``aliases`` per step and
        ``width`` per block, as ``plan`` fills them.

        ``stream`` is the pass the steps came from (its inputs and the ops the step indices
        name); ``device`` a profile or its name. ``memo`` is what a runtime keeps beside its
        planner across iterations: refimpl keeps none and plans every step again (fastplan's
        twin takes a ``LaunchMemo``). A runtime's loop is ``run`` (or ``register`` / ``sync``),
        ``launch_planned`` from the step count before it, then ``forget_steps``."""
        if start < 0:
            raise ValueError(f"no executed step at {start}")
        return launch_plan_stream(stream, self.queue.executed[start:], resolve_device(device))
