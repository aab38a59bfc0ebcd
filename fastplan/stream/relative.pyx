# cython: language_level=3
"""The relative form of an op stream: the key plans are cached under.

burn counterpart: ``crates/burn-fusion/src/stream/context.rs`` (``OperationConverter``,
``RelativeOps``; notes §2.4).
Mirrors ``refimpl/planner/stream/relative.py``: same names, same order, same results (the same
``OperationIr`` / ``TensorIr`` objects, compared with ``==``).

C level (``relative.pxd``): ``EncodedOp`` is how every fastplan core sees a relative op, as C
structs (``OpC``, ``TensorC``). ``encode`` validates at the boundary, so that the cores never
meet a value they cannot hold: tensors must be ``TensorIr`` with an ``int`` id, a tuple of
``int`` shape ids, a ``DType`` and a ``TensorStatus``; ints must fit in 64 bits
(``TypeError`` / ``OverflowError`` otherwise; docs/fastplan.md, "Boundary").

Differs from refimpl:

* the converter keeps burn's four maps as Python dicts (the queue and the plan cache read
  them), and converts an op in one typed pass instead of ``dataclasses.replace``;
* ``remember_encoded`` also fills the entry ``encode_cached`` checks first, so that the
  search's encoding of an op the queue has just built (``OperationQueue.rel_at``) is that
  entry, without a table lookup;
* ``new_frozen`` finds a class's field names and slot layout in one lookup (``_Fields``,
  most often from a direct-mapped table in front of the dict) and fills the slots itself.
"""

import dataclasses

cimport cython

from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_GET_SIZE
from cpython.dict cimport PyDict_GetItem, PyDict_SetItem
from cpython.long cimport PyLong_Check, PyLong_FromVoidPtr
from cpython.mem cimport PyMem_Free, PyMem_Malloc
from cpython.object cimport PyObject_GenericSetAttr, PyTypeObject
from cpython.ref cimport Py_INCREF, PyObject
from cpython.tuple cimport PyTuple_New, PyTuple_SET_ITEM
from libc.stdint cimport int32_t, int64_t, uint8_t

from fastplan._keys cimport (
    F_INT, F_SCALAR, F_TENSOR, F_TENSORS, StructInfo, interned, new_instance, set_slot,
    struct_info,
)
from fastplan.opinfo cimport OpTable
from fastplan.opinfo import OP_TABLE

from refimpl.dtypes import DType
from refimpl.ir import FieldKind, OP_IR_STRUCTS, OperationIr, TensorIr, TensorStatus
from refimpl.ops import OPS
from refimpl.planner.engine.fuse_ir import fuse_type_of

__all__ = ["OperationConverter", "to_relative"]

# --- codes used by the C structs ---------------------------------------------------------------
_DTYPES = tuple(DType)
_STATUSES = tuple(TensorStatus)
assert _STATUSES.index(TensorStatus.ReadWrite) == READ_WRITE
assert _STATUSES.index(TensorStatus.NotInit) == NOT_INIT
# Enum members hash in Python code: codes are found by identity in these C arrays instead.
cdef Py_ssize_t _N_DTYPES = len(_DTYPES)
cdef PyObject* _DTYPE_PTR[32]
cdef uint8_t _FUSE_TYPE_OF[32]
cdef PyObject* _STATUS_PTR[3]
assert _N_DTYPES <= 32 and len(_STATUSES) == 3
for _i, _dtype in enumerate(_DTYPES):
    _DTYPE_PTR[_i] = <PyObject*>_dtype
    _FUSE_TYPE_OF[_i] = int(fuse_type_of(_dtype))
for _i, _status in enumerate(_STATUSES):
    _STATUS_PTR[_i] = <PyObject*>_status


cdef object _object_new = object.__new__

cdef extern from *:
    """
    #include "structmember.h"
    static PyObject* fastplan_get_slot(PyObject* obj, Py_ssize_t offset) {
        return *(PyObject**)((char*)obj + offset);
    }
    static Py_ssize_t fastplan_member_offset(PyObject* descr) {
        PyMemberDef* m = ((PyMemberDescrObject*)descr)->d_member;
        return (m->type == T_OBJECT_EX && !(m->flags & READONLY)) ? m->offset : -1;
    }
    """
    PyObject* fastplan_get_slot(object obj, Py_ssize_t offset)
    Py_ssize_t fastplan_member_offset(object descr)

