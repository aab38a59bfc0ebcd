# cython: language_level=3
"""The plan cache: stored ``ExecutionPlan``s keyed by their relative op sequence, and the
``Policy`` that decides, op by op, whether to explore, wait, or execute a cached plan.

burn counterpart: ``crates/burn-fusion/src/stream/store/{base,index}.rs`` (``ExecutionPlan``,
``ExecutionTrigger``, ``ExecutionPlanStore``, ``ExecutionPlanIndex``) and
``crates/burn-fusion/src/stream/execution/{policy,validator}.rs`` (``Policy``, ``Action``,
``OperationsValidator``, ``TriggerValidator``); notes §7.4 and §9.4.
Mirrors ``refimpl/planner/stream/cache.py``: same names, same order, same results. The plain-data
classes (modes, triggers, ``ExecutionPlan``, actions) are refimpl's.

Policy (per queued op, ``update``; then ``action``):

* a found plan (an available plan whose trigger matched, or ``Always``) that fits the queue:
  ``Execute``;
* lazily: ``Defer`` while a candidate is still matching, an available plan covers the whole
  queue, or an ``OnOperations`` trigger is still matching; otherwise ``Explore``;
* at a sync: ``Execute`` an available (then candidate) plan exactly as long as the queue,
  otherwise ``Explore``. A sync never defers.

Differs from refimpl:

* ops are compared through their keys (``fastplan._keys``: equal exactly when the relative
  ops are ``==``). ``fastplan.stream.queue`` hands the policy each op's key, while it is still in
  the encoding's buffer (``Policy.update_buf``), so a cache hit never builds or compares an
  ``OperationIr``; the store keeps each plan's op keys and its ``OnOperations`` triggers' keys;
* candidates are not validated one by one: the store keeps a prefix trie of its plans' op keys
  (``fastplan.stream._trie``), walked one child per op. refimpl's candidates after ``k`` ops (plans
  stored before the segment's first op came, matching those ``k`` ops, and longer) are exactly
  the plans ending strictly below the node of the ``k`` ops with an id below
  ``_start_count``. Each node knows the least id below it, so "a candidate is still matching"
  is one comparison, and the plans ending at the node are the candidates found in full, in id
  order. ``Policy.candidates`` builds refimpl's validators from the node when read;
* the available plans and their trigger checks are C structs, every trigger updated and
  checked in one pass per op, plan after plan as refimpl does; ``Policy.availables`` builds
  refimpl's objects from them when read.
"""


from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_FromStringAndSize, PyBytes_GET_SIZE
from cpython.pyport cimport PY_SSIZE_T_MAX
from cpython.ref cimport PyObject
from libc.stdint cimport int64_t

from fastplan._keys cimport (
    KeyBuf, _bytes_data, _tuple_item, _var_size, list_empty, list_push, relative_key,
)
from fastplan._vec cimport vec_at, vec_free, vec_init, vec_reserve
from fastplan.stream._trie cimport _Node, trie_add, trie_child, trie_child_at, trie_ids_below
from libc.string cimport memcmp
from cpython.list cimport PyList_GET_ITEM, PyList_GET_SIZE
from cpython.tuple cimport PyTuple_GET_ITEM

cdef extern from "Python.h":
    bint _is_exact_bytes "PyBytes_CheckExact"(PyObject* o) noexcept nogil
    Py_ssize_t _ssize_of "PyLong_AsSsize_t"(PyObject* o) except? -1


cdef inline bint _same_key(PyObject* expected, bytes key) noexcept:
    """``expected == key`` for an op key (exact ``bytes``; anything else differs)."""
    cdef Py_ssize_t size
    if expected == <PyObject*>key:
        return True
    if not _is_exact_bytes(expected):
        return False
    size = PyBytes_GET_SIZE(key)
    return _var_size(expected) == size and \
        memcmp(_bytes_data(expected), PyBytes_AS_STRING(key), <size_t>size) == 0

