# cython: language_level=3
"""The launch memo of fastplan's stream walk: stored launch outcomes and their replay.

burn counterpart: none (burn plans every launch again; the memo only spares fastplan's walk the
work, with the same results). The stream walk, ``fastplan.launch.execute``, keys, stores and
replays its fused steps through it.

* **The step memo.** A fused step's outcome is a pure function of its optimization, the real
  dims of its relative shape ids, the device, and the layouts of its tensors' live handles
  (shape, strides, offset, dtype, shared buffers and their use counts: burn's ``can_mut``).
  The key (``_key``) is exactly that; the outcome (``_Outcome``) is kept in relative terms
  (aliases and handles as positions in the step's global-to-relative order, fresh buffers by
  allocation rank) and replayed (``_replay``) on a hit. Slice ranges never reach a fused step,
  and scalar values do not change a launch.
* **Whole executions** (``_Execution``): the steps of one plan the queue ran, stored as one
  outcome keyed by the plan's id, each step's optimization id or op count, the dims and the
  live layouts of every tensor of its segment (the walk builds that key with ``_push_state``);
  a hit replays the execution in one go. An execution with a ``Slice`` (stashed ranges) or an
  ``Init`` (input specs) is not stored.
* **Replays** register handles by their fields (``Memory.register_at``: built when first read)
  and find the tensors they change by the live-table keys the memo key read.
* **One walk's memo.** ``fastplan.planner.plan`` gives its one walk a memo that stores whole
  executions only (``LaunchMemo.keep_steps`` false): within one walk a step's key spans the
  same tensors as its execution's. A runtime's memo, kept across iterations, keeps both.
* The memo keeps the handles it made for the stream's inputs and gives them again to an input
  of the same layout, whatever its tensor id.
"""

cimport cython

from cpython.list cimport PyList_New, PyList_SET_ITEM
from cpython.object cimport PyTypeObject
from cpython.ref cimport Py_INCREF, PyObject
from libc.stdint cimport int64_t, uint64_t

from fastplan._keys cimport (
    KeyBuf, KeyTable, _list_item, _tuple_item, buf_bytes, buf_free, buf_grow, buf_init,
    buf_push, exact_long_long,
)
from fastplan.launch.handles cimport (
    Memory, _InputsMemo, _Live, live_find, live_handle, tensor_key,
)
from fastplan.launch.handles_layouts cimport handle_buffer, handle_layout
from fastplan.stream.queue cimport _StepContext, _StepRecord

cdef extern from *:
    # fastplan._keys' ``compact_int`` on a borrowed pointer (its C function, emitted with the
    # cimport): no reference taken for the call
    int _compact_at "fastplan_compact_int"(PyObject* o, long long* v) noexcept
    PyTypeObject* _type_at "Py_TYPE"(PyObject* o) noexcept
    PyTypeObject PyLong_Type

__all__ = ["LaunchMemo"]

# Stored outcomes, and distinct handle layouts, a memo keeps before it starts afresh (a runtime
# meeting new shapes forever must not grow without bound).
MEMO_CAPACITY = 8192
LAYOUT_CAPACITY = 65536


