# cython: language_level=3
"""Simulated device memory for launch planning: tensor handles and the buffers behind them.

burn counterpart: ``CubeFusionHandle`` / ``HandleContainer`` and ``burn-cubecl``'s metadata ops.
Mirrors ``refimpl/planner/launch/handles.py`` for the planning-only use (layouts, never values):
same names; ``Handle`` is refimpl's frozen dataclass, so handles compare equal across the twins.
Split along its seams: the ``Memory`` here, handle layouts (building a handle, buffer lengths,
layout ids, the metadata ops' views: ``UNFUSED_LAYOUTS``) in ``handles_layouts``, and what
launch planning reads of an op (``op_nodes``, ``init_targets``) in ``handles_ops``.

Differs from refimpl (bookkeeping, not results):

* a use count per buffer is kept as handles come and go, so ``users(buffer)`` (burn
  ``handle.can_mut()``) is one lookup; a tensor's handle, buffer number and layout id live in
  one entry (``_Live``) of a C table keyed by the id's 64 bits (``live_find``, inline in
  handles.pxd). An id that is no exact int in [0, 2**64) (burn's u64 ``TensorId``), or a
  handle on a buffer this memory did not allocate, raises ``BoundaryError``, and the planner's
  launch planning then runs refimpl's walk;
* ``sizes`` is shared by a memory and its forks instead of copied: an entry is a fact about a
  buffer number;
* a launch that may fail runs as a *trial* on the memory itself (``begin_trial``, then
  ``keep_trial`` or ``undo_trial``) where refimpl runs it on a fork: a fork copies every live
  handle, a trial notes only what it changes;
* an entry registered by its handle's fields (``register_at``, the launch memo's replay)
  builds its ``Handle`` on the first read (``live_handle``);
* layout ids come from a ``KeyTable`` probed with the layout's words (``_layout_id``);
* ``with_values`` is always false: values are ``refimpl.planner.launch.handles.Memory``'s job.

``fastplan.launch.execute`` runs a whole executed stream against one ``Memory``;
``fastplan.launch.launch.plan_launch`` accepts it wherever it accepts refimpl's.
"""

from cpython.bytes cimport PyBytes_FromStringAndSize
from cpython.long cimport PyLong_AsUnsignedLongLong
from cpython.ref cimport Py_DECREF, Py_INCREF, Py_XDECREF, PyObject
from libc.stdint cimport int64_t, uint64_t
from libc.string cimport memcpy, memset

cimport cython

from fastplan._keys cimport (
    F_RANGES, F_TENSOR, F_TENSORS, KeyTable, StructInfo, exact_codes, exact_long_long,
    field_offset, key_hash, slot, slots, struct_info, tensor_id as tensor_id_of,
)
from fastplan._vec cimport mem_calloc, mem_free, mem_malloc, mem_realloc
from fastplan.launch.handles_layouts cimport (
    _buffer_of, _contiguous, _handle, _layout_words, _view, buffer_length, layout_id,
)
from fastplan.launch.handles_ops cimport _inputs, init_targets_c

from fastplan._keys import BoundaryError
from fastplan.launch.handles_layouts import UNFUSED_LAYOUTS
from fastplan.launch.handles_ops import init_targets

from refimpl.errors import TensorIdError
from refimpl.ir import FieldKind, OperationIr, TensorIr, TensorStatus
from refimpl.ops import OPS, OpKind
from refimpl.planner.launch.handles import MEMORY_ALIGNMENT_BYTES, Handle
from refimpl.stream import InputSpec

cdef object _ABSENT = object()  # a trial's note: the key was not in the dict

__all__ = [
    "MEMORY_ALIGNMENT_BYTES",
    "Handle",
    "Memory",
    "UNFUSED_LAYOUTS",
    "unfused_view",
    "init_targets",
]

cdef object _READ_WRITE = TensorStatus.ReadWrite
cdef object _DROP = OpKind.DROP
cdef object _INIT = OpKind.INIT
cdef object _VIEW_KINDS = (OpKind.VIEW, OpKind.MOVEMENT)


