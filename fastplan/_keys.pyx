# cython: language_level=3
"""Relative ops as byte-string keys: how fastplan's plan cache compares ops without building
or comparing ``OperationIr`` objects.

burn counterpart: the ``Hash``/``Eq`` of burn's relative ``OperationIr`` that
``ExecutionPlanIndex`` and ``OperationsValidator`` use (``stream/store/index.rs``,
``stream/execution/validator.rs``). refimpl compares relative ops with ``==`` on its frozen
dataclasses; a key is built so that ``key(a) == key(b)`` exactly when ``a == b``.

Layout (``int64`` slots, native byte order): ``[op code, struct code]``, then each field of the
operand struct in ``SCHEMA`` order:

* ``TENSOR``: ``[id, rank, dim_0 .. dim_rank-1, dtype, status]`` (id and dims are value slots);
* ``TENSORS``: ``[count]`` then each tensor as above;
* any other field (scalar placeholder, int, ints, ranges, bool, text): one value slot.

A value slot is the value itself for an ``int`` in ``[-2**62, 2**62)`` (a ``bool`` or an
integral ``float`` in that range counts as the equal ``int``, as ``==`` says), and otherwise
``2**62 + n`` where ``n`` numbers the distinct values met so far (a dict: ``==`` and ``hash``
decide, as they do for refimpl). A dtype or status slot is the member's position, or
``2**62 + n`` for anything else.

The boundary is H's (``fastplan.stream.relative.encode``): an op is an ``OperationIr`` of an entry
of ``refimpl.ops.OPS``, its operand struct one of ``OP_IR_STRUCTS``, its tensors ``TensorIr``s
whose shape is a tuple, its ``TENSORS`` field a tuple; anything else is a ``TypeError``.
A value that is not hashable is a ``TypeError`` too.

``KeyTable`` maps keys to objects where a key is looked up many times as a fresh ``bytes``
object, or before it is one (a ``KeyBuf``): the plan-cache trie's wide nodes and the launch
memo's whole executions. It hashes the key's bytes with ``key_hash`` (a multiply and a shift
per slot) instead of the ``bytes`` siphash a dict computes for every new key object.
"""

import dataclasses
import sys

from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_FromStringAndSize, PyBytes_GET_SIZE
from cpython.dict cimport PyDict_GetItem, PyDict_SetItem
from cpython.exc cimport PyErr_Clear, PyErr_Occurred
from cpython.long cimport PyLong_AsLongLongAndOverflow, PyLong_AsSsize_t
from cpython.object cimport Py_TYPE, PyTypeObject
from cpython.ref cimport Py_DECREF, Py_INCREF, Py_XDECREF, PyObject


cdef extern from "Python.h":
    void PyObject_GC_UnTrack(object op)  # safe on an untracked object; dealloc calls it too
from libc.stdint cimport int64_t, uint64_t
from libc.string cimport memcmp, memcpy

from fastplan._vec cimport mem_calloc, mem_free, mem_malloc

from refimpl.dtypes import DType
from refimpl.ir import OP_IR_STRUCTS, FieldKind, OperationIr, TensorIr, TensorStatus
from refimpl.ops import OPS

cdef int64_t _INTERN_BASE = (<int64_t>1) << 62
cdef int64_t _LOW = -((<int64_t>1) << 62)
cdef double _FLOAT_LIMIT = 4611686018427387904.0  # 2**62

cdef dict _INTERN = {}  # value -> n
cdef list _INTERNED = []  # n -> value

cdef tuple _DTYPES = tuple(DType)
cdef tuple _STATUSES = tuple(TensorStatus)

cdef object _TensorIr = TensorIr
cdef object _OperationIr = OperationIr
cdef tuple _OPS = tuple(OPS)
cdef Py_ssize_t _NUM_OPS = len(OPS)
cdef dict _STRUCT_CODE = {s: i for i, s in enumerate(OP_IR_STRUCTS)}

