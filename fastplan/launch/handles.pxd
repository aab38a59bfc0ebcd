# cython: language_level=3
"""C-level declaration of fastplan.launch.handles.Memory (fastplan.launch.execute reads its
state)."""

cimport cython
from cpython.ref cimport PyObject
from libc.stdint cimport uint64_t

from fastplan._keys cimport KeyTable
from fastplan.launch.handles_layouts cimport new_handle

cdef long long tensor_key(object tensor_id) except? -1
cdef bint replayable_op(object op) except -1


cdef class _Live:
    cdef object _handle  # the live Handle (``live_handle``), or None until it is first read
    cdef tuple _fields  # while ``_handle`` is None: its (shape, strides, offset, dtype)
    cdef Py_ssize_t buffer  # its buffer number
    cdef Py_ssize_t layout  # its layout id (Memory.layout_ids)
    cdef bint extent_fits  # fastplan.launch.launch found its buffer extent below 2**62 (kept: a
    #                        _Live's handle never changes)


cdef class _InputsMemo:
    cdef list specs  # per input in load order: (shape, strides, dtype) as its spec gave them
    cdef list made  # per input in load order: (handle, buffer length, layout id)
    cdef dict layout_ids  # the table the layout ids are from


ctypedef struct LiveSlot:
    long long key  # a tensor id's 64 bits (handles.tensor_key)
    PyObject* entry  # its _Live (a reference held by the table); NULL: the slot is free


@cython.final  # its calls among its own methods are direct, inlinable (no subclass)
cdef class Memory:
    cdef LiveSlot* _live  # tensor id (in [0, 2**64)) -> _Live: open addressing, linear probing
    cdef Py_ssize_t _live_cap  # slots (a power of two, or 0: not allocated)
    cdef Py_ssize_t _live_n  # entries
    cdef Py_ssize_t* _users  # buffer number -> live handles on it (burn: the handle's
    cdef Py_ssize_t _users_cap  # reference count); entries past the cap are 0
    cdef public dict sizes
    cdef public object next_buffer
    cdef public dict inputs
    cdef dict layout_ids
    cdef KeyTable _layout_index  # layout key words -> id, of what this memory found in ...
    cdef dict _index_of  # ... this table (``_layout_id``; another table: a new index)
    cdef list _undo  # while a trial runs: (tensor key, its old _Live or _ABSENT) pairs; else None
    cdef list _undo_users  # while a trial runs: (buffer number, its old count) pairs
    cdef object _undo_next_buffer  # next_buffer when the trial began

    cdef PyObject* find(self, long long key) noexcept
    cdef PyObject* live_entry(self, object tensor_id) except? NULL
    cdef int _put(self, long long key, _Live entry) except -1
    cdef int _replace(self, long long key, _Live entry) except -1
    cdef int _delete(self, long long key) except -1
    cdef int _grow(self) except -1
    cdef void _clear_live(self) noexcept
    cdef list _entries(self)
    cdef int _copy_live(self, Memory other) except -1
    cpdef Memory fork(self)
    cpdef adopt(self, Memory other)
    cpdef int begin_trial(self) except -1
    cpdef int keep_trial(self) except -1
    cpdef int undo_trial(self) except -1
    cdef Py_ssize_t _buffer(self, object number) except -1
    cdef object _alloc(self, tuple shape, object dtype, tuple strides)
    cdef object _alloc_as(self, object shape, object dtype, object strides)
    cdef int load_inputs_with(self, object stream, _InputsMemo memo) except -1
    cpdef register(self, object tensor_id, object handle)
    cdef Py_ssize_t _layout_id(self, object handle) except -1
    cdef int register_layout(self, object tensor_id, object handle, Py_ssize_t layout) except -1
    cdef int register_at(self, long long key, tuple fields, Py_ssize_t buffer,
                         Py_ssize_t layout) except -1
    cdef int remove_key(self, long long key) except -1
    cdef int _count(self, Py_ssize_t buffer, Py_ssize_t change) except -1
    cdef int _drop(self, long long key, _Live entry) except -1
    cpdef object handle(self, object tensor_id)
    cpdef object take(self, object tensor_id, object status)
    cpdef remove(self, object tensor_id)
    cdef int use_layout_ids(self, dict table) except -1
    cpdef Py_ssize_t users(self, object buffer)
    cpdef run_unfused(self, object op)
    cdef _run_unfused_any(self, object op)


cdef inline size_t live_home(long long key, Py_ssize_t cap) noexcept:
    """The first slot of a ``Memory``'s live table that ``key`` probes (Fibonacci hashing:
    consecutive ids spread out); ``cap`` is the table's size, a power of two."""
    return <size_t>((<uint64_t>key * <uint64_t>0x9E3779B97F4A7C15) >> 32) & <size_t>(cap - 1)


cdef inline PyObject* live_find(Memory memory, long long key) noexcept:
    """``memory.find(key)`` inline: the ``_Live`` of tensor key ``key`` (borrowed), or NULL.
    The launch memo's keys read every tensor of an execution through it."""
    cdef Py_ssize_t cap = memory._live_cap
    cdef LiveSlot* table = memory._live
    cdef size_t i
    if cap == 0:
        return NULL
    i = live_home(key, cap)
    while table[i].entry != NULL and table[i].key != key:
        i = (i + 1) & <size_t>(cap - 1)
    return table[i].entry


cdef inline object live_handle(_Live entry):
    """The live entry's ``Handle``, built on the first read where it was registered by its
    fields (``Memory.register_at``)."""
    cdef tuple fields
    if entry._handle is None:
        fields = entry._fields
        entry._handle = new_handle(entry.buffer, fields[0], fields[1], fields[2], fields[3])
        entry._fields = None
    return entry._handle
