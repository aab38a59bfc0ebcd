# cython: language_level=3
"""The lazy driver: after every registered op (and at every sync) decide whether to explore,
wait, or execute, and cache what the exploration found.

burn counterpart: ``crates/burn-fusion/src/stream/execution/{processor,explorer}.rs``
(``Processor``, ``StreamSegment``, ``Explorer``, ``ExplorationAction``); notes §9.4.
Mirrors ``refimpl/planner/stream/processor.py``: same names, same order, same results.

Differs from refimpl:

* the policy is fed op keys (``fastplan._keys``). On fastplan's own ``OperationQueue`` the
  keys come from the queue, relative ops are built only for what the search registers and what
  a stored plan records, and the search sees the queue through ``_QueueOps`` (each relative
  op built on first access); any other ``StreamSegment`` is read as refimpl reads it;
* ``StreamPlanner`` queues an op and updates the policy in one call
  (``OperationQueue.add_op_updating``), then advises without updating it again
  (``Processor.process_added``); an execution resets the policy inside the drain
  (``OperationQueue.execute_plan_updating``), and only the explorer after it;
* ``StreamPlanner.run`` prefetches the next items and keeps what it learnt of them in a ring
  (``fastplan._keys.ReadAhead``), from which the queue encodes each item (``add_op_coded``);
* ``StreamPlanner`` keeps the int of each stream position it reached (``_positions``) and
  queues ops with it; it holds none of the caller's objects.

``StreamSegment`` (a ``Protocol``) and ``Exploration`` are refimpl's classes.
``StreamPlanner`` is the entry point for a runtime that registers ops one by one:
``register(index, op)``, ``sync(tensors)``, ``drain()``; the steps it executed accumulate in
``queue.steps`` (``run(stream)`` returns the new ones).
"""

import gc as _gc

from cpython.ref cimport Py_INCREF, PyObject
from cpython.tuple cimport PyTuple_New, PyTuple_SET_ITEM

from fastplan._keys cimport (
    AHEAD_RING, ReadAhead, _list_item, list_push, prefetch_ahead, relative_key,
)
from fastplan.search.search cimport StreamOptimizer
from fastplan.search.strategy cimport trailing_included, unfused_block
from fastplan.stream.cache cimport (
    ACTION_DEFER, ACTION_EXECUTE, ACTION_EXPLORE, TRIGGER_ALWAYS, TRIGGER_ON_OPERATIONS,
    TRIGGER_OTHER, ExecutionPlanStore, Policy,
)
from fastplan.stream.queue cimport OperationQueue
from fastplan.stream.relative cimport new_frozen

from fastplan.search.search import MAX_BLOCKS

from refimpl.ir import OperationIr, Sync
from refimpl.planner.log import (
    NO_LOG, LogLevel, log_cached_plan, log_capped, log_left_at_sync, remember_plan,
)
from refimpl.planner.stream.cache import Always, ExecutionMode, ExecutionPlan, OnOperations, OnSync
from refimpl.planner.stream.processor import Exploration, StreamSegment

__all__ = ["StreamSegment", "Explorer", "Exploration", "Processor", "StreamPlanner"]

_LAZY = ExecutionMode.Lazy
_SYNC = ExecutionMode.Sync
_FULL = LogLevel.FULL
_BASIC = LogLevel.BASIC
_Sync = Sync
cdef object _OPERATION_IR = OperationIr  # read once per item by ``run``: a C global
_Exploration = Exploration
_ExecutionPlan = ExecutionPlan
_OnOperations = OnOperations
_CONTINUE = Exploration("Continue")
_ON_SYNC = OnSync()
_ALWAYS = Always()
_ON_SYNC_KEY = (TRIGGER_OTHER, None)
_ALWAYS_KEY = (TRIGGER_ALWAYS, None)