from refimpl.planner.stream.cache import (
    Action,
    Always,
    Defer,
    Execute,
    ExecutionMode,
    ExecutionPlan,
    ExecutionTrigger,
    Explore,
    OnOperations,
    OnSync,
)

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

_LAZY = ExecutionMode.Lazy
_SYNC = ExecutionMode.Sync
_OnOperations = OnOperations
_Always = Always
_EXPLORE = Explore()
_DEFER = Defer()
_Execute = Execute


# --- the store ------------------------------------------------------------------------------


cdef object _trigger_key(object trigger):
    """What identifies a trigger: ``(kind, op keys)``."""
    if isinstance(trigger, _OnOperations):
        return (TRIGGER_ON_OPERATIONS, tuple([relative_key(op) for op in trigger.operations]))
    if isinstance(trigger, _Always):
        return (TRIGGER_ALWAYS, None)
    return (TRIGGER_OTHER, None)


cdef class ExecutionPlanStore:
    """Every plan found on a device, addressed by id = insertion order.

    Mirrors refimpl.planner.stream.cache.ExecutionPlanStore.
    """

    def __init__(self):
        self.plans = []
        self._root = _Node(0)
        self._op_keys = []
        self._trigger_keys = []
        self._trigger_seen = []

    def __len__(self):
        return len(self.plans)

    def find(self, first):
        """Ids of the plans whose first op equals ``first``, oldest first."""
        return list(self.find_key(relative_key(first)))

    cdef list find_key(self, bytes first):
        """Ids of the plans whose first op key is ``first``: those ending at or below the
        trie's node for it."""
        node = trie_child(self._root, first)
        if node is None:
            return []
        ids = list((<_Node>node).ends or ())
        ids.extend(trie_ids_below(<_Node>node, PY_SSIZE_T_MAX))
        ids.sort()
        return ids

    def add(self, plan):
        """Store a plan (it must cover at least one op) and return its id."""
        if not plan.operations:
            raise ValueError("can't add an execution plan that covers no operation")
        return self.add_keyed(plan, tuple([relative_key(op) for op in plan.operations]), None)

    cdef Py_ssize_t add_keyed(self, object plan, tuple keys, object trigger_keys) except -1:
        """``add`` with the op keys (and, optionally, the trigger keys) already known."""
        cdef Py_ssize_t plan_id = len(self.plans)
        self.plans.append(plan)
        self._op_keys.append(keys)
        trie_add(self._root, keys, plan_id)
        if trigger_keys is None:
            trigger_keys = [_trigger_key(trigger) for trigger in plan.triggers]
        self._trigger_keys.append(trigger_keys)
        self._trigger_seen.append(list(plan.triggers))
        return plan_id

    def get(self, plan_id):
        return self.plans[plan_id]

    cdef tuple keys_of(self, Py_ssize_t plan_id):
        return <tuple>self._op_keys[plan_id]

    cdef list triggers_of(self, Py_ssize_t plan_id):
        """The trigger keys of a plan, re-read if its ``triggers`` changed since they were
        taken (another length, or another object somewhere: triggers are frozen)."""
        cdef list seen
        cdef list keys
        cdef Py_ssize_t i, n
        if not 0 <= plan_id < len(self.plans):  # ``plans`` is public: it may have shrunk
            raise IndexError("list index out of range")
        triggers = self.plans[plan_id].triggers
        seen = <list>self._trigger_seen[plan_id]
        n = PyList_GET_SIZE(seen)
        if type(triggers) is list:  # refimpl's: compared through borrowed items
            if PyList_GET_SIZE(triggers) == n:
                for i in range(n):
                    if PyList_GET_ITEM(seen, i) != PyList_GET_ITEM(triggers, i):
                        break
                else:
                    return <list>self._trigger_keys[plan_id]
        elif len(triggers) == n:
            for i in range(n):
                if <object>PyList_GET_ITEM(seen, i) is not triggers[i]:
                    break
            else:
                return <list>self._trigger_keys[plan_id]
        keys = [_trigger_key(trigger) for trigger in triggers]
        self._trigger_keys[plan_id] = keys
        self._trigger_seen[plan_id] = list(triggers)
        return keys

    def add_trigger(self, plan_id, trigger):
        """Record another trigger for a plan, unless it already has it."""
        self.add_trigger_keyed(self._plan_index(plan_id), trigger, None)

    cdef Py_ssize_t _plan_index(self, object plan_id) except -1:
        """A plan id given from Python, as a list index (negative ones count from the end,
        as refimpl's list does; out of range: ``IndexError``)."""
        cdef Py_ssize_t index = plan_id
        if index < 0:
            index += len(self.plans)
        if not 0 <= index < len(self.plans):
            raise IndexError("list index out of range")
        return index

    cdef int add_trigger_keyed(self, Py_ssize_t plan_id, object trigger,
                               object key) except -1:
        """``add_trigger``; ``key`` is the trigger's key when the caller has it already."""
        cdef list keys = self.triggers_of(plan_id)
        triggers = self.plans[plan_id].triggers
        if key is None:
            key = _trigger_key(trigger)
        if (<tuple>key)[0] == TRIGGER_OTHER:
            if trigger in triggers:
                return 0
        elif key in keys:
            if type(trigger) is _OnOperations or type(trigger) is _Always or \
                    type(trigger) is OnSync:
                return 0
            if trigger in triggers:  # a subclass: let its own == decide
                return 0
        triggers.append(trigger)
        keys.append(key)
        (<list>self._trigger_seen[plan_id]).append(trigger)
        return 0


