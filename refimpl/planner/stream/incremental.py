"""The planner for a runtime: add ops one by one as they are produced, get the plan steps
each addition made run.

burn counterpart: one stream of ``burn-fusion``'s ``MultiStream`` as a backend drives it
(``crates/burn-fusion/src/stream/multi.rs``: ``register`` queues an op on the
``OperationQueue`` and lets the ``Processor`` run what is ready; a read drains). burn executes
the steps itself; here they are handed back to the runtime, which launches them.

``IncrementalPlanner(device)`` wraps a ``StreamPlanner`` (its plan cache and processor live as
long as it does)::

    planner = IncrementalPlanner("metal")
    for item in items_of_one_iteration:        # OperationIr or Sync, as a runtime makes them
        for step in planner.add(item):         # often (): the queue waits for more ops
            launch(step)                       # step.ops: positions in this iteration
    for step in planner.end_iteration():       # drain, then number the next one from 0
        launch(step)

``add`` returns the steps executed because of that item, in order: a block the processor
closed (a full block, an op no fuser takes, a cached plan's trigger), or everything pending
at a ``Sync`` that reads a tensor a pending op produces (or lists none). Step op indices are
item positions counted since the last ``end_iteration``. A repeated iteration (the same ops,
other tensor ids) is served from the plan cache: ``num_cache_hits`` grows and
``num_explorations`` does not. The steps carry no launch plan (aliases, widths): those are
``plan``'s, on a whole stream. Concatenated over a stream, the steps ``add`` and
``end_iteration`` return are ``StreamPlanner.run``'s.
"""

from __future__ import annotations

from typing import Any

from refimpl.devices import resolve_device
from refimpl.ir import Sync
from refimpl.planner.log import FusionLog
from refimpl.planner.stream.plan import PlanStep
from refimpl.planner.stream.processor import StreamPlanner

__all__ = ["IncrementalPlanner"]


class IncrementalPlanner:
    """Plans one stream op by op for a runtime (see the module docstring)."""

    def __init__(self, device: Any = "metal", registry: Any = None,
                 log: FusionLog | None = None):
        from refimpl.planner.fusers.registry import FusionRegistry

        profile = resolve_device(device)
        fusers = (registry if registry is not None else FusionRegistry()).fusers(profile)
        self.profile = profile
        self.planner = StreamPlanner(fusers, log=log if log is not None else FusionLog.from_env())
        self.index = 0  # the position of the next item in this iteration

    @property
    def num_explorations(self) -> int:
        return self.planner.num_explorations

    @property
    def num_cache_hits(self) -> int:
        return self.planner.num_cache_hits

    def add(self, item: Any) -> tuple[PlanStep, ...]:
        """Queue one op (or read at a ``Sync``); the steps it made run, in order."""
        if isinstance(item, Sync):
            self.planner.sync(item.tensors)
        else:
            self.planner.register(self.index, item)
        self.index += 1
        return self._executed()

    def flush(self) -> tuple[PlanStep, ...]:
        """Run everything pending (a device sync); the steps, in order."""
        self.planner.drain()
        return self._executed()

    def end_iteration(self) -> tuple[PlanStep, ...]:
        """``flush``, then count the next items from 0 again (the next iteration)."""
        steps = self.flush()
        self.index = 0
        return steps

    def _executed(self) -> tuple[PlanStep, ...]:
        """The steps executed since the last call; the planner forgets them."""
        steps = self.planner.queue.steps
        if not steps:
            return ()
        found = tuple(steps)
        self.planner.forget_steps()
        return found
