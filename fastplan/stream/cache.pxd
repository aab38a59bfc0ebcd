# cython: language_level=3
"""C-level declarations of fastplan.stream.cache (used by queue and processor)."""

cimport cython
from cpython.ref cimport PyObject

from fastplan._keys cimport KeyBuf
from fastplan._vec cimport Vec
from fastplan.stream._trie cimport _Node

cdef enum:
    ACTION_EXPLORE = 0  # refimpl Explore()
    ACTION_DEFER = 1  # refimpl Defer()
    ACTION_EXECUTE = 2  # refimpl Execute(plan_id)
    TRIGGER_OTHER = 0  # OnSync (or an unknown trigger class): never fires lazily
    TRIGGER_ON_OPERATIONS = 1  # OnOperations(ops)
    TRIGGER_ALWAYS = 2  # Always()
    VALIDATING = 0  # _Validator states
    FOUND = 1
    INVALIDATED = 2


@cython.final  # its methods are called directly, not through a vtable
cdef class ExecutionPlanStore:
    cdef public list plans  # refimpl ExecutionPlan objects, by id
    cdef _Node _root  # prefix trie of the plans' op keys
    cdef list _op_keys  # per plan: the keys of its ops (tuple of bytes)
    cdef list _trigger_keys  # per plan: (kind, op keys or None) of each trigger, in order
    cdef list _trigger_seen  # per plan: the trigger objects those keys were taken from
    cdef list find_key(self, bytes first)
    cdef Py_ssize_t add_keyed(self, object plan, tuple keys, object trigger_keys) except -1
    cdef tuple keys_of(self, Py_ssize_t plan_id)
    cdef list triggers_of(self, Py_ssize_t plan_id)
    cdef int add_trigger_keyed(self, Py_ssize_t plan_id, object trigger,
                               object key) except -1
    cdef Py_ssize_t _plan_index(self, object plan_id) except -1


cdef class _Validator:
    cdef public Py_ssize_t target  # a plan id, or a trigger index
    cdef public int state  # VALIDATING / FOUND / INVALIDATED
    cdef public Py_ssize_t size  # the matched length once FOUND


cdef class _TriggerCheck:
    cdef public int kind  # TRIGGER_*
    cdef public object operations  # OnOperations: the trigger's op keys (tuple of bytes)
    cdef public _Validator matching
    cdef public Py_ssize_t checked  # ops checked since the plan matched; -1: not started


cdef class _Available:
    cdef public Py_ssize_t plan_id
    cdef public Py_ssize_t size
    cdef public list triggers  # _TriggerCheck, one per trigger of the plan


ctypedef struct AvailableState:
    Py_ssize_t plan_id  # a plan matched in full (refimpl ``_Available``)
    Py_ssize_t size  # its number of ops
    Py_ssize_t first  # its first trigger check in ``Policy._checks``
    Py_ssize_t count  # its trigger checks (the plan's triggers when it matched)


ctypedef struct CheckState:
    int kind  # TRIGGER_* (refimpl ``_TriggerCheck``; its trigger's index is its position)
    int state  # VALIDATING / FOUND / INVALIDATED (the check's ``_Validator``)
    Py_ssize_t size  # the matched length once FOUND
    Py_ssize_t checked  # ops checked since the plan matched; -1: not started
    Py_ssize_t available  # its plan's index in ``Policy._available``
    PyObject* expected  # OnOperations: the trigger's op keys (a tuple), borrowed from
    # ``Policy._trigger_keys``; else NULL


@cython.final  # the cache hit's calls among its methods are direct, inlinable
cdef class Policy:
    cdef _Node _node  # trie node of the ops seen, while a candidate lies below it (else None)
    cdef Py_ssize_t _start_count  # plans stored at position 0: only those are candidates
    cdef Vec _available  # AvailableState: plans matched in full, in order
    cdef Vec _checks  # CheckState: their trigger checks, plan after plan
    cdef list _trigger_keys  # per available plan: its (kind, op keys) list when it matched
    cdef Py_ssize_t found_id  # the plan a fired trigger chose (-1: none)
    cdef Py_ssize_t found_size  # its number of ops
    cdef public Py_ssize_t num_operations  # ops taken into account since the last reset
    cdef void reset_all(self) noexcept
    cdef int advise(self, ExecutionPlanStore store, Py_ssize_t n, bint lazy,
                    Py_ssize_t* plan_id) except -1
    cdef int update_key(self, ExecutionPlanStore store, bytes key) except -1
    cdef bytes update_buf(self, ExecutionPlanStore store, const KeyBuf* b)
    cdef bytes _update_at(self, ExecutionPlanStore store, const char* data, Py_ssize_t size,
                          object key)
    cdef int _check_candidates(self, ExecutionPlanStore store, _Node node) except -1
    cdef list _candidate_ids(self)
    cdef void _update_availables(self, bytes key) noexcept
    cdef void _check_availables(self) noexcept
    cdef int _action_lazy(self, Py_ssize_t n) noexcept
    cdef int _action_sync(self, ExecutionPlanStore store, Py_ssize_t n,
                          Py_ssize_t* plan_id) except -1