cdef enum:
    MAX_FIELDS = 16


cdef class _Layout:
    """Where the slots of a frozen slots dataclass's fields are (from its member
    descriptors), so that ``make_frozen`` can fill them directly."""

    cdef Py_ssize_t n
    cdef Py_ssize_t offsets[MAX_FIELDS]


cdef dict _LAYOUTS = {}  # type -> _Layout, or None where the generic path must be used
_MemberDescriptor = type(TensorIr.__dict__["id"])


cdef object _layout(type cls, tuple names):
    cdef _Layout layout = _Layout.__new__(_Layout)
    cdef Py_ssize_t i, offset
    if len(names) > MAX_FIELDS or "__dict__" in dir(cls) or cls.__setattr__ is object.__setattr__:
        return None
    layout.n = len(names)
    for i in range(len(names)):
        descr = cls.__dict__.get(names[i])
        if type(descr) is not _MemberDescriptor:
            return None
        offset = fastplan_member_offset(descr)
        if offset < 0:
            return None
        layout.offsets[i] = offset
    return layout


cdef object make_frozen(type cls, tuple names, tuple values):
    """An instance of the slots dataclass ``cls`` with these field values, built without its
    Python-level ``__init__`` (which only assigns them; docs/fastplan.md, "Boundary"): the
    slots are filled directly, as the member descriptors would."""
    cdef Py_ssize_t i
    cdef _Layout layout
    found = _LAYOUTS.get(cls, False)
    if found is False:
        found = _LAYOUTS[cls] = _layout(cls, names)
    if found is None or (<_Layout>found).n != len(names) or len(values) != len(names):
        obj = _object_new(cls)
        for i in range(len(names)):
            PyObject_GenericSetAttr(obj, names[i], values[i])
        return obj
    layout = <_Layout>found
    obj = new_instance(<PyTypeObject*>cls)
    for i in range(layout.n):
        set_slot(obj, layout.offsets[i], values[i])
    return obj


cdef class _Fields:
    """A dataclass's field names in declaration order, with the layout ``make_frozen`` uses
    for the class (``_LAYOUTS``' entry: None where the generic path must be used)."""

    cdef tuple names
    cdef _Layout layout


cdef dict _FIELD_NAMES = {}  # dataclass -> _Fields (never cleared)

cdef enum:
    FIELDS_SEEN = 64  # entries of the direct-mapped table in front of _FIELD_NAMES

# Borrowed pointers to a class and its _Fields, both held by _FIELD_NAMES for good: the
# entry new_frozen checks before the dict (a dict lookup hashes the class, and the calls
# alternate between a dozen classes).
cdef PyObject* _seen_cls[FIELDS_SEEN]
cdef PyObject* _seen_fields[FIELDS_SEEN]


cdef object new_frozen(type cls, tuple values):
    """``cls(*values)`` for a dataclass whose ``__init__`` only assigns (no ``__post_init__``,
    every field given): ``make_frozen`` with the fields in declaration order (its
    ``dataclasses.fields``: a ``ClassVar`` is no field). The names and the layout are found
    by one lookup (``make_frozen`` looks its layout up again)."""
    cdef size_t at = <size_t><PyObject*>cls
    cdef PyObject* entry
    cdef _Fields fields
    cdef _Layout layout
    cdef Py_ssize_t i
    at = ((at >> 4) ^ (at >> 10)) & (FIELDS_SEEN - 1)
    if _seen_cls[at] == <PyObject*>cls:
        fields = <_Fields>_seen_fields[at]
    else:
        entry = PyDict_GetItem(_FIELD_NAMES, cls)
        if entry == NULL:
            fields = _Fields.__new__(_Fields)
            fields.names = tuple([f.name for f in dataclasses.fields(cls)])
            found = _LAYOUTS.get(cls, False)
            if found is False:
                found = _LAYOUTS[cls] = _layout(cls, fields.names)
            fields.layout = found
            _FIELD_NAMES[cls] = fields
        else:
            fields = <_Fields>entry
        _seen_cls[at] = <PyObject*>cls
        _seen_fields[at] = <PyObject*>fields
    layout = fields.layout
    if layout is None or layout.n != len(fields.names) or len(values) != layout.n:
        return make_frozen(cls, fields.names, values)  # the generic path, as it takes it
    obj = new_instance(<PyTypeObject*>cls)
    for i in range(layout.n):
        set_slot(obj, layout.offsets[i], values[i])
    return obj