cdef class _QueueOps:
    """fastplan's queue seen as the sequence of its relative ops (built on first access)."""

    cdef OperationQueue queue

    def __cinit__(self, OperationQueue queue):
        self.queue = queue

    def __len__(self):
        return self.queue.size()

    def __getitem__(self, index):
        cdef Py_ssize_t i, n = self.queue.size()
        if isinstance(index, slice):
            return [self.queue.rel_at(i) for i in range(*index.indices(n))]
        i = index
        if i < 0:
            i += n
        if not 0 <= i < n:
            raise IndexError("queue index out of range")
        return self.queue.rel_at(i)


cdef tuple _rel_range(OperationQueue queue, Py_ssize_t start, Py_ssize_t stop):
    """``tuple(_QueueOps(queue)[start:stop])``: the relative ops at those positions (as a
    slice clips them)."""
    cdef Py_ssize_t i, n = queue.size()
    stop = min(stop, n)
    start = min(max(start, 0), stop)
    cdef tuple found = PyTuple_New(stop - start)
    for i in range(start, stop):
        op = queue.rel_at(i)
        Py_INCREF(op)
        PyTuple_SET_ITEM(found, i - start, op)
    return found


cdef class Explorer:
    """Feeds deferred ops to the ``StreamOptimizer`` (burn ``Explorer``).

    Mirrors refimpl.planner.stream.processor.Explorer.
    """

    def __init__(self, fusers, max_blocks=MAX_BLOCKS, max_explorations=None, log=NO_LOG):
        self.optimizer = StreamOptimizer(fusers, max_blocks, log)
        self.num_deferred = 0
        self.num_explored = 0
        self.is_still_optimizing = True
        self.num_explorations = 0
        self.max_explorations = max_explorations
        self.log = log

    def on_new_operation(self):
        self.num_deferred += 1

    def is_up_to_date(self):
        return self.num_deferred == 0

    def reset(self, operations):
        """Start over on the remaining ``operations`` (all deferred)."""
        self.reset_to(len(operations))

    cdef void reset_to(self, Py_ssize_t count) except *:
        self.optimizer.reset_all()
        self.num_explored = 0
        self.num_deferred = count
        self.is_still_optimizing = True

    def explore(self, operations, mode):
        """Register what was deferred; conclude if nothing can improve or at a sync."""
        return self.explored(operations, mode is _LAZY, False)

    cdef object explored(self, object operations, bint lazy, bint consume):
        """``explore``; ``consume``: the caller resets the optimizer once it completes (its
        blocks need not survive the search)."""
        if self.max_explorations is not None and \
                self.num_explorations >= self.max_explorations:
            self.num_deferred = 0
            self.is_still_optimizing = False
            ordering = tuple(range(len(operations)))
            log_capped(self.log, operations, self.max_explorations)
            return new_frozen(_Exploration, ("Unfused", unfused_block(ordering)))
        self._update_c(operations)
        if lazy and self.is_still_optimizing:
            return _CONTINUE
        optimization = self.optimizer.optimized(operations, consume)
        self.num_explorations += 1
        if not lazy:
            n = len(operations)
            if len(optimization.ordering) < n:  # ops run unfused after the search's result
                log_left_at_sync(self.log, operations, len(optimization.ordering),
                                 self.optimizer.length, self.optimizer.stopped)
            optimization = trailing_included(optimization, n)
        return new_frozen(_Exploration, ("Completed", optimization))

    def _update(self, operations):
        """Register the deferred ops (the last ``num_deferred``) until the optimizer stops
        optimizing; the rest stay unregistered."""
        self._update_c(operations)

    cdef int _update_c(self, object operations) except -1:
        """``_update``; the relative ops of fastplan's queue are read from it directly."""
        cdef Py_ssize_t back, i, n = len(operations)
        cdef OperationQueue queue = None
        if type(operations) is _QueueOps:
            queue = (<_QueueOps>operations).queue
        for back in range(self.num_deferred - 1, -1, -1):
            if not self.is_still_optimizing:
                break
            i = n - 1 - back
            if queue is not None and i >= 0:
                self.optimizer.register_op(queue.rel_at(i), None)
            else:  # any sequence, or a position before its start (counted from its end)
                self.optimizer.register_op(operations[i], None)
            self.num_explored += 1
            self.is_still_optimizing = self.optimizer.optimizing()
        self.num_deferred = 0
        return 0