_FIELD_CODE = {FieldKind.TENSOR: F_TENSOR, FieldKind.TENSORS: F_TENSORS,
               FieldKind.SCALAR: F_SCALAR, FieldKind.RANGES: F_RANGES, FieldKind.INT: F_INT}
# Per operand struct (by index in OP_IR_STRUCTS): its SCHEMA as (field name, field code).
cdef tuple _SCHEMAS = tuple(
    tuple((name, _FIELD_CODE.get(kind, F_OTHER)) for name, kind in s.SCHEMA)
    for s in OP_IR_STRUCTS)
cdef tuple _OP_STRUCT = tuple(op.struct for op in OPS)
cdef tuple _STRUCTS = tuple(OP_IR_STRUCTS)

# Per op code: the operand struct its desc must be (the class, borrowed from ``_OP_STRUCT``)
# and that struct's code. An op's desc is checked against its own op's entry, by pointer: no
# type-keyed dict lookup on the per-op path.
cdef enum:
    _MAX_OPS = 256
assert _NUM_OPS <= _MAX_OPS
cdef void* _OP_STRUCT_TYPE[_MAX_OPS]
cdef Py_ssize_t _OP_STRUCT_CODE[_MAX_OPS]
for _i, _op in enumerate(OPS):
    _OP_STRUCT_TYPE[_i] = <void*><PyObject*>_OP_STRUCT[_i]
    _OP_STRUCT_CODE[_i] = _STRUCT_CODE[_op.struct]

# --- slot offsets ---------------------------------------------------------------------------


cdef extern from "Python.h":
    PyObject* _type_lookup "_PyType_Lookup"(PyTypeObject* tp, object name)  # borrowed

cdef extern from *:
    """
    #include "structmember.h"  /* PyMemberDef's fields (descrobject.h has them from 3.12) */
    static inline int fastplan_generic_getattr(PyTypeObject* tp) {
        return tp->tp_getattro == PyObject_GenericGetAttr;
    }
    static inline unsigned int fastplan_version_tag(PyTypeObject* tp) {
        return (tp->tp_flags & Py_TPFLAGS_VALID_VERSION_TAG) ? tp->tp_version_tag : 0;
    }
    /* 16: T_OBJECT_EX (structmember.h), Py_T_OBJECT_EX from 3.12: the slot of a __slots__
       name, NULL until set (then AttributeError) */
    static inline int fastplan_object_member(PyObject* descr) {
        return Py_TYPE(descr) == &PyMemberDescr_Type
            && ((PyMemberDescrObject*)descr)->d_member->type == 16;
    }
    """
    bint _generic_getattr "fastplan_generic_getattr"(PyTypeObject* tp) noexcept
    unsigned int _version_tag "fastplan_version_tag"(PyTypeObject* tp) noexcept
    bint _object_member "fastplan_object_member"(PyObject* descr) noexcept


cdef list _FIELD_NAMES_HELD = []  # the names FieldReads point at, held for good


cdef FieldRead field_read(str name) except *:
    """A ``FieldRead`` for attribute ``name``, nothing cached yet."""
    cdef FieldRead f
    name = sys.intern(name)
    _FIELD_NAMES_HELD.append(name)
    f.name = <PyObject*>name
    f.type = NULL
    f.version = 0
    f.offset = 0
    return f


cdef object field_slow(object obj, FieldRead* f):
    """``field``'s miss: ``getattr(obj, name)``, and the slot cached for ``type(obj)`` when
    the read is a plain ``__slots__`` member read: generic attribute access (no
    ``__getattribute__``/``__getattr__`` of the class), the name found on the type as a
    member descriptor of an object slot, and a valid version tag to guard it."""
    cdef PyTypeObject* tp = Py_TYPE(obj)
    cdef PyObject* descr
    cdef unsigned int version
    name = <str>f.name
    value = getattr(obj, name)
    version = _version_tag(tp)  # the lookup just made assigns one where it can
    if version != 0 and _generic_getattr(tp):
        descr = _type_lookup(tp, name)
        if descr != NULL and _object_member(descr):
            f.type = tp
            f.version = version
            f.offset = (<PyMemberDescrObject*>descr).d_member.offset
    return value