_TENSOR_IR_FIELDS = ("id", "shape", "dtype", "status")
_OPERATION_IR_FIELDS = ("op", "desc")


# Reading: the slots of exactly-typed refimpl dataclasses are read at their offsets, found at
# import from the member descriptors (-1: read with getattr instead).
cdef Py_ssize_t _offset_of(type cls, str name) except? -2:
    descr = cls.__dict__.get(name)
    return fastplan_member_offset(descr) if type(descr) is _MemberDescriptor else -1


cdef inline object _get(object obj, Py_ssize_t offset, str name):
    """``obj.<name>`` for an object of the exact class ``offset`` was taken from."""
    cdef PyObject* value
    if offset < 0:
        return getattr(obj, name)
    value = fastplan_get_slot(obj, offset)
    if value == NULL:
        raise AttributeError(name)
    return <object>value


cdef Py_ssize_t _OFF_ID = _offset_of(TensorIr, "id")
cdef Py_ssize_t _OFF_SHAPE = _offset_of(TensorIr, "shape")
cdef Py_ssize_t _OFF_DTYPE = _offset_of(TensorIr, "dtype")
cdef Py_ssize_t _OFF_STATUS = _offset_of(TensorIr, "status")
cdef Py_ssize_t _OFF_OP = _offset_of(OperationIr, "op")
cdef Py_ssize_t _OFF_DESC = _offset_of(OperationIr, "desc")


cdef inline object _tensor_ir(object tensor_id, object shape, object dtype, object status):
    return make_frozen(_TensorIr, _TENSOR_IR_FIELDS, (tensor_id, shape, dtype, status))

cdef int _F_OTHER = 0, _F_TENSOR = 1, _F_TENSORS = 2, _F_INT = 3, _F_SCALAR = 4
_FIELD_CODE = {FieldKind.TENSOR: _F_TENSOR, FieldKind.TENSORS: _F_TENSORS,
               FieldKind.INT: _F_INT, FieldKind.SCALAR: _F_SCALAR}
# Per operand struct (by index in OP_IR_STRUCTS): its SCHEMA as (field name, field code).
_SCHEMAS = tuple(tuple((name, _FIELD_CODE.get(kind, _F_OTHER)) for name, kind in s.SCHEMA)
                 for s in OP_IR_STRUCTS)
# Positional construction equals dataclasses.replace when the fields are the SCHEMA, in order.
assert max(sum(code == _F_INT for _, code in schema) for schema in _SCHEMAS) <= MAX_INTS
assert max(sum(code == _F_SCALAR for _, code in schema) for schema in _SCHEMAS) <= MAX_SCALARS
_POSITIONAL = tuple(
    tuple(f.name for f in dataclasses.fields(s)) == tuple(name for name, _ in s.SCHEMA)
    for s in OP_IR_STRUCTS)
_STRUCT_CODE = {s: i for i, s in enumerate(OP_IR_STRUCTS)}
# Per operand struct: the slot offset of each SCHEMA field (-1: read with getattr).
_SCHEMA_OFFSETS = tuple(tuple(_offset_of(s, name) for name, _ in s.SCHEMA)
                        for s in OP_IR_STRUCTS)
_FIELDS = tuple(tuple(f.name for f in dataclasses.fields(s)) for s in OP_IR_STRUCTS)
_TensorIr = TensorIr
_OperationIr = OperationIr


cdef object tensor_ir(int64_t tensor_id, const int64_t* shape, int32_t rank, uint8_t dtype,
                      uint8_t status):
    """A ``TensorIr`` rebuilt from C values (equal to the one they were encoded from)."""
    return _tensor_ir(tensor_id, shape_tuple(shape, rank), <object>_DTYPE_PTR[dtype],
                      <object>_STATUS_PTR[status])


cdef object shape_tuple(const int64_t* shape, Py_ssize_t rank):
    cdef Py_ssize_t i
    cdef tuple result = PyTuple_New(rank)
    cdef object value  # a Python object: PyTuple_SET_ITEM steals the reference taken here
    for i in range(rank):
        value = shape[i]
        Py_INCREF(value)
        PyTuple_SET_ITEM(result, i, value)
    return result


