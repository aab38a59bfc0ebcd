# cython: language_level=3
"""C-level declarations of fastplan.stream.processor (used by planner)."""

cimport cython

from fastplan.search.search cimport StreamOptimizer
from fastplan.stream.cache cimport ExecutionPlanStore, Policy
from fastplan.stream.queue cimport OperationQueue


cdef class Explorer:
    cdef public StreamOptimizer optimizer  # the search the deferred ops are registered into
    cdef public Py_ssize_t num_deferred  # queued ops not registered yet
    cdef public Py_ssize_t num_explored  # ops registered since the last reset
    cdef public bint is_still_optimizing  # the optimizer still takes ops
    cdef public Py_ssize_t num_explorations  # searches completed
    cdef public object max_explorations  # None: no cap
    cdef public object log  # a refimpl.planner.log.FusionLog
    cdef void reset_to(self, Py_ssize_t count) except *
    cdef object explored(self, object operations, bint lazy, bint consume)
    cdef int _update_c(self, object operations) except -1


@cython.final  # its calls among its own methods are direct, inlinable (no subclass)
cdef class Processor:
    cdef public Policy policy  # which cached plans still match the queue
    cdef public Explorer explorer
    cdef public Py_ssize_t num_cache_hits  # cached plans executed through the policy
    cdef object _log  # the FusionLog (property ``log``)
    cdef bint _full  # the log prints cache hits and completed explorations
    cdef bint _basic  # the log prints why ops run unfused
    cdef int process_c(self, object segment, ExecutionPlanStore store, bint lazy) except -1
    cdef int process_added(self, OperationQueue queue, ExecutionPlanStore store) except -1
    cdef int _advance(self, object segment, OperationQueue queue, ExecutionPlanStore store,
                      bint lazy) except -1
    cdef int _execute_cached(self, object segment, OperationQueue queue,
                             ExecutionPlanStore store, bint lazy,
                             Py_ssize_t plan_id) except -1
    cdef int _explore(self, object segment, OperationQueue queue, ExecutionPlanStore store,
                      bint lazy) except -1
    cdef int _reset(self, object segment, OperationQueue queue,
                    ExecutionPlanStore store) except -1
    cdef Py_ssize_t _store(self, object operations, OperationQueue queue,
                           ExecutionPlanStore store, object optimization,
                           bint lazy) except -1


cdef class StreamPlanner:
    cdef public ExecutionPlanStore store  # the plan cache, kept across run() calls
    cdef public Processor processor
    cdef public OperationQueue queue
    # the stream positions as ints, kept across run() calls (``run``'s ops take them)
    cdef list _positions