cdef object _TENSOR = FieldKind.TENSOR
cdef object _TENSORS = FieldKind.TENSORS
cdef dict _INPUT_FIELDS = {}  # operand struct type -> ((field, is a tuple of tensors), ...)
cdef dict _HAS_OUT = {}  # operand struct type -> whether it has an ``out`` field


# Handle's fields at their slot offsets (read directly once the exact type is checked).
cdef Py_ssize_t _H_BUFFER = field_offset(Handle, "buffer")
cdef Py_ssize_t _H_SHAPE = field_offset(Handle, "shape")
cdef Py_ssize_t _H_STRIDES = field_offset(Handle, "strides")
cdef Py_ssize_t _H_OFFSET = field_offset(Handle, "offset")
cdef Py_ssize_t _H_DTYPE = field_offset(Handle, "dtype")
cdef Py_ssize_t _I_SHAPE = field_offset(InputSpec, "shape")
cdef Py_ssize_t _I_STRIDES = field_offset(InputSpec, "strides")
cdef Py_ssize_t _I_DTYPE = field_offset(InputSpec, "dtype")

# What ``run_unfused`` does with each op of the op table, by op code.
cdef enum:
    _PLAIN = 0  # a kernel writing a fresh buffer
    _VIEW = 1  # a view or movement op: ``UNFUSED_LAYOUTS`` may lay it out on its input
    _RELEASE = 2  # Drop
    _CREATE = 3  # Init

cdef unsigned char _ACTIONS[512]
assert len(OPS) <= 512
for _op in OPS:
    _ACTIONS[_op.code] = (_RELEASE if _op.kind is _DROP else _CREATE if _op.kind is _INIT
                          else _VIEW if _op.kind in _VIEW_KINDS else _PLAIN)
cdef tuple _VARIANTS = tuple([op.variant for op in OPS])


cdef bint replayable_op(object op) except -1:
    """Whether ``run_unfused`` lays ``op`` out from its relative form alone: an exact op of
    the op table that creates nothing (``Init`` reads the stream's input specs) and has no
    ranges (``Slice``'s are stashed values, not part of an op's relative key)."""
    cdef int64_t code, struct_code
    cdef const StructInfo* info
    cdef Py_ssize_t f
    if not exact_codes(op, &code, &struct_code) or _ACTIONS[code] == _CREATE:
        return False
    info = struct_info(struct_code)
    for f in range(info.n_fields):
        if info.kinds[f] == F_RANGES:
            return False
    return True


cdef bint _same_ints(object a, object b) noexcept:
    """``a`` and ``b`` are tuples of the same exact ints (what equal tuples of ``int`` are,
    without ``True == 1``)."""
    cdef Py_ssize_t i
    cdef long long x, y
    if type(a) is not tuple or type(b) is not tuple or len(<tuple>a) != len(<tuple>b):
        return False
    for i in range(len(<tuple>a)):
        if not (exact_long_long((<tuple>a)[i], &x) and exact_long_long((<tuple>b)[i], &y)
                and x == y):
            return False
    return True


cdef bint _same_spec(tuple known, object shape, object strides, object dtype) noexcept:
    """An input spec's layout is the one ``known`` (shape, strides, dtype) recorded."""
    if dtype is not known[2] or not _same_ints(shape, known[0]):
        return False
    if strides is None or known[1] is None:
        return strides is None and known[1] is None
    return _same_ints(strides, known[1])


@cython.final
cdef class _InputsMemo:
    """The layouts of the stream inputs a fresh ``Memory`` loaded last, and the handles it
    made of them (``Memory.load_inputs_with``): a runtime's next iteration loads inputs of
    the same layouts under new tensor ids. fastplan.launch.launch_memo keeps one per
    ``LaunchMemo``."""

    def __init__(self):
        self.specs, self.made, self.layout_ids = [], [], None