# --- boundary: TensorIr / OperationIr -> C -----------------------------------------------------


cdef int64_t _as_int64(object value, str what) except? -1:
    if not PyLong_Check(value):
        raise TypeError(f"fastplan takes relative ops: {what} must be an int, "
                        f"not {type(value).__name__}")
    return value  # OverflowError beyond 64 bits


cdef tuple _checked_shape(object tensor):
    if type(tensor) is not _TensorIr:
        raise TypeError(f"fastplan takes relative ops: expected a TensorIr, "
                        f"not {type(tensor).__name__}")
    shape = _get(tensor, _OFF_SHAPE, "shape")
    if type(shape) is not tuple:
        raise TypeError(f"fastplan takes relative ops: a shape must be a tuple, "
                        f"not {type(shape).__name__}")
    return shape


cdef int _fill_tensor(object tensor, tuple shape, TensorC* out, int64_t* dims) except -1:
    """Encode one ``TensorIr`` (its shape already checked) into ``out``, dims into ``dims``."""
    cdef Py_ssize_t i
    cdef PyObject* member
    out.id = _as_int64(_get(tensor, _OFF_ID, "id"), "a tensor id")
    for i in range(len(shape)):
        dims[i] = _as_int64(shape[i], "a shape id")
    out.shape = dims
    out.rank = <int32_t>len(shape)
    dtype = _get(tensor, _OFF_DTYPE, "dtype")
    member = <PyObject*>dtype
    for i in range(_N_DTYPES + 1):
        if i == _N_DTYPES:
            raise TypeError(f"fastplan takes relative ops: a dtype must be a DType, "
                            f"not {dtype!r}")
        if _DTYPE_PTR[i] == member:
            break
    out.dtype = <uint8_t>i
    out.ty = _FUSE_TYPE_OF[i]
    status = _get(tensor, _OFF_STATUS, "status")
    member = <PyObject*>status
    for i in range(4):
        if i == 3:
            raise TypeError(f"fastplan takes relative ops: a status must be a TensorStatus, "
                            f"not {status!r}")
        if _STATUS_PTR[i] == member:
            break
    out.status = <uint8_t>i
    return 0


@cython.no_gc  # holds an OperationIr, which cannot hold it back: no cycle to collect
cdef class EncodedOp:
    """A relative op as C values, plus the ``OperationIr`` it came from."""

    def __dealloc__(self):
        PyMem_Free(self.heap)

    @property
    def code(self):
        return self.c.code

    @property
    def tensor_ids(self):
        """Ids of the encoded tensors, in SCHEMA order (for tests)."""
        return tuple(self.c.tensors[i].id for i in range(self.c.n_tensors))

    def fields(self):
        """Every C value, for tests: ``(code, kind, struct_code, n_inputs, n_outputs,
        ints, scalars, scalar_ok, tensors)``, a tensor as ``(id, shape, dtype, ty, status)``."""
        cdef OpC* c = &self.c
        return (c.code, c.kind, c.struct_code, c.n_inputs, c.n_outputs,
                tuple([c.ints[i] for i in range(MAX_INTS)]),
                tuple([c.scalars[i] for i in range(MAX_SCALARS)]),
                tuple([c.scalar_ok[i] for i in range(MAX_SCALARS)]),
                tuple([(c.tensors[i].id, shape_tuple(c.tensors[i].shape, c.tensors[i].rank),
                        c.tensors[i].dtype, c.tensors[i].ty, c.tensors[i].status)
                       for i in range(c.n_tensors)]))


@cython.no_gc  # holds a TensorIr, which cannot hold it back
cdef class EncodedTensor:
    """One ``TensorIr`` as C values (used by the ``def`` twins that take a tensor)."""

    def __dealloc__(self):
        PyMem_Free(self.heap)