cdef class Processor:
    """Policy + explorer over one stream (burn ``Processor``).

    Mirrors refimpl.planner.stream.processor.Processor.
    """

    def __init__(self, fusers, max_blocks=MAX_BLOCKS, max_explorations=None, log=NO_LOG):
        self.policy = Policy()
        self.explorer = Explorer(fusers, max_blocks, max_explorations, log)
        self.num_cache_hits = 0
        self.log = log

    @property
    def log(self):
        return self._log

    @log.setter
    def log(self, value):
        self._log = value
        self._full = value.enabled(_FULL)
        self._basic = value.enabled(_BASIC)

    @property
    def num_explorations(self):
        return self.explorer.num_explorations

    def process(self, segment, store, mode):
        """React to a newly queued op (Lazy) or drain the queue (Sync)."""
        self.process_c(segment, store, mode is _LAZY)

    cdef int process_c(self, object segment, ExecutionPlanStore store, bint lazy) except -1:
        cdef OperationQueue queue = segment if type(segment) is OperationQueue else None
        cdef list keys
        if lazy:
            if queue is not None:
                # the queue's lists are read in place (its ``size``/``key_at`` are calls
                # through its method table, twice per op)
                keys = queue.keys
                self.policy.update_key(store, <bytes>keys[len(keys) - 1])
            else:
                operations = segment.operations()
                self.policy.update_key(store, relative_key(operations[len(operations) - 1]))
            self.explorer.num_deferred += 1
        return self._advance(segment, queue, store, lazy)

    cdef int process_added(self, OperationQueue queue, ExecutionPlanStore store) except -1:
        """``process_c`` (lazy) of an op the queue added with the policy updated already
        (``OperationQueue.add_op_updating``)."""
        self.explorer.num_deferred += 1
        return self._advance(queue, queue, store, True)

    cdef int _advance(self, object segment, OperationQueue queue, ExecutionPlanStore store,
                      bint lazy) except -1:
        """What ``process_c`` does once the policy has seen the queued ops."""
        cdef Py_ssize_t n, plan_id = -1
        cdef int code
        while True:
            n = len(queue.global_ops) if queue is not None else len(segment.operations())
            if n == 0:
                break
            code = self.policy.advise(store, n, lazy, &plan_id)
            if code == ACTION_EXPLORE:
                self._explore(segment, queue, store, lazy)
                if self.explorer.num_deferred == 0:
                    break
            elif code == ACTION_DEFER:
                if not lazy:
                    raise RuntimeError("the policy deferred during a sync")
                break
            else:
                self._execute_cached(segment, queue, store, lazy, plan_id)
        return 0

    cdef int _execute_cached(self, object segment, OperationQueue queue,
                             ExecutionPlanStore store, bint lazy,
                             Py_ssize_t plan_id) except -1:
        self.num_cache_hits += 1
        if self._full:
            n = queue.size() if queue is not None else len(segment.operations())
            mode = _LAZY if lazy else _SYNC
            self._log.write(f"[plan] cache hit: execute plan #{plan_id} ({mode.value}, "
                            f"segment has {n} ops)")
        if self._basic:
            log_cached_plan(self._log, plan_id)
        if not lazy:
            store.add_trigger_keyed(plan_id, _ON_SYNC, _ON_SYNC_KEY)
        if queue is not None:
            # the drain updates the policy on the ops left (``_reset``'s policy half)
            queue.execute_plan_updating(store.plans[plan_id].optimization, plan_id,
                                        self.policy, store)
            self.explorer.reset_to(len(queue.keys))
            return 0
        segment.execute(plan_id, store)
        self._reset(segment, queue, store)
        return 0

    cdef int _explore(self, object segment, OperationQueue queue, ExecutionPlanStore store,
                      bint lazy) except -1:
        operations = _QueueOps(queue) if queue is not None else segment.operations()
        # a completed exploration is executed, then the explorer reset (``_reset``)
        found = self.explorer.explored(operations, lazy, True)
        if found.kind == "Continue":
            if not lazy:
                raise RuntimeError("exploration can't continue during a sync")
            return 0
        if found.kind == "Unfused":
            segment.execute_unfused(found.optimization)
        else:
            plan_id = self._store(operations, queue, store, found.optimization, lazy)
            if self._basic:
                remember_plan(self._log, plan_id, found.optimization, operations)
            if queue is not None:
                # the drain updates the policy on the ops left (``_reset``'s policy half)
                queue.execute_plan_updating(store.plans[plan_id].optimization, plan_id,
                                            self.policy, store)
                self.explorer.reset_to(len(queue.keys))
                return 0
            segment.execute(plan_id, store)
        self._reset(segment, queue, store)
        return 0

    cdef int _reset(self, object segment, OperationQueue queue,
                    ExecutionPlanStore store) except -1:
        cdef Py_ssize_t i, n
        cdef list keys
        if queue is not None:
            keys = queue.keys
            n = len(keys)
            self.explorer.reset_to(n)
            self.policy.reset_all()
            for i in range(n):
                self.policy.update_key(store, <bytes>keys[i])
            return 0
        operations = segment.operations()
        self.explorer.reset_to(len(operations))
        self.policy.reset_all()
        for operation in operations:
            self.policy.update_key(store, relative_key(operation))
        return 0

    cdef Py_ssize_t _store(self, object operations, OperationQueue queue,
                           ExecutionPlanStore store, object optimization,
                           bint lazy) except -1:
        """Cache a completed exploration (or add a trigger to an identical cached plan)."""
        cdef Py_ssize_t covered = len(optimization.ordering)
        cdef Py_ssize_t n = len(operations)
        cdef Py_ssize_t plan_id = -1
        cdef tuple keys
        if queue is not None:  # the relative ops read in place (``_QueueOps`` slices build
            # lists through Python's slice protocol)
            relative = _rel_range(queue, 0, covered)
        else:
            relative = tuple(operations[:covered])
        if self._full:
            mode = _LAZY if lazy else _SYNC
            self._log.write(f"[plan] exploration completed: {mode.value}, "
                            f"{covered}/{n} ops optimized")
        if queue is not None:
            keys = tuple(queue.keys[:covered])
        else:
            keys = tuple([relative_key(op) for op in relative])
        if lazy:
            rest = _rel_range(queue, covered, n) if queue is not None \
                else tuple(operations[covered:])
            if rest:
                trigger = new_frozen(_OnOperations, (rest,))
                if queue is not None:
                    trigger_key = (TRIGGER_ON_OPERATIONS, tuple(queue.keys[covered:]))
                else:
                    trigger_key = (TRIGGER_ON_OPERATIONS,
                                   tuple([relative_key(op) for op in rest]))
            else:
                trigger, trigger_key = _ALWAYS, _ALWAYS_KEY
        else:
            trigger, trigger_key = _ON_SYNC, _ON_SYNC_KEY
        if self.policy.advise(store, covered, False, &plan_id) == ACTION_EXECUTE:
            store.add_trigger_keyed(plan_id, trigger, trigger_key)
            return plan_id
        if not keys:
            raise ValueError("can't add an execution plan that covers no operation")
        plan = new_frozen(_ExecutionPlan, (relative, [trigger], optimization))
        return store.add_keyed(plan, keys, [trigger_key])