cdef class LaunchMemo:
    """Launch outcomes of fused steps, per device profile (see the module docstring), and the
    layout ids their keys are made of. ``hits``/``misses`` count lookups. ``keep_steps``
    (true by default): whether single fused steps are stored and looked up as well as whole
    executions; ``fastplan.planner.plan``'s own memo, made for one walk, keeps executions
    only."""

    def __init__(self):
        self._by_device, self._executions_by_device, self.layout_ids = {}, {}, {}
        self.inputs = _InputsMemo()
        self.hits = self.misses = 0
        self.keep_steps = True

    cdef dict table(self, object device):
        found = self._by_device.get(device)
        if found is None:
            found = self._by_device[device] = {}
        return <dict>found

    cdef KeyTable executions(self, object device):
        """Stored outcomes of whole executions (``_Execution``), by key."""
        found = self._executions_by_device.get(device)
        if found is None:
            found = self._executions_by_device[device] = KeyTable()
        return <KeyTable>found

    cdef bint full(self, dict table) except -1:
        """Whether ``table`` (a device's step outcomes) or the layout ids reached their
        capacity: the walk then restarts the memo."""
        return len(table) >= MEMO_CAPACITY or len(self.layout_ids) >= LAYOUT_CAPACITY

    cdef int restart(self, Memory memory) except -1:
        """Forget every outcome and layout id; ``memory``'s live handles get new ids."""
        for outcomes in self._by_device.values():
            (<dict>outcomes).clear()
        for outcomes in self._executions_by_device.values():
            (<KeyTable>outcomes).clear()
        self.layout_ids = {}
        memory.use_layout_ids(self.layout_ids)
        return 0

    cdef int store(self, KeyTable executions, KeyBuf* key, uint64_t h,
                   _Execution found) except -1:
        """Store a whole execution's outcome in ``executions`` under ``key`` (hash ``h``); a
        full table is cleared first."""
        if len(executions) >= MEMO_CAPACITY:
            executions.clear()
        executions.put(<char*>key.data, key.len * sizeof(int64_t), h, None, found)
        return 0

    def __len__(self):
        """Stored step outcomes (whole executions not counted)."""
        return sum(len(t) for t in self._by_device.values())


@cython.freelist(64)  # one per recorded step or execution
cdef class _Outcome:
    """One fused step's stored launch outcome, relative to the step's tensor order (fields:
    launch_memo.pxd)."""


@cython.freelist(64)
cdef class _Change:
    """What a step did to the tensor at position ``k`` of its order (launch_memo.pxd)."""


cdef class _Execution:
    """One whole execution's stored launch outcome (launch_memo.pxd)."""


# --- the keys ----------------------------------------------------------------------------------


cdef object _key(_StepRecord item, list order, Memory memory, KeyBuf* held):
    """The memo key of a fused step; fills ``held`` with each tensor's buffer and key
    (``_push_state``). Per
    tensor one int: its handle's layout id, the position of the step's first tensor to hold
    its buffer, and how many live handles use that buffer (or -1: no live handle).

    The key is a byte string of int64 slots (hashed once, compared with ``memcmp``): the
    optimization's ``id``, the dims, then one slot per tensor (three after a -2 where the
    three ints do not pack into one). ``None`` where a dim is no exact int64 int: such a step
    is not memoised (the C layout cores refuse it, and the stream goes to refimpl's walk)."""
    return _with_state(<int64_t><Py_ssize_t><PyObject*>item.optimization,  # its id()
                       _state(item.context, order, memory, held))


cdef object _state(_StepContext context, list order, Memory memory, KeyBuf* held):
    """``_push_state`` as a byte string (``None``: not memoisable)."""
    cdef KeyBuf b
    buf_init(&b)
    try:
        if not _push_state(&b, context, order, memory, held):
            return None
        return buf_bytes(&b)
    finally:
        buf_free(&b)


cdef object _with_state(int64_t head, object state):
    """A key: ``head`` then ``state`` (``None`` stays ``None``)."""
    cdef KeyBuf b
    if state is None:
        return None
    buf_init(&b)
    try:
        buf_push(&b, head)
        return buf_bytes(&b) + <bytes>state
    finally:
        buf_free(&b)


# layout ids under this share one key slot with the first holder's position and the users
cdef Py_ssize_t _LAYOUT_PACKED = (<Py_ssize_t>1) << 40
# positions searched one by one for a shared buffer's first holder; past them, a dict
cdef Py_ssize_t _SCAN_HOLDERS = 64


cdef inline int _reserve(KeyBuf* b, Py_ssize_t more) except -1:
    """Room for ``more`` slots past ``b.len`` (``_put`` then writes them unchecked)."""
    while b.cap - b.len < more:
        buf_grow(b)
    return 0


cdef inline void _put(KeyBuf* b, int64_t value) noexcept:
    """``buf_push`` into room ``_reserve`` made."""
    b.data[b.len] = value
    b.len += 1


