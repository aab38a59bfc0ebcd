# cython: language_level=3
"""The planner for a runtime: add ops one by one as they are produced, get the plan steps
each addition made run.

burn counterpart: one stream of ``burn-fusion``'s ``MultiStream`` as a backend drives it
(``crates/burn-fusion/src/stream/multi.rs``, ``register`` and drain at a read).
Mirrors ``refimpl/planner/stream/incremental.py``: same names, same steps. It drives
fastplan's ``StreamPlanner`` (``fastplan.stream.processor``) with fastplan's fusers, through
their public API only; streams outside fastplan's boundary (``BoundaryError``) are the
caller's to avoid: ``add`` takes the typed form the stream loader builds.
"""

from fastplan.fusers.registry import FusionRegistry
from fastplan.stream.processor import StreamPlanner

from refimpl.devices import resolve_device
from refimpl.ir import Sync
from refimpl.planner.log import FusionLog

__all__ = ["IncrementalPlanner"]

cdef object _Sync = Sync


cdef class IncrementalPlanner:
    """Plans one stream op by op for a runtime (see the module docstring).

    Mirrors refimpl.planner.stream.incremental.IncrementalPlanner."""
    cdef public object profile
    cdef public object planner
    cdef public Py_ssize_t index
    cdef object _queue

    def __init__(self, device="metal", registry=None, log=None):
        profile = resolve_device(device)
        fusers = (registry if registry is not None else FusionRegistry()).fusers(profile)
        self.profile = profile
        self.planner = StreamPlanner(fusers, log=log if log is not None else FusionLog.from_env())
        self._queue = self.planner.queue
        self.index = 0

    @property
    def num_explorations(self):
        return self.planner.num_explorations

    @property
    def num_cache_hits(self):
        return self.planner.num_cache_hits

    def add(self, item):
        """Queue one op (or read at a ``Sync``); the steps it made run, in order."""
        if type(item) is _Sync or isinstance(item, _Sync):
            self.planner.sync(item.tensors)
        else:
            self.planner.register(self.index, item)
        self.index += 1
        return self._executed()

    def flush(self):
        """Run everything pending (a device sync); the steps, in order."""
        self.planner.drain()
        return self._executed()

    def end_iteration(self):
        """``flush``, then count the next items from 0 again (the next iteration)."""
        steps = self.flush()
        self.index = 0
        return steps

    cdef tuple _executed(self):
        """The steps executed since the last call; the planner forgets them."""
        steps = self._queue.steps
        if not steps:
            return ()
        found = tuple(steps)
        self.planner.forget_steps()
        return found