cdef EncodedTensor encode_tensor(object tensor):
    """Validate and encode one ``TensorIr``."""
    cdef EncodedTensor result = EncodedTensor.__new__(EncodedTensor)
    cdef tuple shape = _checked_shape(tensor)
    cdef int64_t* dims = result.small_dims
    if len(shape) > SMALL_DIMS:
        result.heap = <int64_t*>PyMem_Malloc(len(shape) * sizeof(int64_t))
        if result.heap == NULL:
            raise MemoryError()
        dims = result.heap
    _fill_tensor(tensor, shape, &result.c, dims)
    result.source = tensor
    return result


cdef int64_t* _storage(EncodedOp result, Py_ssize_t n, Py_ssize_t n_dims) except NULL:
    """Point ``result.c.tensors`` at room for ``n`` tensors; room for ``n_dims`` dims, returned.
    Small ops use the arrays inside ``result``; others one allocation, tensors then dims."""
    if n <= SMALL_TENSORS and n_dims <= SMALL_DIMS:
        result.c.tensors = result.small_tensors
        return result.small_dims
    result.heap = PyMem_Malloc(n * sizeof(TensorC) + n_dims * sizeof(int64_t) + 1)
    if result.heap == NULL:
        raise MemoryError()
    result.c.tensors = <TensorC*>result.heap
    return <int64_t*>(<char*>result.heap + n * sizeof(TensorC))


cdef EncodedOp encode(object operation):
    """Validate and encode one relative ``OperationIr``."""
    cdef EncodedOp result = EncodedOp.__new__(EncodedOp)
    cdef OpTable table = OP_TABLE
    cdef OpC* c = &result.c
    cdef Py_ssize_t code, struct_code, n = 0, n_dims = 0, i, n_ints = 0, n_scalars = 0
    cdef int field
    cdef list tensors = []
    cdef list shapes = []
    cdef int64_t* dims
    if type(operation) is not _OperationIr:
        raise TypeError(f"fastplan fusers take an OperationIr, not {type(operation).__name__}")
    op = _get(operation, _OFF_OP, "op")
    code = op.code
    if not (0 <= code < table.size) or OPS[code] is not op:
        raise TypeError(f"{op!r} is not an entry of refimpl.ops.OPS")
    desc = _get(operation, _OFF_DESC, "desc")
    struct_code = table.struct_code[code]
    if type(desc) is not OP_IR_STRUCTS[struct_code]:
        raise TypeError(f"{op.name} takes a {OP_IR_STRUCTS[struct_code].__name__}, "
                        f"not {type(desc).__name__}")
    c.code = <int32_t>code
    c.kind = table.kind[code]
    c.struct_code = <uint8_t>struct_code
    c.n_inputs = 0
    c.n_outputs = 0
    offsets = _SCHEMA_OFFSETS[struct_code]
    for k, (name, field) in enumerate(_SCHEMAS[struct_code]):
        if field == _F_OTHER:
            continue
        value = _get(desc, offsets[k], name)
        if field == _F_TENSOR:
            tensors.append(value)
            shapes.append(_checked_shape(value))
            if name == "out":
                c.n_outputs += 1
            else:
                c.n_inputs += 1
        elif field == _F_TENSORS:
            values = value
            if type(values) is not tuple and type(values) is not list:
                raise TypeError(f"{op.name}.{name} must be a tuple of TensorIr")
            for value in values:
                tensors.append(value)
                shapes.append(_checked_shape(value))
                c.n_inputs += 1
        elif field == _F_INT:
            c.ints[n_ints] = _as_int64(value, f"{op.name}.{name}")
            n_ints += 1
        elif field == _F_SCALAR:
            # refimpl raises TypeError for a non-int placeholder only when it is used
            c.scalar_ok[n_scalars] = type(value) is int
            c.scalars[n_scalars] = value if type(value) is int else 0
            n_scalars += 1
    n = len(tensors)
    for shape in shapes:
        n_dims += len(<tuple>shape)
    dims = _storage(result, n, n_dims)
    c.n_tensors = <int32_t>n
    for i in range(n):
        _fill_tensor(tensors[i], <tuple>shapes[i], &c.tensors[i], dims)
        dims += len(<tuple>shapes[i])
    result.source = operation
    return result


# Encodings by identity: the search feeds the same OperationIr to every fuser of a block in a
# row, and feeds ops again when a block is re-planned. An entry holds the op itself, so an
# identity hit can never be a recycled id(); the table restarts past ENCODED_CACHE_LIMIT.
cdef object _last_operation = None
cdef EncodedOp _last_encoded = None
cdef dict _ENCODED = {}

