# cython: language_level=3
"""Growable C arrays and the undo log that fastplan's planning state is made of (header only).

burn counterpart: none. refimpl keeps its state in lists and dicts and tries an op on a clone;
fastplan keeps the same state in ``Vec``s and tries an op in place, recording how to undo it
(docs/fastplan.md, "Trials"):

* a ``Vec`` holds items of one size; ``vec_push`` appends a zeroed slot and returns it;
* while a ``Log`` is open (``depth > 0``) every push and every ``set_bytes`` records the old
  bytes, and ``log_rollback`` restores them newest first. Records name a vector and an index,
  never an address inside a vector's buffer, so a buffer may move (realloc) in between.

Functions return 0 on success and -1 when memory runs out (the caller raises ``MemoryError``).
Their memory, and every other C block of fastplan's planning state, comes from CPython's
object allocator (``mem_malloc`` and the others below): the blocks are small and
short-lived (a trial clones a block's vectors), where pymalloc is cheaper than the C library's
``malloc``.
Indices are checked (abort with a message) only in debug builds (``FASTPLAN_DEBUG_CHECKS``,
set by setup.py under ``FASTPLAN_CYTHON_DEBUG=1``).
"""

from libc.stdint cimport int64_t
from libc.string cimport memcpy, memset

cdef extern from "Python.h":
    # CPython's PyMem_* functions (pymalloc). They need the GIL, and fastplan holds it in every
    # call: it has no ``nogil`` section. They are declared ``nogil`` here only so that the
    # helpers marked ``nogil`` (they touch no Python object) may call them.
    void* mem_malloc "PyMem_Malloc"(size_t n) noexcept nogil
    void* mem_calloc "PyMem_Calloc"(size_t nelem, size_t elsize) noexcept nogil
    void* mem_realloc "PyMem_Realloc"(void* p, size_t n) noexcept nogil
    void mem_free "PyMem_Free"(void* p) noexcept nogil

cdef extern from *:
    """
    #ifndef FASTPLAN_DEBUG_CHECKS
    #define FASTPLAN_DEBUG_CHECKS 0
    #endif
    #include <stdio.h>
    #include <stdlib.h>
    static void fastplan_out_of_range(Py_ssize_t i, Py_ssize_t n) {
        fprintf(stderr, "fastplan: index %zd out of range 0..%zd\\n", i, n);
        abort();
    }
    """
    bint FASTPLAN_DEBUG_CHECKS
    void fastplan_out_of_range(Py_ssize_t i, Py_ssize_t n) noexcept nogil

cdef enum:
    UNDO_BYTES = 48  # the largest change one record can undo (an Arg is 32 bytes)


ctypedef struct Vec:
    char* data  # len items of itemsize bytes; NULL while cap == 0
    Py_ssize_t len  # items in use
    Py_ssize_t cap  # items allocated
    Py_ssize_t itemsize  # bytes per item


ctypedef struct UndoRec:
    Vec* vec  # the vector changed (NULL: ``addr`` is a plain field)
    char* addr  # the plain field changed (vec is NULL)
    Py_ssize_t index  # the item changed; -1: the vector's length
    Py_ssize_t offset  # byte offset of the change inside the item
    Py_ssize_t size  # bytes changed (<= UNDO_BYTES)
    char old[UNDO_BYTES]  # their previous value


ctypedef struct Log:
    Vec recs  # UndoRec, oldest first
    int depth  # open trials; records are kept only while depth > 0


cdef inline void vec_init(Vec* v, Py_ssize_t itemsize) noexcept nogil:
    v.data = NULL
    v.len = 0
    v.cap = 0
    v.itemsize = itemsize


cdef inline void vec_free(Vec* v) noexcept nogil:
    mem_free(v.data)
    v.data = NULL
    v.len = 0
    v.cap = 0