# --- validators ------------------------------------------------------------------------------


cdef class _Validator:
    """Where matching incoming ops one by one against a stored op list stands (burn
    ``OperationsValidator``), as ``Policy.candidates`` and ``availables`` report it."""

    def __init__(self, Py_ssize_t target):
        self.target = target
        self.state = VALIDATING
        self.size = 0


cdef class _TriggerCheck:
    """One trigger of an available plan being checked against the ops that follow it, as
    ``Policy.availables`` reports it."""

    def __init__(self, int kind, object operations, _Validator matching):
        self.kind = kind
        self.operations = operations
        self.matching = matching
        self.checked = -1  # not started (the op that completed the plan)


cdef class _Available:
    def __init__(self, Py_ssize_t plan_id, Py_ssize_t size, list triggers):
        self.plan_id = plan_id
        self.size = size
        self.triggers = triggers


cdef class Policy:
    """Tracks which cached plans still match the queue (burn ``Policy``).

    Mirrors refimpl.planner.stream.cache.Policy.

    The plans matched in full and their trigger checks are C structs (``AvailableState``,
    ``CheckState``); ``availables`` builds refimpl's objects from them when read."""

    def __cinit__(self):
        vec_init(&self._available, sizeof(AvailableState))
        vec_init(&self._checks, sizeof(CheckState))
        self._trigger_keys = []

    def __dealloc__(self):
        vec_free(&self._available)
        vec_free(&self._checks)

    def __init__(self):
        self.reset_all()

    @property
    def candidates(self):
        """``_Validator`` of every plan still matching (all ``VALIDATING``), oldest first."""
        return [_Validator(plan_id) for plan_id in self._candidate_ids()]

    @property
    def availables(self):
        """``_Available`` of every plan matched in full, with its ``_TriggerCheck``s, in
        order (built when read)."""
        cdef const AvailableState* available
        cdef const CheckState* state
        cdef Py_ssize_t a, i
        cdef _Validator matching
        cdef _TriggerCheck check
        found = []
        for a in range(self._available.len):
            available = <const AvailableState*>vec_at(&self._available, a)
            keys = self._trigger_keys[a]
            checks = []
            for i in range(available.count):
                state = <const CheckState*>vec_at(&self._checks, available.first + i)
                matching = _Validator(i)
                matching.state, matching.size = state.state, state.size
                check = _TriggerCheck(state.kind, keys[i][1], matching)
                check.checked = state.checked
                checks.append(check)
            found.append(_Available(available.plan_id, available.size, checks))
        return found

    @property
    def found(self):
        """``(plan id, its number of ops)`` once a plan may run, else ``None``."""
        return (self.found_id, self.found_size) if self.found_id >= 0 else None

    def reset(self):
        self.reset_all()

    cdef void reset_all(self) noexcept:
        self._available.len = 0
        self._checks.len = 0
        list_empty(self._trigger_keys)
        self._node = None
        self._start_count = 0
        self.found_id = -1
        self.found_size = 0
        self.num_operations = 0

    def action(self, store, operations, mode):
        """The advice for the queue ``operations`` (all of them already ``update``d)."""
        cdef Py_ssize_t plan_id = -1
        cdef int code = self.advise(store, len(operations), mode is _LAZY, &plan_id)
        if code == ACTION_EXECUTE:
            return _Execute(plan_id)
        return _EXPLORE if code == ACTION_EXPLORE else _DEFER

    cdef int advise(self, ExecutionPlanStore store, Py_ssize_t n, bint lazy,
                    Py_ssize_t* plan_id) except -1:
        """``action`` for a queue of ``n`` ops, as an ``ACTION_*`` code (``plan_id`` set for
        ``ACTION_EXECUTE``)."""
        if self.num_operations < n:
            raise RuntimeError("policy asked about more operations than it has seen")
        if self.found_id >= 0 and self.found_size <= n:
            plan_id[0] = self.found_id
            return ACTION_EXECUTE
        if lazy:
            return self._action_lazy(n)
        return self._action_sync(store, n, plan_id)

    def update(self, store, operation):
        """Take the next queued op into account."""
        self.update_key(store, relative_key(operation))

    cdef int update_key(self, ExecutionPlanStore store, bytes key) except -1:
        """``update`` with the op's key."""
        self._update_at(store, PyBytes_AS_STRING(key), PyBytes_GET_SIZE(key), key)
        return 0

    cdef bytes update_buf(self, ExecutionPlanStore store, const KeyBuf* b):
        """``update`` with the op's key still in the encoding's buffer: the key as ``bytes``,
        the trie's own object when the walk found it there (a cache hit makes none)."""
        return self._update_at(store, <const char*>b.data, b.len * <Py_ssize_t>sizeof(int64_t),
                               None)

    cdef bytes _update_at(self, ExecutionPlanStore store, const char* data, Py_ssize_t size,
                          object key):
        """``update`` with the key ``data[:size]`` (``key``: it as ``bytes``, or ``None``:
        taken from the trie when found there, else made); returns the key."""
        cdef _Node node = self._node
        cdef PyObject* stored = NULL
        if self.num_operations == 0:  # the candidates: the plans stored now
            node = store._root
            self._start_count = len(store.plans)
        if node is not None:
            node = trie_child_at(node, data, size, &stored)
            if node is not None and node.ends is not None:
                self._check_candidates(store, node)
            self._node = node if node is not None and node.min_below < self._start_count \
                else None
        if key is None:
            key = <bytes>stored if stored != NULL else PyBytes_FromStringAndSize(data, size)
        if self._available.len:
            self._update_availables(<bytes>key)
            self._check_availables()
        self.num_operations += 1
        return <bytes>key

    cdef int _check_candidates(self, ExecutionPlanStore store, _Node node) except -1:
        """Fully matched candidates (the plans ending at ``node``, the ops seen) become
        available plans, each with a check per trigger it has now."""
        cdef PyObject* ends = <PyObject*>node.ends
        cdef Py_ssize_t e, plan_id, i, n
        cdef list keys
        cdef PyObject* entry
        cdef AvailableState* available
        cdef CheckState* state
        for e in range(_var_size(ends)):
            plan_id = _ssize_of(_tuple_item(ends, e))
            if plan_id >= self._start_count:  # ids ascend: the rest came later too
                break
            keys = store.triggers_of(plan_id)
            n = PyList_GET_SIZE(keys)
            if vec_reserve(&self._available, self._available.len + 1) < 0 or \
                    vec_reserve(&self._checks, self._checks.len + n) < 0:
                raise MemoryError()
            available = <AvailableState*>self._available.data + self._available.len
            available.plan_id, available.size = plan_id, node.depth
            available.first, available.count = self._checks.len, n
            list_push(self._trigger_keys, keys)  # holds the checks' ``expected``
            state = <CheckState*>self._checks.data + self._checks.len
            for i in range(n):  # each entry: (kind, op keys or None)
                entry = PyList_GET_ITEM(keys, i)
                state.kind = (<tuple>entry)[0]
                state.state = VALIDATING
                state.size = 0
                state.checked = -1
                state.available = self._available.len
                state.expected = NULL
                if state.kind == TRIGGER_ON_OPERATIONS:
                    if type((<tuple>entry)[1]) is not tuple:
                        raise TypeError("an OnOperations trigger's key holds a tuple")
                    state.expected = PyTuple_GET_ITEM(<tuple>entry, 1)
                state += 1
            self._checks.len += n
            self._available.len += 1
        return 0

    cdef list _candidate_ids(self):
        """Ids of the plans still matching: stored at position 0, ending strictly below the
        node of the ops seen; ascending."""
        if self._node is None:
            return []
        cdef list ids = trie_ids_below(self._node, self._start_count)
        ids.sort()
        return ids

    cdef void _update_availables(self, bytes key) noexcept:
        """Each ``OnOperations`` check takes the next op (the op that completed its plan
        starts it); a check still validating compares it with its trigger's next op. The
        checks lie plan after plan: one pass over them, in refimpl's order."""
        cdef CheckState* state = <CheckState*>self._checks.data
        cdef CheckState* end = state + self._checks.len
        cdef Py_ssize_t n
        while state != end:
            if state.kind == TRIGGER_ON_OPERATIONS:
                if state.checked < 0:
                    state.checked = 0
                else:
                    if state.state == VALIDATING:
                        n = _var_size(state.expected)
                        if state.checked >= n or \
                                not _same_key(_tuple_item(state.expected, state.checked), key):
                            state.state = INVALIDATED
                        elif n == state.checked + 1:
                            state.state = FOUND
                            state.size = n
                    state.checked += 1
            state += 1

    cdef void _check_availables(self) noexcept:
        cdef const CheckState* state = <const CheckState*>self._checks.data
        cdef const AvailableState* available
        cdef Py_ssize_t i
        for i in range(self._checks.len):
            if state[i].kind == TRIGGER_ALWAYS or (
                    state[i].kind == TRIGGER_ON_OPERATIONS and state[i].state == FOUND):
                available = <const AvailableState*>vec_at(&self._available, state[i].available)
                self.found_id = available.plan_id
                self.found_size = available.size
                return

    cdef int _action_lazy(self, Py_ssize_t n) noexcept:
        cdef const CheckState* state = <const CheckState*>self._checks.data
        cdef const AvailableState* available
        cdef Py_ssize_t a, i
        if self._node is not None:  # a candidate is still matching
            return ACTION_DEFER
        for a in range(self._available.len):
            available = <const AvailableState*>vec_at(&self._available, a)
            if available.size == n:
                return ACTION_DEFER
            for i in range(available.first, available.first + available.count):
                if state[i].kind == TRIGGER_ON_OPERATIONS and state[i].state == VALIDATING:
                    return ACTION_DEFER
        return ACTION_EXPLORE

    cdef int _action_sync(self, ExecutionPlanStore store, Py_ssize_t n,
                          Py_ssize_t* plan_id) except -1:
        cdef const AvailableState* available
        cdef Py_ssize_t a, candidate
        for a in range(self._available.len):
            available = <const AvailableState*>vec_at(&self._available, a)
            if available.size == n:
                plan_id[0] = available.plan_id
                return ACTION_EXECUTE
        # every candidate is longer than its node's depth, which ``update_key`` keeps equal to
        # ``num_operations`` (at least ``n``): this finds one only once that was set by hand
        if self._node is not None and self._node.depth < n:
            for candidate in self._candidate_ids():
                if len(store.keys_of(candidate)) == n:
                    plan_id[0] = candidate
                    return ACTION_EXECUTE
        return ACTION_EXPLORE
