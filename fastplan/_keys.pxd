# cython: language_level=3
"""C-level declarations of fastplan._keys: relative ops as byte-string keys.

A key is a ``bytes`` object holding ``int64`` slots; two relative ops are equal (``==`` on
refimpl's ``OperationIr``) exactly when their keys are equal. See ``_keys.pyx`` for the layout.
"""

from cpython.list cimport PyList_New
from cpython.long cimport PyLong_AsLongLongAndOverflow
from cpython.object cimport PyTypeObject
from cpython.ref cimport PyObject
from libc.stdint cimport int64_t, uint64_t
from libc.string cimport memcpy, memmove

cdef extern from "Python.h":
    # The slot descriptors of a ``__slots__`` class (what ``TensorIr.id`` is): fastplan reads
    # the frozen dataclasses' fields at their offsets, after checking the exact type.
    ctypedef struct PyMemberDef:
        Py_ssize_t offset
    ctypedef struct PyMemberDescrObject:
        PyMemberDef* d_member
    # itemlist NULL deletes the slice (Cython's cpython.list declares it as an object)
    int list_set_slice "PyList_SetSlice"(object lst, Py_ssize_t low, Py_ssize_t high,
                                         PyObject* itemlist) except -1
    int _gc_is_tracked "PyObject_GC_IsTracked"(PyObject* op) noexcept
    void _gc_untrack "PyObject_GC_UnTrack"(PyObject* op) noexcept
    # CPython's macros on borrowed pointers (no reference counted), for every module
    Py_ssize_t _var_size "Py_SIZE"(PyObject* op) noexcept nogil
    PyObject* _tuple_item "PyTuple_GET_ITEM"(PyObject* op, Py_ssize_t i) noexcept nogil
    PyObject* _list_item "PyList_GET_ITEM"(PyObject* op, Py_ssize_t i) noexcept nogil
    const char* _bytes_data "PyBytes_AS_STRING"(PyObject* op) noexcept nogil
    ctypedef struct PyTupleObject:
        PyObject* ob_item[1]
    ctypedef struct PyListObject:
        PyObject** ob_item
        Py_ssize_t allocated
    void* _mem_realloc "PyMem_Realloc"(void* p, size_t n) noexcept  # a list's item array
    void _set_var_size "Py_SET_SIZE"(PyObject* op, Py_ssize_t size) noexcept
    void _decref "Py_DECREF"(PyObject* op)
    void _incref "Py_INCREF"(PyObject* op) noexcept

cdef enum:
    KEY_SMALL = 48  # slots held inline by a KeyBuf before it allocates
    F_OTHER = 0  # SCHEMA field codes (refimpl.ir.FieldKind)
    F_TENSOR = 1
    F_TENSORS = 2
    F_SCALAR = 3
    F_RANGES = 4
    F_INT = 5


cdef enum:
    MAX_FIELDS = 8  # fields of the largest operand struct


ctypedef struct StructInfo:
    Py_ssize_t n_fields  # len(SCHEMA)
    Py_ssize_t out_field  # index of the ``out`` field (-1: none)
    int kinds[MAX_FIELDS]  # F_* of each field, in SCHEMA order
    Py_ssize_t offsets[MAX_FIELDS]  # slot offset of each field
    # the TENSOR and TENSORS fields' offsets, in SCHEMA order (the read-ahead's)
    Py_ssize_t n_operand_fields
    Py_ssize_t operand_offsets[MAX_FIELDS]


ctypedef struct Slots:
    Py_ssize_t op  # OperationIr.op
    Py_ssize_t desc  # OperationIr.desc
    Py_ssize_t code  # Op.code
    Py_ssize_t tid  # TensorIr.id
    Py_ssize_t shape  # TensorIr.shape
    Py_ssize_t dtype  # TensorIr.dtype
    Py_ssize_t status  # TensorIr.status
    PyObject* dtypes[16]  # the DType members, in order (held by _keys for good)
    Py_ssize_t n_dtypes
    PyObject* statuses[16]  # the TensorStatus members, in order
    Py_ssize_t n_statuses


ctypedef struct KeyBuf:
    int64_t* data  # small, or a heap allocation once it outgrew it
    Py_ssize_t len  # slots written
    Py_ssize_t cap  # slots available at data
    int64_t small[KEY_SMALL]