def _load_inputs_memoized(stream, _InputsMemo memo, dict layout_ids):
    """A fresh ``Memory`` taking its layout ids from ``layout_ids`` that loaded ``stream``'s
    inputs through ``memo``, as fastplan.launch.execute loads them (for the tests)."""
    cdef Memory memory = Memory()
    memory.use_layout_ids(layout_ids)
    memory.load_inputs_with(stream, memo)
    return memory


@cython.no_gc
@cython.freelist(256)
cdef class _Live:
    """A live tensor: its handle, that handle's buffer number and its layout id, found with one
    probe of the tensor id (``fastplan.launch.launch_memo`` keys its memo on them). The handle of
    an entry the launch memo replayed is built when something first reads it
    (``live_handle``): most are dropped again unread. It holds no reference cycle (its
    handle, or the fields tuple of one), so the collector need not see it."""


cdef inline _Live _new_live(object handle, Py_ssize_t buffer, Py_ssize_t layout):
    cdef _Live entry = _Live.__new__(_Live)
    entry._handle, entry.buffer, entry.layout = handle, buffer, layout
    entry.extent_fits = False
    return entry


cdef object _U64_END = 1 << 64


cdef long long tensor_key(object tensor_id) except? -1:
    """A tensor id as a key of the live table: an exact ``int`` in [0, 2**64) (burn's
    ``TensorId`` is a u64; the stream loader builds such ids), kept as the int64 of the same 64
    bits. Any other id is outside fastplan's boundary (``BoundaryError``; the planner then
    plans the launch with refimpl, as for the search)."""
    cdef long long key
    if type(tensor_id) is not int:
        raise BoundaryError(f"fastplan's Memory takes int tensor ids, not "
                            f"{type(tensor_id).__name__}")
    if exact_long_long(tensor_id, &key):
        if key >= 0:
            return key
    elif 0 < tensor_id < _U64_END:  # past int64, so [2**63, 2**64): the int64 of its bits
        return <long long>PyLong_AsUnsignedLongLong(tensor_id)
    raise BoundaryError(f"tensor id {tensor_id} is outside [0, 2**64) (burn's u64 TensorId)")


cdef inline object _tensor_id_of_key(long long key):
    """The tensor id a key stands for (``tensor_key``'s inverse)."""
    return <unsigned long long>key


cdef inline size_t _home(long long key, Py_ssize_t cap) noexcept:
    """The first slot a key probes (``live_home``, handles.pxd: ``live_find`` probes the
    same way)."""
    return live_home(key, cap)


cdef inline size_t _slot(LiveSlot* table, Py_ssize_t cap, long long key) noexcept:
    """The slot holding ``key`` in ``table`` (``cap`` slots, never full), or the free slot its
    probe ends at: where it goes."""
    cdef size_t i = _home(key, cap)
    while table[i].entry != NULL and table[i].key != key:
        i = (i + 1) & <size_t>(cap - 1)
    return i