cdef class FieldProbe:
    """One ``FieldRead`` seen from Python (``tests/fastplan/test_keys.py``): ``read(obj)`` is
    ``field(obj, ...)`` for ``name``; ``cached`` names the type whose slot it holds."""

    cdef FieldRead f

    def __cinit__(self, str name):
        self.f = field_read(name)

    def read(self, obj):
        return field(obj, &self.f)

    @property
    def cached(self):
        return None if self.f.type == NULL else <object><PyObject*>self.f.type


cdef Py_ssize_t _offset(type cls, str name) except -1:
    descr = cls.__dict__[name]
    if type(descr).__name__ != "member_descriptor":
        raise TypeError(f"{cls.__name__}.{name} is not a __slots__ field")
    return (<PyMemberDescrObject*><PyObject*>descr).d_member.offset


cdef Slots _SLOTS
_SLOTS.op = _offset(OperationIr, "op")
_SLOTS.desc = _offset(OperationIr, "desc")
_SLOTS.code = _offset(type(OPS[0]), "code")
_SLOTS.tid = _offset(TensorIr, "id")
_SLOTS.shape = _offset(TensorIr, "shape")
_SLOTS.dtype = _offset(TensorIr, "dtype")
_SLOTS.status = _offset(TensorIr, "status")
# The members by address, for dtype_slot and status_slot and their inline forms
# (_DTYPES and _STATUSES hold them for good). Enums with more than 16 members would be a new
# refimpl.
if len(_DTYPES) > 16 or len(_STATUSES) > 16:
    raise ImportError("fastplan._keys holds at most 16 dtypes and 16 tensor statuses")
_SLOTS.n_dtypes, _SLOTS.n_statuses = len(_DTYPES), len(_STATUSES)
for _i in range(_SLOTS.n_dtypes):
    _SLOTS.dtypes[_i] = <PyObject*>_DTYPES[_i]
for _i in range(_SLOTS.n_statuses):
    _SLOTS.statuses[_i] = <PyObject*>_STATUSES[_i]
del _i
cdef object _Op = type(OPS[0])
assert all(type(op) is _Op for op in OPS)

cdef StructInfo _STRUCT_INFO[32]
assert len(OP_IR_STRUCTS) <= 32
for _i, _s in enumerate(OP_IR_STRUCTS):
    assert len(_s.SCHEMA) <= MAX_FIELDS
    _STRUCT_INFO[_i].n_fields = len(_s.SCHEMA)
    _STRUCT_INFO[_i].out_field = -1
    _STRUCT_INFO[_i].n_operand_fields = 0
    for _j, (_name, _kind) in enumerate(_s.SCHEMA):
        _STRUCT_INFO[_i].kinds[_j] = _FIELD_CODE.get(_kind, F_OTHER)
        _STRUCT_INFO[_i].offsets[_j] = _offset(_s, _name)
        if _name == "out":
            _STRUCT_INFO[_i].out_field = _j
        if _STRUCT_INFO[_i].kinds[_j] == F_TENSOR or _STRUCT_INFO[_i].kinds[_j] == F_TENSORS:
            _STRUCT_INFO[_i].operand_offsets[_STRUCT_INFO[_i].n_operand_fields] = (
                _STRUCT_INFO[_i].offsets[_j])
            _STRUCT_INFO[_i].n_operand_fields += 1


cdef const StructInfo* struct_info(int64_t struct_code) noexcept:
    return &_STRUCT_INFO[struct_code]


cdef const Slots* slots() noexcept:
    return &_SLOTS


# --- reading ahead ---------------------------------------------------------------------------

cdef extern from *:
    """
    #if defined(__GNUC__) || defined(__clang__)
    #define FASTPLAN_PREFETCH(p) __builtin_prefetch((const void *)(p))
    #else
    #define FASTPLAN_PREFETCH(p) ((void)(p))
    #endif
    """
    void _prefetch "FASTPLAN_PREFETCH"(const void* p) noexcept nogil
    void* _type_of "Py_TYPE"(PyObject* op) noexcept


