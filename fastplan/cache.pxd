# cython: language_level=3
"""C-level declarations of fastplan.cache (used by queue and processor)."""

from fastplan._trie cimport _Node

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
    cdef void update(self, bytes added, Py_ssize_t position, tuple expected) noexcept


cdef class _TriggerCheck:
    cdef public int kind  # TRIGGER_*
    cdef public object operations  # OnOperations: the trigger's op keys (tuple of bytes)
    cdef public _Validator matching
    cdef public Py_ssize_t checked  # ops checked since the plan matched; -1: not started


cdef class _Available:
    cdef public Py_ssize_t plan_id
    cdef public Py_ssize_t size
    cdef public list triggers  # _TriggerCheck, one per trigger of the plan


cdef class Policy:
    cdef _Node _node  # trie node of the ops seen, while a candidate lies below it (else None)
    cdef Py_ssize_t _start_count  # plans stored at position 0: only those are candidates
    cdef public list availables  # _Available: plans matched in full
    cdef Py_ssize_t found_id  # the plan a fired trigger chose (-1: none)
    cdef Py_ssize_t found_size  # its number of ops
    cdef public Py_ssize_t num_operations  # ops taken into account since the last reset
    cdef void reset_all(self) noexcept
    cdef int advise(self, ExecutionPlanStore store, Py_ssize_t n, bint lazy,
                    Py_ssize_t* plan_id) except -1
    cdef int update_key(self, ExecutionPlanStore store, bytes key) except -1
    cdef int _check_candidates(self, ExecutionPlanStore store, _Node node) except -1
    cdef list _candidate_ids(self)
    cdef void _update_availables(self, bytes key) noexcept
    cdef void _check_availables(self) noexcept
    cdef int _action_lazy(self, Py_ssize_t n) noexcept
    cdef int _action_sync(self, ExecutionPlanStore store, Py_ssize_t n,
                          Py_ssize_t* plan_id) except -1