cdef bint _push_state(KeyBuf* b, _StepContext context, list order, Memory memory,
                      KeyBuf* held) except -1:
    """The dims and the per-tensor slots of a key (``_key``), and in ``held`` two words per
    tensor: its buffer number (-1: no live handle) and its key in the memory's live table
    (``handles.tensor_key``): what a replay reads of the memory before it. False where a dim
    is no exact int64 int.

    The dims, the ids of ``order`` and the live entries are read as borrowed pointers (the
    tuple, the list and the table hold them, and nothing here changes those), without a
    reference counted per tensor; an exact ``int`` of one digit is read where CPython keeps
    it, any other id or dim goes through ``exact_long_long`` (``tensor_key``)."""
    cdef dict holders = None  # buffer -> its first holder's position, past _SCAN_HOLDERS
    cdef Py_ssize_t users, first, layout, buffer, i, q, n, k = 0
    cdef long long dim, tensor
    cdef tuple dims = context.dim_tuple()
    cdef PyObject* found
    cdef PyObject* item
    cdef Py_ssize_t* counts = memory._users
    n = len(dims)
    # room for the dims' count and the dims, then one slot per tensor below, written without
    # a check each; a tensor whose three ints do not pack into one slot reserves its three
    # more (rare: past 1024 users or positions). Reserving four per tensor made most keys
    # outgrow the buffer's inline slots, a heap block allocated and freed per key.
    _reserve(b, 1 + n)
    _put(b, n)
    for i in range(n):
        item = _tuple_item(<PyObject*>dims, i)
        if not (_type_at(item) == &PyLong_Type and _compact_at(item, &dim)) and \
                not exact_long_long(<object>item, &dim):
            return False
        _put(b, dim)
    n = len(order)
    _reserve(b, 1 + n)
    _reserve(held, 2 * n)
    _put(b, n)
    for i in range(n):
        item = _list_item(<PyObject*>order, i)
        if _type_at(item) == &PyLong_Type and _compact_at(item, &tensor) and tensor >= 0:
            pass
        elif not exact_long_long(<object>item, &tensor) or tensor < 0:
            tensor = tensor_key(<object>item)  # an id past int64 (or none)
        found = live_find(memory, tensor)  # memory.find, inline
        k += 1
        if found == NULL:
            _put(held, -1)
            _put(held, tensor)
            _put(b, -1)
            continue
        buffer = (<_Live>found).buffer
        _put(held, buffer)
        _put(held, tensor)
        users = counts[buffer]
        first = k - 1
        if users == 1:  # no other live handle holds the buffer: its first holder is this one
            pass
        elif k <= _SCAN_HOLDERS:  # the position of the first of the tensors to hold it
            for q in range(k - 1):
                if held.data[2 * q] == buffer:
                    first = q
                    break
        else:
            if holders is None:
                holders = {}
                for q in range(k - 2, -1, -1):  # the first holder of each buffer so far
                    if held.data[2 * q] >= 0:
                        holders[held.data[2 * q]] = q
            at = holders.get(buffer)
            if at is None:
                holders[buffer] = first
            else:
                first = <Py_ssize_t>at
        layout = (<_Live>found).layout
        if users < 1024 and first < 1024 and 0 <= layout < _LAYOUT_PACKED:
            _put(b, (layout * 1024 + first) * 1024 + users)
        else:
            _reserve(b, 3 + n - k + 1)  # the three, and one for each tensor left
            _put(b, -2)
            _put(b, layout)
            _put(b, first)
            _put(b, users)
    return True


cdef list _handles_of(const int64_t* held, Py_ssize_t n, Memory memory):
    """The live handle of each of the ``n`` tensors of a key's order (``None``: none): what
    ``_record`` compares the memory with after a step, read before it on a miss. The tensors
    are found by the live-table keys ``_push_state`` read into ``held`` (two words per
    tensor: its buffer, its key), no id converted again."""
    cdef list found = PyList_New(n)
    cdef PyObject* entry
    cdef Py_ssize_t k
    for k in range(n):
        entry = live_find(memory, held[2 * k + 1])
        handle = None if entry == NULL else live_handle(<_Live>entry)
        Py_INCREF(handle)  # the list's reference (PyList_SET_ITEM steals one)
        PyList_SET_ITEM(found, k, handle)
    return found