cdef inline PyObject* _field(PyObject* obj, Py_ssize_t offset) noexcept:
    return (<PyObject**>((<char*>obj) + offset))[0]


cdef inline Py_ssize_t _codes(PyObject* item, Py_ssize_t* code) noexcept:
    """The operand-struct code of an exact ``OperationIr`` of an entry of ``OPS`` whose desc is
    that op's struct, its op code in ``code`` (-1: anything else). Reads the op, its code and
    the desc's type only, and sets no error."""
    cdef PyObject* desc
    cdef Py_ssize_t c = op_code_of(<object>item)
    if c < 0:
        return -1
    desc = _field(item, _SLOTS.desc)
    if desc == NULL or _type_of(desc) != _OP_STRUCT_TYPE[c]:
        return -1
    code[0] = c
    return _OP_STRUCT_CODE[c]


cdef inline void _prefetch_operands(PyObject* item, bint tensors_read,
                                    ReadAhead* read) noexcept:
    """Prefetch the tensors of ``item``'s desc (or, once those are read, what each tensor
    points at: its id and its shape). The first stage notes the item's codes and its tensor
    fields' values in ``read``; the second reads them there (the same item, one call later)
    instead of walking the desc again."""
    cdef Py_ssize_t f, k, op_code
    cdef Py_ssize_t code
    cdef const StructInfo* info
    cdef PyObject* desc
    cdef PyObject* value
    if tensors_read and read.item == item:  # the operands the first stage found
        for f in range(read.n_operands):
            value = read.operands[f]
            if _type_of(value) == <void*>_TensorIr:
                _prefetch(_field(value, _SLOTS.tid))
                _prefetch(_field(value, _SLOTS.shape))
            elif _type_of(value) == <void*>tuple:
                for k in range(min(len(<tuple><object>value), 8)):
                    _prefetch((<PyTupleObject*>value).ob_item[k])
        return
    code = _codes(item, &op_code)
    read.item = item
    read.code = op_code if code >= 0 else -1
    read.struct_code = code
    read.n_operands = 0
    if code < 0:
        return
    info = &_STRUCT_INFO[code]
    desc = _field(item, _SLOTS.desc)
    for f in range(info.n_operand_fields):
        value = _field(desc, info.operand_offsets[f])
        if value == NULL:
            continue
        read.operands[read.n_operands] = value
        read.n_operands += 1
        if not tensors_read:
            _prefetch(value)
    if tensors_read:  # no first stage for this item: the second one's reads, as it would
        _prefetch_operands(item, True, read)


cdef void prefetch_ahead(tuple items, Py_ssize_t i, ReadAhead* ring) noexcept:
    """Ask the CPU for the memory the next items' encoding will read, a stage per item ahead:
    item ``i + 4`` itself, the desc of ``i + 3``, the tensors of ``i + 2``, the ids and shapes
    of ``i + 1``. Each stage reads only what the stage before it fetched. A stream built
    before it is planned is spread over the heap: without this, reading an op's tensors is a
    chain of cache misses (``docs/fastplan.md``, "Reading ahead"). Prefetching never faults;
    nothing here sets an error or changes an object.

    The tensors' stage checks the item's exact types and notes its op and operand-struct
    codes in ``ring[(i + 2) % AHEAD_RING]`` (``ReadAhead``): the ids' stage of the next call
    reads them there, and the caller hands them to the encoding of item ``i + 2`` (the same
    checks, ``exact_codes``, made once instead of three times)."""
    cdef Py_ssize_t n = len(items)
    cdef PyObject** at = (<PyTupleObject*><PyObject*>items).ob_item
    cdef PyObject* item
    if i + 4 < n:
        _prefetch(at[i + 4])
    if i + 3 < n:
        item = at[i + 3]
        if _type_of(item) == <void*>_OperationIr:
            _prefetch(_field(item, _SLOTS.desc))
    if i + 2 < n:
        _prefetch_operands(at[i + 2], False, &ring[(i + 2) & (AHEAD_RING - 1)])
    if i + 1 < n:
        _prefetch_operands(at[i + 1], True, &ring[(i + 1) & (AHEAD_RING - 1)])