cdef class Memory:
    """Live handles and the buffers behind them.

    Mirrors refimpl.planner.launch.handles.Memory (planning only: ``with_values`` is false)."""

    # _live: tensor id -> _Live (handle, buffer number, layout id from layout_ids: a fresh
    # table, or the one of the LaunchMemo this memory plans for); _users: buffer number ->
    # live handles on it; sizes: buffer -> elements (attributes in handles.pxd)

    def __init__(self, with_values=False):
        if with_values:
            raise ValueError("fastplan.launch.handles.Memory plans layouts only "
                             "(with_values=False); values are "
                             "refimpl.planner.launch.handles.Memory's")
        self.sizes, self.inputs = {}, {}
        self.layout_ids = {}
        self.next_buffer = 0

    def __dealloc__(self):
        self._clear_live()
        mem_free(self._users)

    @property
    def with_values(self):
        return False

    @property
    def handles(self):
        """Tensor id -> live ``Handle`` (a snapshot: refimpl's ``Memory.handles``)."""
        return {_tensor_id_of_key(key): live_handle(<_Live>entry)
                for key, entry in self._entries()}

    @property
    def layouts(self):
        """Tensor id -> layout id of its live handle (a snapshot)."""
        return {_tensor_id_of_key(key): (<_Live>entry).layout
                for key, entry in self._entries()}

    # --- the live table -------------------------------------------------------------------

    cdef PyObject* find(self, long long key) noexcept:
        """The ``_Live`` of tensor id ``key`` (borrowed), or NULL."""
        return live_find(self, key)

    cdef PyObject* live_entry(self, object tensor_id) except? NULL:
        """``find`` for a tensor id as given (``BoundaryError`` for one outside the table)."""
        return live_find(self, tensor_key(tensor_id))

    cdef int _put(self, long long key, _Live entry) except -1:
        """Set the ``_Live`` of tensor id ``key``."""
        cdef LiveSlot* at
        cdef PyObject* old
        if 2 * (self._live_n + 1) > self._live_cap:
            self._grow()
        at = &self._live[_slot(self._live, self._live_cap, key)]
        old = at.entry
        Py_INCREF(entry)
        at.key, at.entry = key, <PyObject*>entry
        if old == NULL:
            self._live_n += 1
        else:
            Py_DECREF(<object>old)
        return 0

    cdef int _delete(self, long long key) except -1:
        """Forget tensor id ``key``; the entries after it in its run move back (no tombstones:
        a probe still stops at the first free slot)."""
        cdef size_t mask, i, j, home
        cdef PyObject* old
        if self._live_cap == 0:
            return 0
        mask = <size_t>(self._live_cap - 1)
        i = _slot(self._live, self._live_cap, key)
        old = self._live[i].entry
        if old == NULL:
            return 0
        j = i
        while True:
            j = (j + 1) & mask
            if self._live[j].entry == NULL:
                break
            home = _home(self._live[j].key, self._live_cap)
            # the entry at j stays where its probe from ``home`` passes no free slot at i
            if (i < home <= j) if i <= j else (i < home or home <= j):
                continue
            self._live[i] = self._live[j]
            i = j
        self._live[i].entry = NULL
        self._live_n -= 1
        Py_DECREF(<object>old)
        return 0

    cdef int _grow(self) except -1:
        """Double the table (or allocate it), keeping every entry."""
        cdef LiveSlot* old = self._live
        cdef Py_ssize_t old_cap = self._live_cap, i
        cdef Py_ssize_t cap = 2 * old_cap if old_cap else 64
        cdef LiveSlot* table = <LiveSlot*>mem_calloc(cap, sizeof(LiveSlot))
        if table == NULL:
            raise MemoryError()
        for i in range(old_cap):
            if old[i].entry != NULL:  # the reference moves with it
                table[_slot(table, cap, old[i].key)] = old[i]
        self._live, self._live_cap = table, cap
        mem_free(old)
        return 0

    cdef void _clear_live(self) noexcept:
        """Drop every live entry and free the table (detached first: the memory is empty
        while the entries go)."""
        cdef LiveSlot* table = self._live
        cdef Py_ssize_t i, cap = self._live_cap
        self._live, self._live_cap, self._live_n = NULL, 0, 0
        for i in range(cap):
            Py_XDECREF(table[i].entry)
        mem_free(table)

    cdef list _entries(self):
        """``(key, _Live)`` of every live tensor, in table order (``tensor_key``'s keys)."""
        cdef Py_ssize_t i
        cdef list found = []
        for i in range(self._live_cap):
            if self._live[i].entry != NULL:
                found.append((self._live[i].key, <object>self._live[i].entry))
        return found

    # --- copies ---------------------------------------------------------------------------

    cpdef Memory fork(self):
        """A copy: a launch that fails is rolled back by discarding it."""
        cdef Memory other = Memory.__new__(Memory)
        other._copy_live(self)
        other.sizes, other.inputs, other.layout_ids = self.sizes, self.inputs, self.layout_ids
        other.next_buffer = self.next_buffer
        return other

    cpdef adopt(self, Memory other):
        """Take ``other``'s state (commit a fork): its sizes are shared, as refimpl shares its
        dicts; its live entries and use counts are copied."""
        if other is not self:
            self._copy_live(other)
            self.sizes, self.next_buffer = other.sizes, other.next_buffer

    cdef int _copy_live(self, Memory other) except -1:
        """Make this memory's live entries and use counts ``other``'s (the entries are shared:
        a ``_Live`` never changes once in a table, but for ``use_layout_ids``)."""
        cdef Py_ssize_t* users = NULL
        if other._users_cap:
            users = <Py_ssize_t*>mem_malloc(other._users_cap * sizeof(Py_ssize_t))
            if users == NULL:
                raise MemoryError()
            memcpy(users, other._users, other._users_cap * sizeof(Py_ssize_t))
        mem_free(self._users)
        self._users, self._users_cap = users, other._users_cap
        self._clear_live()
        for key, entry in other._entries():
            self._put(key, <_Live>entry)
        return 0

    cpdef int begin_trial(self) except -1:
        """Run what follows as a trial: ``keep_trial`` keeps its changes, ``undo_trial`` puts
        the memory back as it was here (a fork adopted or discarded, without the copy). Trials
        do not nest."""
        if self._undo is not None:
            raise RuntimeError("a Memory trial is already running")
        self._undo, self._undo_users = [], []
        self._undo_next_buffer = self.next_buffer
        return 0

    cpdef int keep_trial(self) except -1:
        self._undo = self._undo_users = None
        return 0

    cpdef int undo_trial(self) except -1:
        """Put back every live entry and use count the trial changed, latest change first,
        and the buffer count (``sizes`` entries of the trial's buffers stay, as for a
        discarded fork; so does the use-count array's length, its new entries at 0)."""
        cdef list undo = self._undo, counts = self._undo_users
        cdef Py_ssize_t i
        if undo is None:
            return 0
        self._undo = self._undo_users = None
        for i in range(len(undo) - 2, -1, -2):
            key, old = undo[i], undo[i + 1]
            if old is _ABSENT:
                self._delete(<long long>key)
            else:
                self._put(<long long>key, <_Live>old)
        for i in range(len(counts) - 2, -1, -2):
            self._users[<Py_ssize_t>counts[i]] = <Py_ssize_t>counts[i + 1]
        self.next_buffer = self._undo_next_buffer
        return 0

    # --- buffers and handles --------------------------------------------------------------

    def alloc(self, shape, dtype, strides=None):
        """A fresh buffer laid out with ``strides`` (contiguous by default)."""
        return self._alloc_as(shape, dtype, strides)

    cdef object _alloc_as(self, object shape, object dtype, object strides):
        """``alloc`` (shape and strides as any sequences; no strides: contiguous)."""
        shape = tuple(shape)
        return self._alloc(shape, dtype, _contiguous(shape) if strides is None
                           else tuple(strides))

    cdef object _alloc(self, tuple shape, object dtype, tuple strides):
        buffer = self.next_buffer
        self.next_buffer = buffer + 1
        self.sizes[buffer] = buffer_length(shape, strides)
        return _handle(buffer, shape, strides, 0, dtype)

    cdef Py_ssize_t _buffer(self, object number) except -1:
        """A handle's buffer number as an index of the use counts: a buffer this memory
        allocated (an exact int below ``next_buffer``), what every handle of fastplan's walk
        carries. Any other number is outside the boundary (``BoundaryError``)."""
        cdef long long buffer = -1, end = 0
        cdef Py_ssize_t cap
        cdef Py_ssize_t* grown
        if (not exact_long_long(number, &buffer) or not exact_long_long(self.next_buffer, &end)
                or not 0 <= buffer < end or buffer >= (1LL << 40)):
            raise BoundaryError(f"buffer {number!r} was not allocated by this fastplan Memory "
                                f"(next_buffer {self.next_buffer!r})")
        if buffer >= self._users_cap:
            cap = max(64, 2 * self._users_cap, buffer + 1)
            grown = <Py_ssize_t*>mem_realloc(self._users, cap * sizeof(Py_ssize_t))
            if grown == NULL:
                raise MemoryError()
            memset(grown + self._users_cap, 0, (cap - self._users_cap) * sizeof(Py_ssize_t))
            self._users, self._users_cap = grown, cap
        return buffer

    cpdef register(self, object tensor_id, object handle):
        self.register_layout(tensor_id, handle, self._layout_id(handle))

    cdef Py_ssize_t _layout_id(self, object handle) except -1:
        """``layout_id(self.layout_ids, handle)``, found first in this memory's index of the
        table (``_layout_index``: the key's words probed where they lie, no ``bytes`` object
        made and hashed for a layout seen before). The table only grows while it is this
        memory's (a memo starting afresh gives it a new one): what the index holds, it holds."""
        cdef int64_t words[20]
        cdef Py_ssize_t n
        cdef uint64_t h
        cdef PyObject* found
        table = self.layout_ids
        if type(handle) is Handle:
            n = _layout_words(words, slot(handle, _H_SHAPE), slot(handle, _H_STRIDES),
                              slot(handle, _H_OFFSET), slot(handle, _H_DTYPE))
        else:
            n = -1
        if n < 0 or type(table) is not dict:
            return layout_id(table, handle)
        if self._index_of is not table:
            self._layout_index, self._index_of = KeyTable(), table
        h = key_hash(<char*>words, n * sizeof(int64_t))
        found = self._layout_index.find(<char*>words, n * sizeof(int64_t), h)
        if found != NULL:
            return <Py_ssize_t><object>found
        key = PyBytes_FromStringAndSize(<char*>words, n * sizeof(int64_t))
        value = (<dict>table).get(key)
        if value is None:
            value = (<dict>table)[key] = len(<dict>table)
        self._layout_index.put(<char*>words, n * sizeof(int64_t), h, key, value)
        return <Py_ssize_t>value

    cdef int register_layout(self, object tensor_id, object handle,
                             Py_ssize_t layout) except -1:
        """``register`` with the handle's layout id already known."""
        cdef long long key = tensor_key(tensor_id)
        cdef Py_ssize_t buffer = self._buffer(_buffer_of(handle))
        self._replace(key, _new_live(handle, buffer, layout))
        return 0

    cdef int _replace(self, long long key, _Live entry) except -1:
        """``entry`` becomes the live handle of tensor ``key``: the use counts of the buffer
        it leaves and of the one it takes, the undo log where one is kept."""
        cdef PyObject* found = live_find(self, key)
        old = _ABSENT if found == NULL else <_Live>found
        if found != NULL:
            self._count((<_Live>old).buffer, -1)
        if self._undo is not None:
            self._undo.append(key)
            self._undo.append(old)
        self._count(entry.buffer, 1)
        self._put(key, entry)
        return 0

    cdef int register_at(self, long long key, tuple fields, Py_ssize_t buffer,
                         Py_ssize_t layout) except -1:
        """``register_layout`` for a tensor key (``tensor_key``'s) and a handle given by its
        buffer number and its ``(shape, strides, offset, dtype)``: a buffer this memory
        allocated (below ``next_buffer``; the launch memo's replay, which read it from the
        memory). The ``Handle`` is built when first read (``live_handle``)."""
        cdef _Live entry
        if not 0 <= buffer < (1LL << 40):
            raise BoundaryError(f"buffer {buffer} was not allocated by this fastplan Memory")
        if buffer >= self._users_cap:
            self._buffer(buffer)  # grows the use counts
        entry = _new_live(None, buffer, layout)
        entry._fields = fields
        self._replace(key, entry)
        return 0

    cdef int remove_key(self, long long key) except -1:
        """``remove`` for a tensor key (``tensor_key``'s)."""
        cdef PyObject* found = live_find(self, key)
        if found != NULL:
            self._drop(key, <_Live>found)
        return 0

    cdef int _count(self, Py_ssize_t buffer, Py_ssize_t change) except -1:
        """Add ``change`` to the use count of ``buffer`` (noted in a trial)."""
        if self._undo is not None:
            self._undo_users.append(buffer)
            self._undo_users.append(self._users[buffer])
        self._users[buffer] += change
        return 0

    cdef int _drop(self, long long key, _Live entry) except -1:
        """Forget the live ``entry`` of tensor id ``key`` (the caller holds ``entry``)."""
        self._count(entry.buffer, -1)
        if self._undo is not None:
            self._undo.append(key)
            self._undo.append(entry)
        return self._delete(key)

    cpdef object handle(self, object tensor_id):
        """The live handle of ``tensor_id`` (kept)."""
        cdef PyObject* found = self.live_entry(tensor_id)
        if found == NULL:
            raise TensorIdError(f"tensor {tensor_id} has no live handle")
        return live_handle(<_Live>found)

    cpdef object take(self, object tensor_id, object status):
        """burn ``get_handle``: a ``ReadWrite`` fetch removes the handle, ``ReadOnly`` keeps it."""
        cdef _Live entry
        cdef long long key = tensor_key(tensor_id)
        cdef PyObject* found = live_find(self, key)
        if found == NULL:
            raise TensorIdError(f"tensor {tensor_id} has no live handle")
        entry = <_Live>found
        if status is _READ_WRITE:
            self._drop(key, entry)
        return live_handle(entry)

    cpdef remove(self, object tensor_id):
        cdef _Live entry
        cdef long long key = tensor_key(tensor_id)
        cdef PyObject* found = live_find(self, key)
        if found != NULL:
            entry = <_Live>found
            self._drop(key, entry)

    cdef int use_layout_ids(self, dict table) except -1:
        """Take layout ids from ``table`` from now on; the live handles' ids are taken again."""
        cdef Py_ssize_t i
        cdef _Live entry
        self.layout_ids = table
        for i in range(self._live_cap):
            if self._live[i].entry != NULL:
                entry = <_Live>self._live[i].entry
                entry.layout = layout_id(table, live_handle(entry))
        return 0

    cpdef Py_ssize_t users(self, object buffer):
        """How many live handles use ``buffer``."""
        cdef long long at
        if type(buffer) is not int:  # refimpl's rule, for a number equal to an int (True, 1.0)
            return sum([1 for _, entry in self._entries() if (<_Live>entry).buffer == buffer])
        if exact_long_long(buffer, &at) and 0 <= at < self._users_cap:
            return self._users[at]
        return 0

    def load_inputs(self, stream):
        """A buffer per stream input, laid out with its strides; ``Init`` targets wait."""
        self.load_inputs_with(stream, None)

    cdef int load_inputs_with(self, object stream, _InputsMemo memo) except -1:
        """``load_inputs``, taking the handles ``memo`` holds where it can: a memory that
        starts empty gives the input it loads k-th the buffer number k, so an input whose
        spec has the layout of the k-th one loaded last time (equal exact-int shape and
        strides, the same dtype) gets that handle, buffer length and layout id again,
        whatever its tensor id. ``memo`` (may be None) then holds this stream's."""
        cdef Py_ssize_t k = 0, layout
        cdef bint reuse = (memo is not None and self._live_n == 0 and not self.sizes
                           and type(self.next_buffer) is int and self.next_buffer == 0)
        cdef tuple made
        if reuse and memo.layout_ids is not self.layout_ids:  # its layout ids are not ours
            memo.specs, memo.made, memo.layout_ids = [], [], self.layout_ids
        self.inputs = dict(stream.inputs)
        deferred = init_targets_c(stream)
        for tensor_id in sorted(stream.inputs):
            if tensor_id in deferred:
                continue
            spec = stream.inputs[tensor_id]
            if type(spec) is InputSpec:  # its fields at their slots
                shape, dtype = slot(spec, _I_SHAPE), slot(spec, _I_DTYPE)
                strides = slot(spec, _I_STRIDES)
            else:
                shape, dtype, strides = spec.shape, spec.dtype, spec.strides
            if reuse and k < len(memo.specs) and _same_spec(<tuple>memo.specs[k], shape,
                                                            strides, dtype):
                made = memo.made[k]
                self.next_buffer = k + 1
                self.sizes[k] = made[1]
                self.register_layout(tensor_id, made[0], <Py_ssize_t>made[2])
            else:  # ``register``, its layout id kept for the memo
                handle = self._alloc_as(shape, dtype, strides)
                layout = self._layout_id(handle)
                self.register_layout(tensor_id, handle, layout)
                if reuse:
                    made = (handle, self.sizes[k], layout)
                    if k < len(memo.specs):
                        memo.specs[k], memo.made[k] = (shape, strides, dtype), made
                    else:
                        memo.specs.append((shape, strides, dtype))
                        memo.made.append(made)
            k += 1
        return 0

    # --- unfused ops ----------------------------------------------------------------------

    cpdef run_unfused(self, object op):
        """Execute one op as its own kernel: output layout, releases."""
        cdef int64_t code, struct_code
        cdef const StructInfo* info
        cdef Py_ssize_t f
        cdef list reads
        if not exact_codes(op, &code, &struct_code):
            return self._run_unfused_any(op)
        desc = slot(op, slots().desc)
        action = _ACTIONS[code]
        if action == _RELEASE:
            self.remove(tensor_id_of(desc.tensor))
            return
        info = struct_info(struct_code)
        if action == _CREATE or info.out_field < 0:
            return self._run_unfused_any(op)
        reads = []  # op.inputs(): the tensors it reads, in field order
        for f in range(info.n_fields):
            if f == info.out_field:
                continue
            if info.kinds[f] == F_TENSOR:
                reads.append(slot(desc, info.offsets[f]))
            elif info.kinds[f] == F_TENSORS:
                reads.extend(slot(desc, info.offsets[f]))
        if action == _VIEW and not reads:  # refimpl's unfused_view fails on it: its way
            return self._run_unfused_any(op)
        source = None
        for tensor in reads:
            found = self.handle(tensor_id_of(tensor))
            if source is None:
                source = found
        out = slot(desc, info.offsets[info.out_field])
        handle = None
        if action == _VIEW:
            handle = _view(op, _VARIANTS[code], source)
        if handle is None:
            if type(out) is TensorIr:
                shape = tuple(slot(out, slots().shape))
                dtype = slot(out, slots().dtype)
            else:
                shape = tuple(out.shape)
                dtype = out.dtype
            handle = self._alloc(shape, dtype, _contiguous(shape))
        for tensor in reads:
            if (slot(tensor, slots().status) if type(tensor) is TensorIr
                    else tensor.status) is _READ_WRITE:
                self.remove(tensor_id_of(tensor))
        self.register(tensor_id_of(out), handle)

    cdef _run_unfused_any(self, object op):
        """``run_unfused`` for any op answering ``op``, ``desc`` and ``inputs()``."""
        entry = op.op
        kind = entry.kind
        if kind is _DROP:
            self.remove(op.desc.tensor.id)
            return
        desc = op.desc
        if kind is _INIT:
            out = desc.out
            self.inputs[out.id]  # refimpl reads the spec: an unknown target is a KeyError
            self.register(out.id, self.alloc(out.shape, out.dtype))
            return
        reads = _inputs(op) if type(op) is OperationIr else op.inputs()
        handles = {}
        for tensor in reads:
            handles[tensor.id] = self.handle(tensor.id)
        out = desc.out
        view = unfused_view(op, handles)
        handle = view if view is not None else self.alloc(out.shape, out.dtype)
        for tensor in reads:
            if tensor.status is _READ_WRITE:
                self.remove(tensor.id)
        self.register(out.id, handle)


def unfused_view(op, handles):
    """The output handle of a metadata op (sharing its input's buffer), or ``None`` when the

    Mirrors refimpl.planner.launch.handles.unfused_view.
    """
    entry = op.op
    view = UNFUSED_LAYOUTS.get(entry.variant)
    if view is None or entry.kind not in _VIEW_KINDS:
        return None
    source = (_inputs(op) if type(op) is OperationIr else op.inputs())[0]
    result = view(op, handles[source.id])
    if result is None:
        return None
    dtype = op.desc.out.dtype
    if result.dtype is dtype:
        return result
    return _handle(result.buffer, result.shape, result.strides, result.offset, dtype)