cdef extern from "Python.h":
    void _buf_mem_free "PyMem_Free"(void* p) noexcept nogil


cdef inline void buf_init(KeyBuf* b) noexcept nogil:
    """An empty buffer on its inline slots (inline: every op queued sets one up)."""
    b.data = b.small
    b.len = 0
    b.cap = KEY_SMALL


cdef inline void buf_free(KeyBuf* b) noexcept nogil:
    """Free what the buffer allocated; it is empty again."""
    if b.data != b.small:
        _buf_mem_free(b.data)
    b.data = b.small
    b.len = 0
    b.cap = KEY_SMALL


cdef int buf_grow(KeyBuf* b) except -1
cdef bytes buf_bytes(KeyBuf* b)


cdef inline uint64_t key_hash(const char* data, Py_ssize_t size) noexcept nogil:
    """A 64-bit hash of a key's bytes for ``KeyTable``: a multiply and a shift per 8 bytes,
    where a ``bytes`` object's siphash costs several times that. Fixed (not randomised per
    process): the tables are fastplan's own, and a bad spread costs probes, not results."""
    cdef uint64_t h = <uint64_t>size * <uint64_t>0x9E3779B97F4A7C15
    cdef uint64_t w
    cdef Py_ssize_t i = 0
    while i + 8 <= size:
        memcpy(&w, data + i, 8)
        h = (h ^ w) * <uint64_t>0xBF58476D1CE4E5B9
        h ^= h >> 29
        i += 8
    if i < size:
        w = 0
        memcpy(&w, data + i, <size_t>(size - i))
        h = (h ^ w) * <uint64_t>0xBF58476D1CE4E5B9
        h ^= h >> 29
    return h


ctypedef struct KeySlot:
    uint64_t hash  # key_hash of the key
    PyObject* key  # the key (bytes; NULL: a free slot)
    PyObject* value  # what is stored under it


cdef class KeyTable:
    """A map from keys (``bytes``) to objects, probed with the key's bytes wherever they are
    (a ``KeyBuf`` not yet made a ``bytes`` object, or a ``bytes`` object) and ``key_hash``:
    open addressing, linear probing, doubled when half full, no removal but ``clear``."""
    cdef KeySlot* slots
    cdef Py_ssize_t cap  # slots (a power of two, or 0: not allocated)
    cdef Py_ssize_t n  # entries
    cdef size_t _slot(self, const char* data, Py_ssize_t size, uint64_t h) noexcept
    cdef PyObject* find(self, const char* data, Py_ssize_t size, uint64_t h) noexcept
    cdef const KeySlot* find_slot(self, const char* data, Py_ssize_t size,
                                  uint64_t h) noexcept
    cdef int put(self, const char* data, Py_ssize_t size, uint64_t h, object key,
                 object value) except -1
    cdef int _grow(self) except -1
    cdef void clear(self) noexcept
    cdef list values(self)

cdef int64_t value_slot(object value) except? -1
cdef int64_t dtype_slot(object dtype) except -1
cdef int64_t status_slot(object status) except -1
cdef object dtype_of(int64_t slot)
cdef object status_of(int64_t slot)
cdef int64_t int_slot(object value) except? -1
cdef object interned(int64_t slot)
cdef int op_codes(object operation, int64_t* code, int64_t* struct_code) except -1
cdef bint exact_codes(object operation, int64_t* code, int64_t* struct_code) noexcept
cdef Py_ssize_t op_code_of(object operation) noexcept
cdef Py_ssize_t field_offset(type cls, str name) except -1
cdef tuple schema_of(int64_t struct_code)
cdef bytes relative_key(object operation)
cdef object new_tensor(object tid, tuple shape, object dtype, object status)
cdef object new_struct(int64_t struct_code, list values)
cdef object new_operation(object op, object desc)
cdef const StructInfo* struct_info(int64_t struct_code) noexcept
cdef const Slots* slots() noexcept
ctypedef struct ReadAhead:
    # what ``prefetch_ahead`` learnt of one item two items before it is encoded: the ring of
    # the last few (``AHEAD_RING`` entries, at ``index % AHEAD_RING``) lives in the caller
    PyObject* item  # the item read (borrowed from the stream's tuple; NULL: none)
    int64_t code  # its op code, and its operand-struct code (``exact_codes``; -1: not exact)
    int64_t struct_code
    Py_ssize_t n_operands  # its tensor fields' values (a TensorIr or a tuple of them)
    PyObject* operands[MAX_FIELDS]  # (borrowed from its desc)