cdef enum:
    ENCODED_CACHE_LIMIT = 4096


cdef EncodedOp encode_cached(object operation):
    """``encode(operation)``, reusing an earlier result for the same object."""
    global _last_operation, _last_encoded
    cdef EncodedOp encoded
    if operation is _last_operation and _last_encoded is not None:
        return _last_encoded
    # (the key is ``id(operation)``, made without calling the builtin)
    found = _ENCODED.get(PyLong_FromVoidPtr(<void*>operation))
    if found is not None and (<EncodedOp>found).source is operation:
        encoded = <EncodedOp>found
        _last_operation, _last_encoded = operation, encoded
    else:
        encoded = encode(operation)
        remember_encoded(encoded)
    return encoded


cdef void remember_encoded(EncodedOp encoded) except *:
    """Leave ``encoded`` where ``encode_cached`` looks for its op: the table, and the entry
    it checks first (the search encodes the op the queue just materialized: ``rel_at``)."""
    global _last_operation, _last_encoded
    if len(_ENCODED) >= ENCODED_CACHE_LIMIT:
        _ENCODED.clear()
    _ENCODED[PyLong_FromVoidPtr(<void*>encoded.source)] = encoded
    _last_operation, _last_encoded = encoded.source, encoded


cdef inline Py_ssize_t _tensor_slots(const int64_t* p, Py_ssize_t pos) noexcept:
    """Slots of the tensor encoded at ``p[pos]``: id, rank, the shape ids, dtype, status."""
    return p[pos + 1] + 4


cdef EncodedOp encode_key(bytes key, object operation):
    """``encode(operation)`` read from ``key`` instead, and remembered for ``encode_cached``.

    For the relative op ``OperationQueue`` built from its key (fastplan._keys's layout): the
    op's values were checked when its global form was encoded, and the key holds them as C
    values already (tensor ids, shape ids, dtype and status positions, scalar placeholders),
    so the search's first ``encode_cached`` of the op reads nothing back from Python objects.
    """
    cdef const int64_t* p = <const int64_t*>PyBytes_AS_STRING(key)
    cdef Py_ssize_t end = PyBytes_GET_SIZE(key) // sizeof(int64_t)
    cdef EncodedOp result = EncodedOp.__new__(EncodedOp)
    cdef OpTable table = OP_TABLE
    cdef OpC* c = &result.c
    cdef const StructInfo* info
    cdef Py_ssize_t code, struct_code, pos, f, _k, rank, count, i
    cdef Py_ssize_t n = 0, n_dims = 0, n_ints = 0, n_scalars = 0
    cdef int64_t* dims
    cdef TensorC* t
    if end < 2:
        raise ValueError("a relative op's key holds its op code and struct code")
    code, struct_code = p[0], p[1]
    if not (0 <= code < table.size) or table.struct_code[code] != struct_code:
        raise ValueError(f"a key names op code {code} with struct code {struct_code}")
    info = struct_info(struct_code)
    pos = 2  # first pass: room for the tensors and their shapes (the layout checked)
    for f in range(info.n_fields):
        count = 1
        if info.kinds[f] == F_TENSORS:
            if pos >= end:
                break
            count = p[pos]
            pos += 1
        elif info.kinds[f] != F_TENSOR:
            pos += 1
            continue
        for _k in range(count):
            if pos + 2 > end or not 0 <= p[pos + 1] <= end:
                pos = end + 1
                break
            n += 1
            n_dims += p[pos + 1]
            pos += _tensor_slots(p, pos)
    if pos != end:
        raise ValueError(f"a key of {end} slots does not hold a "
                         f"{OP_IR_STRUCTS[struct_code].__name__}")
    dims = _storage(result, n, n_dims)
    c.code = <int32_t>code
    c.kind = table.kind[code]
    c.struct_code = <uint8_t>struct_code
    c.n_tensors = <int32_t>n
    c.n_inputs = 0
    c.n_outputs = 0
    pos = 2
    n = 0
    for f in range(info.n_fields):
        if info.kinds[f] == F_TENSOR or info.kinds[f] == F_TENSORS:
            count = 1
            if info.kinds[f] == F_TENSORS:
                count = p[pos]
                pos += 1
            for _k in range(count):
                t = &c.tensors[n]
                n += 1
                t.id = p[pos]
                rank = p[pos + 1]
                for i in range(rank):
                    dims[i] = p[pos + 2 + i]
                t.shape = dims
                t.rank = <int32_t>rank
                dims += rank
                t.dtype = <uint8_t>p[pos + 2 + rank]
                t.ty = _FUSE_TYPE_OF[t.dtype]
                t.status = <uint8_t>p[pos + 3 + rank]
                pos += rank + 4
                if f == info.out_field:
                    c.n_outputs += 1
                else:
                    c.n_inputs += 1
            continue
        if info.kinds[f] == F_INT:
            c.ints[n_ints] = _as_int64(interned(p[pos]), "an axis or dim")
            n_ints += 1
        elif info.kinds[f] == F_SCALAR:
            c.scalar_ok[n_scalars] = 1  # the queue's relative op holds the placeholder int
            c.scalars[n_scalars] = p[pos]
            n_scalars += 1
        pos += 1
    result.source = operation
    remember_encoded(result)
    return result