cdef object tensor_type():
    return _TensorIr


# The frozen dataclasses built without their __init__ (no __post_init__ runs): every field is
# one of the slots filled (``new_tensor``, ``new_operation``).
assert not hasattr(TensorIr, "__post_init__") and not hasattr(OperationIr, "__post_init__")
assert tuple(f.name for f in dataclasses.fields(TensorIr)) == ("id", "shape", "dtype", "status")
assert tuple(f.name for f in dataclasses.fields(OperationIr)) == ("op", "desc")


# --- the buffer ---------------------------------------------------------------------------------


cdef int buf_grow(KeyBuf* b) except -1:
    """Double the room of a full buffer (``buf_push``, inline in _keys.pxd, calls it)."""
    cdef int64_t* grown = <int64_t*>mem_malloc(2 * b.cap * sizeof(int64_t))
    if grown == NULL:
        raise MemoryError()
    memcpy(grown, b.data, b.len * sizeof(int64_t))
    if b.data != b.small:
        mem_free(b.data)
    b.data = grown
    b.cap *= 2
    return 0


cdef bytes buf_bytes(KeyBuf* b):
    return PyBytes_FromStringAndSize(<char*>b.data, b.len * sizeof(int64_t))


# --- KeyTable ------------------------------------------------------------------------------------


cdef class KeyTable:
    """See _keys.pxd. The table holds a reference to each key and value; it has no Python
    attributes, so the cyclic collector does not see it (nor what it holds through it)."""

    def __dealloc__(self):
        self.clear()

    def __len__(self):
        return self.n

    cdef size_t _slot(self, const char* data, Py_ssize_t size, uint64_t h) noexcept:
        """The slot holding the key ``data[:size]``, or the free slot its probe ends at."""
        cdef size_t mask = <size_t>(self.cap - 1)
        cdef size_t i = <size_t>(h ^ (h >> 32)) & mask
        cdef PyObject* key
        while True:
            key = self.slots[i].key
            if key == NULL:
                return i
            if self.slots[i].hash == h and PyBytes_GET_SIZE(<object>key) == size and \
                    memcmp(PyBytes_AS_STRING(<object>key), data, <size_t>size) == 0:
                return i
            i = (i + 1) & mask

    cdef PyObject* find(self, const char* data, Py_ssize_t size, uint64_t h) noexcept:
        """The value stored under the key ``data[:size]`` (borrowed), or NULL."""
        if self.cap == 0:
            return NULL
        return self.slots[self._slot(data, size, h)].value

    cdef const KeySlot* find_slot(self, const char* data, Py_ssize_t size,
                                  uint64_t h) noexcept:
        """The entry of the key ``data[:size]`` (its ``bytes`` key and its value, borrowed),
        or NULL."""
        cdef const KeySlot* at
        if self.cap == 0:
            return NULL
        at = &self.slots[self._slot(data, size, h)]
        return NULL if at.key == NULL else at

    cdef int put(self, const char* data, Py_ssize_t size, uint64_t h, object key,
                 object value) except -1:
        """Store ``value`` under the key ``data[:size]`` (``key``: that key as ``bytes``, or
        ``None`` to make it from ``data`` if the key is new)."""
        cdef KeySlot* at
        cdef PyObject* old
        if 2 * (self.n + 1) > self.cap:
            self._grow()
        at = &self.slots[self._slot(data, size, h)]
        Py_INCREF(value)
        if at.key != NULL:
            old = at.value
            at.value = <PyObject*>value
            Py_DECREF(<object>old)
            return 0
        if key is None:
            key = PyBytes_FromStringAndSize(data, size)
        Py_INCREF(key)
        at.hash, at.key, at.value = h, <PyObject*>key, <PyObject*>value
        self.n += 1
        return 0

    cdef int _grow(self) except -1:
        """Double the table (or allocate it), keeping every entry."""
        cdef KeySlot* old = self.slots
        cdef Py_ssize_t old_cap = self.cap, i
        cdef Py_ssize_t cap = 2 * old_cap if old_cap else 16
        cdef size_t mask = <size_t>(cap - 1), k
        cdef KeySlot* table = <KeySlot*>mem_calloc(cap, sizeof(KeySlot))
        if table == NULL:
            raise MemoryError()
        for i in range(old_cap):
            if old[i].key != NULL:  # the references move with it; keys are distinct
                k = <size_t>(old[i].hash ^ (old[i].hash >> 32)) & mask
                while table[k].key != NULL:
                    k = (k + 1) & mask
                table[k] = old[i]
        self.slots, self.cap = table, cap
        mem_free(old)
        return 0

    cdef void clear(self) noexcept:
        """Drop every entry and free the table (detached first)."""
        cdef KeySlot* table = self.slots
        cdef Py_ssize_t i, cap = self.cap
        self.slots, self.cap, self.n = NULL, 0, 0
        for i in range(cap):
            Py_XDECREF(table[i].key)
            Py_XDECREF(table[i].value)
        mem_free(table)

    cdef list values(self):
        """The stored values, in table order."""
        cdef Py_ssize_t i
        cdef list found = []
        for i in range(self.cap):
            if self.slots[i].key != NULL:
                found.append(<object>self.slots[i].value)
        return found