cdef enum:
    AHEAD_RING = 4  # entries of a ReadAhead ring (a power of two)

cdef void prefetch_ahead(tuple items, Py_ssize_t i, ReadAhead* ring) noexcept
cdef object tensor_type()


cdef extern from *:
    """
    #define fastplan_type_has_gc(op) PyType_IS_GC(Py_TYPE(op))
    """
    # Whether the object's type is a GC type (a flag of the type; PyObject_GC_IsTracked is a
    # call into CPython): an object of any other type is never tracked.
    bint _type_has_gc "fastplan_type_has_gc"(PyObject* op) noexcept


cdef extern from *:
    """
    static inline PyObject* fastplan_new_instance(PyTypeObject* tp) {
        return tp->tp_alloc(tp, 0);
    }
    static inline void fastplan_set_slot(PyObject* obj, Py_ssize_t offset, PyObject* value) {
        Py_INCREF(value);
        *(PyObject**)((char*)obj + offset) = value;
    }
    """
    # How a frozen ``__slots__`` dataclass is built without its ``__init__``: an instance with
    # every slot empty (``tp_alloc``), then each slot filled at its offset (a new reference).
    # ``inline``: every module that cimports this file gets both, most use neither, and GCC
    # warns of an unused ``static`` function, not of an unused ``static inline`` one.
    object new_instance "fastplan_new_instance"(PyTypeObject* tp)
    void set_slot "fastplan_set_slot"(object obj, Py_ssize_t offset, object value) noexcept


cdef extern from *:
    """
    typedef struct {
        PyObject* name;  /* the attribute's name (a str held by the module for good) */
        PyTypeObject* type;  /* the exact type whose slot is cached (NULL: none yet) */
        unsigned int version;  /* that type's version tag then (0 is never a valid tag) */
        Py_ssize_t offset;  /* the slot's offset in its instances */
    } FieldRead;
    static inline PyObject* fastplan_field_cached(PyObject* obj, FieldRead* f) {
        PyTypeObject* tp = Py_TYPE(obj);
        if (tp == f->type && tp->tp_version_tag == f->version) {
            return *(PyObject**)((char*)obj + f->offset);  /* borrowed; NULL: not set */
        }
        return NULL;
    }
    """
    # One attribute read at one place in the code: the offset of a ``__slots__`` field of the
    # last exact type read there, valid while the type's version tag is (CPython changes the
    # tag whenever the type or a base is modified). See ``field``.
    ctypedef struct FieldRead:
        PyObject* name
        PyTypeObject* type
        unsigned int version
        Py_ssize_t offset
    PyObject* field_cached "fastplan_field_cached"(object obj, FieldRead* f) noexcept


cdef extern from *:
    """
    #if PY_VERSION_HEX >= 0x030C0000
    static inline int fastplan_compact_int(PyObject* o, long long* v) {
        if (_PyLong_IsCompact((PyLongObject*)o)) {
            *v = (long long)_PyLong_CompactValue((PyLongObject*)o);
            return 1;
        }
        return 0;
    }
    #else
    static inline int fastplan_compact_int(PyObject* o, long long* v) {
        Py_ssize_t size = Py_SIZE(o);
        if (size == 0) { *v = 0; return 1; }
        if (size == 1) { *v = (long long)((PyLongObject*)o)->ob_digit[0]; return 1; }
        if (size == -1) { *v = -(long long)((PyLongObject*)o)->ob_digit[0]; return 1; }
        return 0;
    }
    #endif
    """
    # The value of an exact ``int`` of one digit or none (|v| < 2**30), read where CPython keeps
    # it (1: read; 0: a longer int, for ``PyLong_AsLongLongAndOverflow``). Only for an object
    # whose type is exactly ``int``.
    int compact_int "fastplan_compact_int"(object o, long long* v) noexcept