def encode_key_op(bytes key, operation):
    """``encode_key(key, operation)`` for tests: the ``EncodedOp`` (or the error)."""
    return encode_key(key, operation)


# --- the converter -------------------------------------------------------------------------------


cdef class OperationConverter:
    """Maps between global (real) and relative ids for one segment (burn
    ``OperationConverter``). ``clear()`` starts a new segment.

    Mirrors refimpl.planner.stream.relative.OperationConverter.
    """

    cdef public dict tensors_relative2global
    cdef public dict tensors_global2relative
    cdef public dict shapes_global2relative
    cdef public dict shapes_relative2global
    cdef public list scalars
    cdef public list ranges

    def __init__(self, tensors_relative2global=None, tensors_global2relative=None,
                 shapes_global2relative=None, shapes_relative2global=None, scalars=None,
                 ranges=None):
        # refimpl's dataclass defaults: fresh containers, size 1 pre-mapped to shape id 0
        self.tensors_relative2global = {} if tensors_relative2global is None \
            else tensors_relative2global
        self.tensors_global2relative = {} if tensors_global2relative is None \
            else tensors_global2relative
        self.shapes_global2relative = {1: 0} if shapes_global2relative is None \
            else shapes_global2relative
        self.shapes_relative2global = {0: 1} if shapes_relative2global is None \
            else shapes_relative2global
        self.scalars = [] if scalars is None else scalars
        self.ranges = [] if ranges is None else ranges

    def _fields(self):
        return (self.tensors_relative2global, self.tensors_global2relative,
                self.shapes_global2relative, self.shapes_relative2global, self.scalars,
                self.ranges)

    def __eq__(self, other):
        if type(other) is not OperationConverter:
            return NotImplemented
        return self._fields() == other._fields()

    def __repr__(self):
        names = ("tensors_relative2global", "tensors_global2relative",
                 "shapes_global2relative", "shapes_relative2global", "scalars", "ranges")
        body = ", ".join(f"{n}={v!r}" for n, v in zip(names, self._fields()))
        return f"OperationConverter({body})"

    def clear(self) -> None:
        """Forget every mapping (a new segment); size 1 stays shape id 0."""
        self.tensors_relative2global.clear()
        self.tensors_global2relative.clear()
        self.shapes_global2relative.clear()
        self.shapes_relative2global.clear()
        self.shapes_global2relative[1] = 0
        self.shapes_relative2global[0] = 1
        self.scalars.clear()
        self.ranges.clear()

    def num_relative_shapes(self) -> int:
        """How many shape ids have been handed out (burn ``num_relative_shapes``)."""
        return len(self.shapes_relative2global)

    def dim(self, value):
        """The shape id of one dimension value, allocating the next id if it is new."""
        return self._dim(value)

    cdef object _dim(self, object value):
        cdef PyObject* found = PyDict_GetItem(self.shapes_global2relative, value)
        if found != NULL:
            return <object>found
        rel = len(self.shapes_global2relative)
        PyDict_SetItem(self.shapes_global2relative, value, rel)
        PyDict_SetItem(self.shapes_relative2global, rel, value)
        return rel

    def tensor(self, tensor):
        """The relative snapshot of one tensor use."""
        return self._tensor(tensor)

    cdef object _tensor(self, object tensor):
        cdef PyObject* found
        cdef Py_ssize_t i, rank
        cdef object rel, value
        cdef bint exact = type(tensor) is _TensorIr
        tid = _get(tensor, _OFF_ID, "id") if exact else tensor.id
        found = PyDict_GetItem(self.tensors_global2relative, tid)
        if found != NULL:
            rel = <object>found
        else:
            rel = len(self.tensors_global2relative)
            PyDict_SetItem(self.tensors_global2relative, tid, rel)
        PyDict_SetItem(self.tensors_relative2global, rel, tensor)
        shape = _get(tensor, _OFF_SHAPE, "shape") if exact else tensor.shape
        rank = len(shape)
        relative = PyTuple_New(rank)
        for i in range(rank):
            value = self._dim(shape[i])
            Py_INCREF(value)
            PyTuple_SET_ITEM(relative, i, value)
        if exact:
            return _tensor_ir(rel, relative, _get(tensor, _OFF_DTYPE, "dtype"),
                              _get(tensor, _OFF_STATUS, "status"))
        return _tensor_ir(rel, relative, tensor.dtype, tensor.status)

    def scalar(self, value):
        """Stash a scalar; its placeholder is its position."""
        self.scalars.append(value)
        return len(self.scalars) - 1

    def range(self, value):
        """Stash a slice range; its placeholder is ``(position, position)``."""
        self.ranges.append(value)
        k = len(self.ranges) - 1
        return (k, k)

    def global_shape(self, relative):
        """Real dimensions of a relative shape."""
        return tuple(self.shapes_relative2global[d] for d in relative)