cdef inline int vec_reserve(Vec* v, Py_ssize_t n) noexcept nogil:
    cdef Py_ssize_t cap = v.cap if v.cap > 0 else 4
    cdef char* data
    if n <= v.cap:
        return 0
    while cap < n:
        if cap > (<Py_ssize_t>1 << 40):
            return -1
        cap *= 2
    data = <char*>mem_realloc(v.data, <size_t>cap * <size_t>v.itemsize)
    if data == NULL:
        return -1
    v.data = data
    v.cap = cap
    return 0


cdef inline int vec_assign(Vec* dst, const Vec* src) noexcept nogil:
    """``dst`` (empty, initialised for ``src``'s item size) becomes a copy of ``src``, in its
    own buffer (kept from before where it is large enough)."""
    if src.len == 0:
        return 0
    if vec_reserve(dst, src.len) < 0:
        return -1
    memcpy(dst.data, src.data, <size_t>src.len * <size_t>src.itemsize)
    dst.len = src.len
    return 0


cdef inline int vec_copy(Vec* dst, const Vec* src) noexcept nogil:
    """``dst`` becomes a copy of ``src`` (``dst`` must be empty or freshly initialised)."""
    vec_init(dst, src.itemsize)
    return vec_assign(dst, src)


cdef inline char* vec_at(const Vec* v, Py_ssize_t i) noexcept nogil:
    if FASTPLAN_DEBUG_CHECKS and (i < 0 or i >= v.len):
        fastplan_out_of_range(i, v.len)
    return v.data + i * v.itemsize


cdef inline int log_record(Log* log, Vec* vec, char* addr, Py_ssize_t index,
                           Py_ssize_t offset, const void* old, Py_ssize_t size) noexcept nogil:
    cdef UndoRec* rec
    if log == NULL or log.depth == 0:
        return 0
    if vec_reserve(&log.recs, log.recs.len + 1) < 0:
        return -1
    rec = <UndoRec*>(log.recs.data + log.recs.len * sizeof(UndoRec))
    log.recs.len += 1
    rec.vec = vec
    rec.addr = addr
    rec.index = index
    rec.offset = offset
    rec.size = size
    memcpy(rec.old, old, <size_t>size)
    return 0


cdef inline char* vec_push(Vec* v, Log* log) noexcept nogil:
    """Append one zeroed item; its address, or NULL when memory runs out."""
    cdef char* slot
    if vec_reserve(v, v.len + 1) < 0:
        return NULL
    if log_record(log, v, NULL, -1, 0, &v.len, sizeof(Py_ssize_t)) < 0:
        return NULL
    slot = v.data + v.len * v.itemsize
    memset(slot, 0, <size_t>v.itemsize)
    v.len += 1
    return slot


cdef inline int vec_set(Vec* v, Py_ssize_t i, Py_ssize_t offset, const void* value,
                        Py_ssize_t size, Log* log) noexcept nogil:
    """Overwrite ``size`` bytes of item ``i`` at ``offset``, recording the old bytes."""
    cdef char* at = vec_at(v, i) + offset
    if log_record(log, v, NULL, i, offset, at, size) < 0:
        return -1
    memcpy(at, value, <size_t>size)
    return 0


cdef inline int field_set(char* addr, const void* value, Py_ssize_t size,
                          Log* log) noexcept nogil:
    """Overwrite a plain field (of a struct that never moves), recording the old bytes."""
    if log_record(log, NULL, addr, 0, 0, addr, size) < 0:
        return -1
    memcpy(addr, value, <size_t>size)
    return 0


cdef inline void log_rollback(Log* log, Py_ssize_t pos) noexcept nogil:
    """Undo every change recorded after position ``pos``, newest first."""
    cdef UndoRec* rec
    while log.recs.len > pos:
        log.recs.len -= 1
        rec = <UndoRec*>(log.recs.data + log.recs.len * sizeof(UndoRec))
        if rec.vec == NULL:
            memcpy(rec.addr, rec.old, <size_t>rec.size)
        elif rec.index < 0:
            memcpy(&rec.vec.len, rec.old, sizeof(Py_ssize_t))
        else:
            memcpy(rec.vec.data + rec.index * rec.vec.itemsize + rec.offset, rec.old,
                   <size_t>rec.size)