# --- slots --------------------------------------------------------------------------------------


class BoundaryError(TypeError):
    """An op fastplan does not take: not the typed form ``refimpl.stream``'s loader builds.

    ``fastplan.planner.plan`` then hands the whole stream to refimpl's planner, so that the
    outcome (a plan, or refimpl's error) is refimpl's; the other entry points raise it."""


cdef int64_t _intern(object value) except? -1:
    cdef PyObject* found
    cdef Py_ssize_t n
    try:
        hash(value)  # PyDict_GetItem would swallow the error of an unhashable value
    except TypeError:
        raise BoundaryError(f"fastplan compares op fields by hash: {type(value).__name__} "
                            "is not hashable") from None
    found = PyDict_GetItem(_INTERN, value)
    if found != NULL:
        return _INTERN_BASE + <int64_t><object>found
    n = len(_INTERNED)
    PyDict_SetItem(_INTERN, value, n)
    _INTERNED.append(value)
    return _INTERN_BASE + n


cdef int64_t value_slot(object value) except? -1:
    """The slot of a value compared with ``==`` (see the module docstring)."""
    cdef int overflow = 0
    cdef long long v
    cdef double f
    cdef type t = type(value)
    if t is int or t is bool:
        v = PyLong_AsLongLongAndOverflow(value, &overflow)
        if overflow == 0 and _LOW <= v < _INTERN_BASE:
            return v
        return _intern(value)
    if t is float:
        f = value  # an integral float in range is the int it equals (NaN fails f == f)
        if f == f and -_FLOAT_LIMIT <= f < _FLOAT_LIMIT and f == <double><long long>f:
            return <long long>f
    return _intern(value)


cdef object interned(int64_t slot):
    """The value a slot stands for (inverse of ``value_slot``, up to ``==``)."""
    if slot < _INTERN_BASE:
        return slot
    return _INTERNED[slot - _INTERN_BASE]


cdef int64_t dtype_slot(object dtype) except -1:
    """The position of a ``DType`` member (``BoundaryError`` for anything else)."""
    cdef Py_ssize_t i = member_at(&_SLOTS, False, dtype)
    if i >= 0:
        return i
    raise BoundaryError(f"a tensor dtype must be a refimpl.dtypes.DType, not {dtype!r}")


cdef int64_t status_slot(object status) except -1:
    """The position of a ``TensorStatus`` member (``BoundaryError`` for anything else)."""
    cdef Py_ssize_t i = member_at(&_SLOTS, True, status)
    if i >= 0:
        return i
    raise BoundaryError(f"a tensor status must be a refimpl.ir.TensorStatus, not {status!r}")