cdef inline Py_ssize_t member_at(const Slots* at, bint status, object value) noexcept:
    """The position of ``value`` among the ``DType`` members (``status`` false) or the
    ``TensorStatus`` members (true) that ``at`` holds, by address; -1 if it is none of them."""
    cdef Py_ssize_t i, n = at.n_statuses if status else at.n_dtypes
    for i in range(n):
        if (at.statuses[i] if status else at.dtypes[i]) == <PyObject*>value:
            return i
    return -1


cdef inline int64_t dtype_slot_at(const Slots* at, object dtype) except -1:
    """``dtype_slot`` inline, with the members ``at`` holds (``slots()``)."""
    cdef Py_ssize_t i = member_at(at, False, dtype)
    return i if i >= 0 else dtype_slot(dtype)  # dtype_slot raises the BoundaryError


cdef inline int64_t status_slot_at(const Slots* at, object status) except -1:
    """``status_slot`` inline, with the members ``at`` holds (``slots()``)."""
    cdef Py_ssize_t i = member_at(at, True, status)
    return i if i >= 0 else status_slot(status)  # status_slot raises the BoundaryError


cdef FieldRead field_read(str name) except *
cdef object field_slow(object obj, FieldRead* f)


cdef inline object field(object obj, FieldRead* f):
    """``getattr(obj, name)`` for the ``FieldRead`` of ``name``: read at its slot when ``obj``
    has the exact type cached there, with that type unchanged (CPython's own ``LOAD_ATTR``
    specialisation for slots); else ``field_slow``, which reads it as ``getattr`` does and
    caches the type when the attribute is a ``__slots__`` field under generic attribute
    access."""
    cdef PyObject* value = field_cached(obj, f)
    if value != NULL:
        return <object>value
    return field_slow(obj, f)


cdef inline object slot(object obj, Py_ssize_t offset):
    """Field at ``offset`` of a ``__slots__`` object whose exact type the caller checked."""
    cdef PyObject* value = (<PyObject**>((<char*><PyObject*>obj) + offset))[0]
    if value == NULL:
        raise AttributeError("a field of a frozen dataclass is not set")
    return <object>value


cdef inline int buf_push(KeyBuf* b, int64_t value) except -1:
    """Append one slot (inline: the encoders push a few dozen per op)."""
    if b.len == b.cap:
        buf_grow(b)
    b.data[b.len] = value
    b.len += 1
    return 0


cdef inline object tensor_id(object tensor):
    """``tensor.id``, read at its slot for an exact ``TensorIr``."""
    return slot(tensor, slots().tid) if type(tensor) is tensor_type() else tensor.id


cdef inline void untrack_atomic(object container) noexcept:
    """Take a tuple or list out of the cyclic collector's view when none of its items is
    tracked (ints, floats, strings, frozen tuples of them, and fastplan's untracked ops): it
    cannot be part of a cycle. CPython does this to such tuples at their first collection; a
    pass of thousands of steps makes thousands of them, each walked once by the young
    collection that follows it. A list must not be given items that are tracked afterwards."""
    cdef PyObject* obj = <PyObject*>container
    cdef PyObject** items
    cdef Py_ssize_t i, n = _var_size(obj)
    if type(container) is tuple:
        items = (<PyTupleObject*>obj).ob_item
    elif type(container) is list:
        items = (<PyListObject*>obj).ob_item
    else:
        return
    for i in range(n):
        # an item whose type is no GC type is never tracked (ints, strings, floats): the
        # flag is read here, the call made only for the others
        if _type_has_gc(items[i]) and _gc_is_tracked(items[i]):
            return
    _gc_untrack(obj)


cdef inline int list_empty(list lst) except -1:
    """Empty ``lst`` and keep its item array: the queue empties its private lists at every
    drain and fills them again at once (``del lst[:]`` frees the array, so each refill
    reallocates it step by step). Refill it with ``list_push``: ``append`` shrinks an array
    that is less than half used. Each item leaves before its reference is dropped, so a
    destructor that reached the list would see it consistent. A list past 4096 items is
    emptied the ordinary way, its memory given back."""
    cdef Py_ssize_t n = len(lst)
    cdef PyObject* item
    if n > 4096:
        return list_set_slice(lst, 0, n, NULL)
    while n > 0:
        n -= 1
        item = (<PyListObject*>lst).ob_item[n]
        _set_var_size(<PyObject*>lst, n)
        _decref(item)
        n = len(lst)
    return 0