cdef class StreamPlanner:
    """Plans streams op by op, like burn's fusion stream, keeping its plan cache.

    Mirrors refimpl.planner.stream.processor.StreamPlanner.
    """

    def __init__(self, fusers, *, max_blocks=MAX_BLOCKS, max_explorations=None, log=NO_LOG):
        self.store = ExecutionPlanStore()
        self.queue = OperationQueue(log)
        # the search numbers ops by queue position: its log prints each as its stream index
        self.processor = Processor(fusers, max_blocks, max_explorations,
                                   log.at(self.queue.indices))
        self._positions = []

    @property
    def num_explorations(self):
        return self.processor.explorer.num_explorations

    @property
    def num_cache_hits(self):
        return self.processor.num_cache_hits

    def register(self, index, operation):
        """Queue one op and let the processor react lazily."""
        self.queue.add_op_updating(index, operation, -1, -1, self.processor.policy, self.store)
        self.processor.process_added(self.queue, self.store)

    def sync(self, tensors=()):
        """A read of ``tensors`` (all pending ops if empty): drain when it needs a pending
        op's result."""
        if not tensors or self.queue.produces(tensors):
            self.processor.process_c(self.queue, self.store, False)

    def drain(self):
        """Execute everything pending (Sync mode)."""
        self.processor.process_c(self.queue, self.store, False)

    def forget_steps(self):
        """Drop the executed steps the queue keeps (``OperationQueue.forget_steps``).

        See refimpl's: a runtime calls it once it has launch-planned each iteration's steps."""
        self.queue.forget_steps()

    def run(self, stream):
        """Plan one pass over ``stream``; the steps it executed, in order."""
        cdef Py_ssize_t start = len(self.queue.steps)
        cdef Py_ssize_t index = 0
        cdef OperationQueue queue = self.queue
        cdef Processor processor = self.processor
        cdef ExecutionPlanStore store = self.store
        cdef ReadAhead ring[AHEAD_RING]
        cdef ReadAhead* read
        cdef Py_ssize_t r
        # the int of each position, made by the first pass that reached it: a warm planner's
        # next pass takes it from there (a step's ops hold it either way)
        cdef list positions = self._positions
        for r in range(AHEAD_RING):
            ring[r].item = NULL
        # the planner makes no reference cycles: the cyclic collector is paused for the pass
        # (docs/fastplan.md, "Garbage collection"), as it only finds nothing at a cost that
        # grows with the caller's heap
        items = stream.items
        cdef bint ahead = type(items) is tuple
        paused = _gc.isenabled()
        _gc.disable()
        try:
            for item in items:
                if ahead:
                    prefetch_ahead(<tuple>items, index, ring)
                if type(item) is not _OPERATION_IR and isinstance(item, _Sync):
                    tensors = item.tensors
                    if not tensors or queue.produces(tensors):
                        processor.process_c(queue, store, False)
                else:
                    while index >= len(positions):  # the syncs' positions too
                        list_push(positions, len(positions))
                    position = <object>_list_item(<PyObject*>positions, index)
                    # the read-ahead checked this item two items ago: its codes, if it is
                    # of the exact typed form (else the encoding checks it, and says why)
                    read = &ring[index & (AHEAD_RING - 1)]
                    if ahead and read.item == <PyObject*>item:
                        queue.add_op_updating(position, item, read.code, read.struct_code,
                                              processor.policy, store)
                    else:
                        queue.add_op_updating(position, item, -1, -1, processor.policy,
                                              store)
                    processor.process_added(queue, store)
                index += 1
            processor.process_c(queue, store, False)
        finally:
            if paused:
                _gc.enable()
        return queue.steps[start:]

    def launch_planned(self, stream, start=0, device="metal", memo=None):
        """The steps executed from ``start`` on, launch-planned: ``aliases`` per step and
        ``width`` per block, as ``plan`` fills them.

        ``memo``: the ``fastplan.launch.launch_memo.LaunchMemo`` a runtime keeps beside this
        planner across iterations (a fresh one when ``None``): a fused step met again on the
        same layouts is replayed from it. See refimpl's for the runtime's loop."""
        from fastplan.planner import _launch_planned, resolve_device

        return _launch_planned(stream, self, start, resolve_device(device), memo)