cdef object dtype_of(int64_t slot):
    """The ``DType`` member at position ``slot`` (inverse of ``dtype_slot``)."""
    return _DTYPES[slot]


cdef object status_of(int64_t slot):
    """The ``TensorStatus`` member at position ``slot`` (inverse of ``status_slot``)."""
    return _STATUSES[slot]


cdef int64_t int_slot(object value) except? -1:
    """An INT field (axis, dim): an ``int`` within 64 bits (``BoundaryError`` otherwise)."""
    cdef int overflow = 0
    if not isinstance(value, int):
        raise BoundaryError(f"an axis or dim must be an int, not {type(value).__name__}")
    PyLong_AsLongLongAndOverflow(value, &overflow)
    if overflow != 0:
        raise BoundaryError(f"an axis or dim must fit in 64 bits, not {value}")
    return value_slot(value)


# --- ops ----------------------------------------------------------------------------------------


cdef Py_ssize_t field_offset(type cls, str name) except -1:
    """The slot offset of field ``name`` of the ``__slots__`` class ``cls``."""
    return _offset(cls, name)


cdef bint exact_codes(object operation, int64_t* code, int64_t* struct_code) noexcept:
    """``op_codes`` for an op of exactly the typed form (true), or false (no error set): the
    same checks, without building the error ``op_codes`` would raise: ``init_targets`` asks it
    of every item, syncs included, and raising and catching that error would dominate."""
    cdef Py_ssize_t c, s = _codes(<PyObject*>operation, &c)
    if s < 0:
        return False
    code[0] = c
    struct_code[0] = s
    return True


cdef int op_codes(object operation, int64_t* code, int64_t* struct_code) except -1:
    """Check the op at the boundary; its op code and operand-struct code. ``exact_codes``
    decides; what follows only says why an op is refused."""
    if exact_codes(operation, code, struct_code):
        return 0
    cdef Py_ssize_t c = op_code_of(operation)
    if c < 0:  # not an OperationIr, a field left unset, or an op not in the table
        if type(operation) is not _OperationIr:
            raise BoundaryError(
                f"fastplan plans OperationIr ops, not {type(operation).__name__}")
        op = slot(operation, _SLOTS.op)
        if type(op) is _Op:
            slot(op, _SLOTS.code)
        raise BoundaryError(f"{op!r} is not an entry of refimpl.ops.OPS")
    desc = slot(operation, _SLOTS.desc)  # unset: AttributeError
    op = slot(operation, _SLOTS.op)
    raise BoundaryError(f"{op.name} takes a {op.struct.__name__}, not {type(desc).__name__}")


cdef Py_ssize_t op_code_of(object operation) noexcept:
    """The op code of an exact ``OperationIr`` whose op is an entry of ``OPS`` (-1: anything
    else); the desc is not read, and no error is set."""
    cdef PyObject* op
    cdef PyObject* value
    cdef Py_ssize_t c
    cdef long long small
    if type(operation) is not _OperationIr:
        return -1
    op = _field(<PyObject*>operation, _SLOTS.op)
    if op == NULL or _type_of(op) != <void*>_Op:
        return -1
    value = _field(op, _SLOTS.code)
    if value == NULL or _type_of(value) != <void*>int:
        return -1
    if compact_int(<object>value, &small):  # every op code (no call into CPython)
        c = <Py_ssize_t>small
    else:
        c = PyLong_AsSsize_t(<object>value)
        if c == -1 and PyErr_Occurred():
            PyErr_Clear()
            return -1
    if not 0 <= c < _NUM_OPS or <PyObject*>_OPS[c] != op:
        return -1
    return c


cdef tuple schema_of(int64_t struct_code):
    """``(field name, field code)`` of an operand struct, in SCHEMA order."""
    return <tuple>_SCHEMAS[struct_code]