def to_relative(op, converter):
    """The relative form of one op, walking its operand struct's SCHEMA in field order.

    A ``Drop`` is no exception: burn's ``FusionTensor::drop`` moves the tensor's real shape into
    the ``TensorIr`` it registers, so its dims get shape ids like any other tensor's.

    Mirrors refimpl.planner.stream.relative.to_relative.
    """
    cdef int field
    cdef bint fast = type(converter) is OperationConverter
    cdef OperationConverter conv = converter if fast else None
    cdef list values
    entry = op.op
    desc = op.desc
    code = _STRUCT_CODE.get(type(desc))
    if code is None or not _POSITIONAL[code]:
        return _to_relative_generic(op, converter)
    values = []
    offsets = _SCHEMA_OFFSETS[code]
    for k, (name, field) in enumerate(_SCHEMAS[code]):
        value = _get(desc, offsets[k], name)
        if field == _F_TENSOR:
            value = conv._tensor(value) if fast else converter.tensor(value)
        elif field == _F_TENSORS:
            value = tuple([conv._tensor(t) if fast else converter.tensor(t) for t in value])
        elif field == _F_SCALAR:
            value = converter.scalar(value)
        elif name in _RANGE_FIELDS.get(code, ()):
            value = tuple([converter.range(r) for r in value])
        values.append(value)
    return make_frozen(_OperationIr, _OPERATION_IR_FIELDS,
                       (entry, make_frozen(type(desc), _FIELDS[code], tuple(values))))


# RANGES fields per struct code (SliceOpIr.ranges): stashed like scalars.
_RANGE_FIELDS = {i: tuple(name for name, kind in s.SCHEMA if kind is FieldKind.RANGES)
                 for i, s in enumerate(OP_IR_STRUCTS)}


def _to_relative_generic(op, converter):
    """refimpl's walk, for operand structs whose fields are not exactly their SCHEMA."""
    changes = {}
    for name, kind in op.desc.SCHEMA:
        value = getattr(op.desc, name)
        if kind is FieldKind.TENSOR:
            changes[name] = converter.tensor(value)
        elif kind is FieldKind.TENSORS:
            changes[name] = tuple(converter.tensor(t) for t in value)
        elif kind is FieldKind.SCALAR:
            changes[name] = converter.scalar(value)
        elif kind is FieldKind.RANGES:
            changes[name] = tuple(converter.range(r) for r in value)
    return _OperationIr(op.op, dataclasses.replace(op.desc, **changes))


def encode_op(operation):
    """``encode(operation)`` for tests and benchmarks: the ``EncodedOp`` (or the error)."""
    return encode(operation)