cdef inline int list_drop_front(list lst, Py_ssize_t count) except -1:
    """``del lst[:count]`` for ``0 <= count <= len(lst)``, keeping the item array: the queue
    drops the executed head of its lists at a drain and fills them again at once
    (``PyList_SetSlice`` shrinks an array left less than half used, and the refill regrows
    it). The rest move down before the dropped references go, so a destructor that reached
    the list would see it consistent. Past 64 dropped items or 4096 in all, the ordinary
    slice deletion."""
    cdef Py_ssize_t i, n = len(lst)
    cdef PyObject* dropped[64]
    cdef PyObject** items = (<PyListObject*>lst).ob_item
    if count > 64 or n > 4096:
        return list_set_slice(lst, 0, count, NULL)
    for i in range(count):
        dropped[i] = items[i]
    memmove(items, items + count, <size_t>(n - count) * sizeof(PyObject*))
    _set_var_size(<PyObject*>lst, n - count)
    for i in range(count):
        _decref(dropped[i])
    return 0


cdef inline int list_replace(list lst, Py_ssize_t i, object item) except -1:
    """``lst[i] = item`` for ``0 <= i < len(lst)`` (the caller's invariant): the new item in,
    then the old one's reference dropped, as ``list_ass_item`` does without its checks."""
    cdef PyObject* old = (<PyListObject*>lst).ob_item[i]
    _incref(<PyObject*>item)
    (<PyListObject*>lst).ob_item[i] = <PyObject*>item
    _decref(old)
    return 0


cdef inline list list_reserved(Py_ssize_t capacity):
    """An empty list whose item array already holds ``capacity`` items: a list that replaces
    one handed over (the queue's maps, taken by a step's context) fills again to about the
    same length, with ``list_push`` and no step-by-step regrowth."""
    cdef list lst = PyList_New(capacity)  # ``capacity`` empty (NULL) items
    _set_var_size(<PyObject*>lst, 0)
    return lst


cdef inline int list_push(list lst, object item) except -1:
    """``lst.append(item)``, written in place while the item array has room. ``append`` (and
    Cython's inline form of it) goes through CPython's ``list_resize``, which reallocates an
    array less than half used down to the new length: a list ``list_empty`` emptied would
    lose its array at the first append and grow it again step by step."""
    cdef PyListObject* raw = <PyListObject*>lst
    cdef Py_ssize_t n = _var_size(<PyObject*>lst)
    if n < raw.allocated:
        _incref(<PyObject*>item)
        raw.ob_item[n] = <PyObject*>item
        _set_var_size(<PyObject*>lst, n + 1)
        return 0
    lst.append(item)
    return 0


cdef inline int list_append_long(list lst, object item) except -1:
    """``lst.append(item)`` for a list as long as the stream (the queue's history, steps,
    records and executed steps, the launch walk's results): past 4096 items a full item array
    doubles. CPython grows a list by an eighth, so by n items it has copied about 8 n
    pointers, each copy a pass over memory no cache holds any longer: cache misses that grow
    with the stream."""
    cdef PyListObject* raw = <PyListObject*>lst
    cdef Py_ssize_t n = len(lst)
    cdef void* grown
    if n >= 4096 and n == raw.allocated:
        grown = _mem_realloc(raw.ob_item, <size_t>(2 * n) * sizeof(PyObject*))
        if grown == NULL:
            raise MemoryError()
        raw.ob_item = <PyObject**>grown
        raw.allocated = 2 * n
    lst.append(item)
    return 0


cdef inline bint exact_long_long(object value, long long* out) noexcept:
    """Whether ``value`` is an exact ``int`` that fits a C ``long long``; read into ``out``."""
    cdef int overflow = 0
    if type(value) is not int:
        return False
    if compact_int(value, out):
        return True
    out[0] = PyLong_AsLongLongAndOverflow(value, &overflow)
    return overflow == 0