cdef int _push_tensor(KeyBuf* b, object tensor) except -1:
    cdef Py_ssize_t i
    if type(tensor) is not _TensorIr:
        raise BoundaryError(f"fastplan takes TensorIr operands, not {type(tensor).__name__}")
    shape = tensor.shape
    if type(shape) is not tuple:
        raise BoundaryError(f"a tensor shape must be a tuple, not {type(shape).__name__}")
    buf_push(b, value_slot(tensor.id))
    buf_push(b, len(<tuple>shape))
    for i in range(len(<tuple>shape)):
        buf_push(b, value_slot((<tuple>shape)[i]))
    buf_push(b, dtype_slot(tensor.dtype))
    buf_push(b, status_slot(tensor.status))
    return 0


cdef bytes relative_key(object operation):
    """The key of an op already in relative form (see the module docstring)."""
    cdef KeyBuf b
    cdef int64_t code, struct_code
    cdef int field
    op_codes(operation, &code, &struct_code)
    desc = operation.desc
    buf_init(&b)
    try:
        buf_push(&b, code)
        buf_push(&b, struct_code)
        for name, field in <tuple>_SCHEMAS[struct_code]:
            value = getattr(desc, name)
            if field == F_TENSOR:
                _push_tensor(&b, value)
            elif field == F_TENSORS:
                if type(value) is not tuple:
                    raise BoundaryError(f"{name} must be a tuple of TensorIr")
                buf_push(&b, len(<tuple>value))
                for tensor in <tuple>value:
                    _push_tensor(&b, tensor)
            elif field == F_INT:
                buf_push(&b, int_slot(value))
            else:
                buf_push(&b, value_slot(value))
        return buf_bytes(&b)
    finally:
        buf_free(&b)


# --- building frozen dataclasses fast -----------------------------------------------------------


cdef object new_tensor(object tid, tuple shape, object dtype, object status):
    """``TensorIr(tid, shape, dtype, status)`` without running the dataclass ``__init__``: the
    slots are filled at their offsets (``_SLOTS``), as the member descriptors would."""
    cdef object tensor = new_instance(<PyTypeObject*>_TensorIr)
    set_slot(tensor, _SLOTS.tid, tid)
    set_slot(tensor, _SLOTS.shape, shape)
    set_slot(tensor, _SLOTS.dtype, dtype)
    set_slot(tensor, _SLOTS.status, status)
    PyObject_GC_UnTrack(tensor)  # frozen, of ints, a tuple and enum members: never in a cycle
    return tensor


cdef tuple _FIELD_NAMES = tuple(tuple(name for name, _ in s.SCHEMA) for s in OP_IR_STRUCTS)
assert all(tuple(f.name for f in dataclasses.fields(s)) == names and
           not hasattr(s, "__post_init__") for s, names in zip(OP_IR_STRUCTS, _FIELD_NAMES))


cdef object new_struct(int64_t struct_code, list values):
    """The operand struct ``OP_IR_STRUCTS[struct_code](*values)`` without its ``__init__``."""
    cdef type cls = _STRUCTS[struct_code]
    cdef const StructInfo* info = &_STRUCT_INFO[struct_code]
    cdef object desc
    cdef Py_ssize_t i
    if len(values) != info.n_fields:
        raise ValueError(f"{cls.__name__} takes {info.n_fields} field values, not "
                         f"{len(values)}")
    desc = new_instance(<PyTypeObject*>cls)
    for i in range(info.n_fields):  # SCHEMA order is the dataclass fields' (checked above)
        set_slot(desc, info.offsets[i], values[i])
    PyObject_GC_UnTrack(desc)  # frozen, of relative tensors and plain values
    return desc


cdef object new_operation(object op, object desc):
    """``OperationIr(op, desc)`` without running the dataclass ``__init__``."""
    cdef object operation = new_instance(<PyTypeObject*>_OperationIr)
    set_slot(operation, _SLOTS.op, op)
    set_slot(operation, _SLOTS.desc, desc)
    PyObject_GC_UnTrack(operation)  # frozen, of an op-table entry and its operand struct
    return operation