cdef _Outcome _record(object optimization, list order, const int64_t* held, object positions,
                      list before, Memory memory, object first_new, object widths,
                      list aliases):
    """What the step did, relative to ``order`` (positions; ``positions`` maps a global id to
    its position; ``held``: its tensors' live-table keys as ``_push_state`` read them) and to
    ``first_new`` (buffers); ``None`` where that cannot be said (a buffer or an alias outside
    the step's tensors)."""
    cdef Py_ssize_t k, end
    cdef _Change change
    cdef dict owner = None  # buffer -> position of the first tensor holding it before
    cdef list changes = []
    cdef _Outcome outcome = _Outcome.__new__(_Outcome)
    cdef PyObject* at_gid
    cdef _Live entry
    for k in range(len(order)):
        at_gid = live_find(memory, held[2 * k + 1])
        old = before[k]
        if at_gid == NULL:
            if old is not None:
                change = _Change.__new__(_Change)
                change.k, change.gone = k, True
                changes.append(change)
            continue
        entry = <_Live>at_gid
        h = live_handle(entry)
        if h is old:
            continue
        buffer = handle_buffer(h)
        if buffer >= first_new:
            fresh, at = True, buffer - first_new
        else:
            if owner is None:
                owner = _first_holders(before)
            found = owner.get(buffer)
            if found is None:  # a buffer the step's tensors did not hold before: nothing to
                return None  # replay it from
            fresh, at = False, found
        change = _Change.__new__(_Change)
        change.k, change.gone, change.fresh, change.at = k, False, fresh, at
        change.fields = handle_layout(h)
        change.layout = entry.layout
        changes.append(change)
    if aliases:
        outcome.aliases = _relative_aliases(positions, aliases)
        if outcome.aliases is None:
            return None
    else:
        outcome.aliases = ()
    outcome.optimization = optimization
    outcome.widths = widths
    outcome.changes = tuple(changes)
    end = memory.next_buffer
    outcome.new_buffers = end - <Py_ssize_t>first_new
    return outcome


cdef dict _first_holders(list before):
    """Buffer -> position of the first tensor whose handle (``before``) holds it."""
    cdef dict owner = {}
    cdef Py_ssize_t k
    for k in range(len(before)):
        h = before[k]
        if h is not None:
            buffer = handle_buffer(h)
            if buffer not in owner:
                owner[buffer] = k
    return owner


cdef tuple _relative_aliases(object position, object aliases):
    """``(output, input)`` global id pairs as positions (``position``: id -> position), or
    ``None`` where one is not there."""
    cdef list found = []
    for o, i in aliases:
        if o not in position or i not in position:
            return None
        found.append((position[o], position[i]))
    return tuple(found)


cdef list _replay(_Outcome outcome, list order, const int64_t* held, Memory memory):
    """Apply a stored outcome to ``memory`` (``held``: each tensor's buffer and key before, as
    ``_push_state`` read them); the step's global aliases (``None``: none).

    The buffers the step allocated are counted (``next_buffer``) but get no ``sizes`` entry:
    the walk's memory is its own (``launch_records`` makes it and drops it) and nothing in
    the walk reads ``sizes`` (an outcome keeps how many buffers its step allocated, not
    their sizes)."""
    cdef Py_ssize_t first_new, buffer, c
    cdef PyObject* change  # a _Change of the tuple (borrowed)
    cdef tuple changes = outcome.changes
    cdef list aliases = None  # None: the step aliases nothing (no list made)
    first_new = memory.next_buffer
    memory.next_buffer = first_new + outcome.new_buffers
    for c in range(len(changes)):
        change = _tuple_item(<PyObject*>changes, c)
        if (<_Change>change).gone:
            memory.remove_key(held[2 * (<_Change>change).k + 1])
            continue
        buffer = first_new + (<_Change>change).at if (<_Change>change).fresh \
            else held[2 * (<_Change>change).at]
        memory.register_at(held[2 * (<_Change>change).k + 1], (<_Change>change).fields, buffer,
                           (<_Change>change).layout)
    if outcome.aliases:
        aliases = _global_pairs(outcome.aliases, order)
    return aliases


cdef list _global_pairs(tuple pairs, list order):
    """Position pairs (an outcome's aliases) as global id pairs (``order``: id per position)."""
    cdef list found = []
    cdef tuple pair
    for item in pairs:
        pair = <tuple>item
        found.append((order[<Py_ssize_t>pair[0]], order[<Py_ssize_t>pair[1]]))
    return found

