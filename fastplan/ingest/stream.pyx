# cython: language_level=3
"""Reading a JSON op stream into the objects ``refimpl.stream`` builds, in one compiled pass.

burn counterpart: none beyond ``refimpl.stream``'s (burn's queue is built in memory; the JSON
form is fuselab's own, ``docs/stream-format.md``).
Mirrors ``refimpl/stream.py``: same names, same results (the same ``Stream``, ``OperationIr``,
``TensorIr`` objects, compared with ``==``), the same typed error for every bad document.

Differs from refimpl:

* ``stream_from_json`` scans the document's bytes itself instead of decoding it to dicts and
  lists first: an op's keys are matched against its ``SCHEMA`` in place, numbers and ids are
  read in C, dtype and status names are matched to their enum members, a shape seen a moment
  ago is the same tuple again, and the frozen dataclasses are filled at their slots
  (``fastplan._keys``). The ``inputs`` table is read the same way into ``InputSpec``\ s; an
  entry with inline ``data`` is decoded generically and handed to refimpl's own reader.
* The cyclic garbage collector is paused while the stream is read and checked (its state
  restored after): the objects made are frozen and untracked (tuples of ints included), and
  a collection in the middle would only walk the caller's heap.
* The scan accepts a subset of JSON (no escapes in strings, no ``NaN``/``Infinity``, ids below
  ``10**19``, ranks up to 64): anything outside it, and every malformed document, is read
  again by ``refimpl.stream.stream_from_json``, which returns the stream or raises the error.
  The scan never accepts a document refimpl rejects (``tests/fastplan/test_ingest_parity.py``),
  so results and errors are refimpl's by construction: class, op index, field and message.
* ``validate=True`` runs ``fastplan.ingest.validate.validate_stream``, the twin of refimpl's.

``Stream``, ``InputSpec``, ``FORMAT_VERSION``, ``stream_to_json`` and ``save_stream`` are
refimpl's own (writing is not where the time goes).
"""

from pathlib import Path

from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_FromStringAndSize, PyBytes_GET_SIZE
from cpython.long cimport PyLong_FromLongLong, PyLong_FromUnsignedLongLong
from cpython.ref cimport PyObject
from cpython.object cimport PyTypeObject
from cpython.tuple cimport PyTuple_New, PyTuple_SET_ITEM
from cpython.ref cimport Py_INCREF
from libc.stdint cimport int64_t, uint64_t
from libc.string cimport memcmp

from fastplan._keys cimport (field_offset, new_instance, new_operation, new_tensor,
                             set_slot)
from fastplan.ingest._scan cimport _position, _short_decimal

from fastplan.ingest.validate import validate_stream
from refimpl import stream as _ref
from refimpl.dtypes import DType, DTypeClass
from refimpl.errors import StreamError
from refimpl.ir import OP_IR_STRUCTS, FieldKind, Sync, TensorStatus
from refimpl.ops import OPS
from refimpl.stream import (FORMAT_VERSION, InputSpec, Stream, save_stream,  # noqa: F401
                            stream_to_json)

__all__ = [
    "InputSpec",
    "Stream",
    "FORMAT_VERSION",
    "stream_from_json",
    "stream_to_json",
    "load_stream",
    "save_stream",
]

cdef extern from "Python.h":
    double PyOS_string_to_double(const char* s, char** endptr, PyObject* overflow) except? -1.0
    object PyFloat_FromDouble(double v)
    object PyUnicode_DecodeUTF8(const char* s, Py_ssize_t size, const char* errors)
    object PyLong_FromString(const char* s, char** pend, int base)
    int PyGC_Enable() noexcept
    int PyGC_Disable() noexcept
    void PyObject_GC_UnTrack(object op)


class _Fallback(Exception):
    """The scan met something outside its subset of JSON: refimpl reads the document."""


# --- what the scan matches -------------------------------------------------------------------

cdef enum:
    K_TENSOR = 0
    K_TENSORS = 1
    K_SCALAR = 2
    K_INT = 3
    K_INTS = 4
    K_RANGES = 5
    K_BOOL = 6
    K_TEXT = 7
    FAM_OTHER = 0  # a scalar kept as read (bool ops, ops of no family)
    FAM_FLOAT = 1  # converted to float
    FAM_INT = 2  # an integral float converted to int
    MAX_RANK = 64  # longer shapes are read by refimpl
    SHAPE_CACHE = 16  # recent shapes whose tuples are reused
    NAME_CACHE = 64  # recent op names whose forms are found without a str

_KIND_CODE = {FieldKind.TENSOR: K_TENSOR, FieldKind.TENSORS: K_TENSORS,
              FieldKind.SCALAR: K_SCALAR, FieldKind.INT: K_INT, FieldKind.INTS: K_INTS,
              FieldKind.RANGES: K_RANGES, FieldKind.BOOL: K_BOOL, FieldKind.TEXT: K_TEXT}
assert set(_KIND_CODE) == set(FieldKind)

cdef tuple _DTYPE_NAMES = tuple(d.value.encode() for d in DType)
cdef tuple _DTYPES = tuple(DType)
cdef tuple _STATUS_NAMES = tuple(s.value.encode() for s in TensorStatus)
cdef tuple _STATUSES = tuple(TensorStatus)


cdef class _OpForm:
    """One op of the table as the scan reads it: its operand struct's fields in SCHEMA order."""
    cdef object op
    cdef Py_ssize_t n
    cdef tuple names  # field names, as bytes
    cdef int kinds[8]
    cdef int family  # FAM_*
    cdef object struct  # the operand struct's class, and its fields' slot offsets
    cdef Py_ssize_t offsets[8]

    def __init__(self, op):
        self.op = op
        self.struct = op.struct
        schema = op.struct.SCHEMA
        assert len(schema) <= 8
        assert tuple(name for name, _ in schema) == op.struct.__slots__
        assert not hasattr(op.struct, "__post_init__")
        self.n = len(schema)
        self.names = tuple(name.encode() for name, _ in schema)
        for i, (name, kind) in enumerate(schema):
            self.kinds[i] = _KIND_CODE[kind]
            self.offsets[i] = field_offset(op.struct, name)
        family = op.family
        self.family = (FAM_FLOAT if family is DTypeClass.FLOAT
                       else FAM_INT if family is DTypeClass.INT else FAM_OTHER)


cdef dict _FORMS = {op.name: _OpForm(op) for op in OPS}

# InputSpec's fields (in slot order), filled at their slots as an entry's keys are read
assert InputSpec.__slots__ == ("shape", "dtype", "strides", "data", "random")
assert not hasattr(InputSpec, "__post_init__")
cdef object _InputSpec = InputSpec
cdef tuple _IN_NAMES = tuple(name.encode() for name in InputSpec.__slots__)
cdef Py_ssize_t _IN_OFFSETS[5]
for _i, _name in enumerate(InputSpec.__slots__):
    _IN_OFFSETS[_i] = field_offset(InputSpec, _name)


# --- the scan --------------------------------------------------------------------------------

cdef inline bint _is_ws(char c) noexcept:
    return c == c' ' or c == c'\n' or c == c'\r' or c == c'\t'


cdef class _Scan:
    """A cursor over the document's bytes. The bytes object ends in a NUL that no check
    accepts, so every loop stops at the end without a bound of its own."""
    cdef bytes src
    cdef const char* p
    cdef const char* end
    cdef int depth
    # recent shapes: dims, rank and their tuple, by a hash of the dims
    cdef int64_t shape_dims[SHAPE_CACHE][MAX_RANK]
    cdef Py_ssize_t shape_rank[SHAPE_CACHE]
    cdef list shape_objs
    # recent op names: the name's bytes and its form, by a hash of the bytes
    cdef list name_keys
    cdef list name_forms

    def __init__(self, bytes src):
        self.src = src
        self.p = PyBytes_AS_STRING(src)
        self.end = self.p + PyBytes_GET_SIZE(src)
        self.depth = 0
        self.shape_objs = [None] * SHAPE_CACHE
        self.name_keys = [None] * NAME_CACHE
        self.name_forms = [None] * NAME_CACHE
        for i in range(SHAPE_CACHE):
            self.shape_rank[i] = -1

    cdef inline void ws(self) noexcept:
        while _is_ws(self.p[0]):
            self.p += 1

    cdef inline int expect(self, char c) except -1:
        """Skip white space, then ``c`` (else the fallback)."""
        while _is_ws(self.p[0]):
            self.p += 1
        if self.p[0] != c:
            raise _Fallback()
        self.p += 1
        return 0

    cdef inline bint more(self, char close) except -1:
        """After an item of a list or object: whether another follows (``,``) or ``close``."""
        while _is_ws(self.p[0]):
            self.p += 1
        if self.p[0] == c',':
            self.p += 1
            return True
        if self.p[0] == close:
            self.p += 1
            return False
        raise _Fallback()

    cdef inline bint opens(self, char close) except -1:
        """Right after ``[`` or ``{``: whether the container is empty (its ``close`` read)."""
        while _is_ws(self.p[0]):
            self.p += 1
        if self.p[0] == close:
            self.p += 1
            return True
        return False

    cdef inline Py_ssize_t raw_string(self, const char** start) except -1:
        """A string with no escape and no control character: its bytes (UTF-8, unchecked)."""
        while _is_ws(self.p[0]):
            self.p += 1
        if self.p[0] != c'"':
            raise _Fallback()
        self.p += 1
        start[0] = self.p
        cdef unsigned char c
        while True:
            c = <unsigned char>self.p[0]
            if c == c'"':
                break
            if c == c'\\' or c < 0x20:
                raise _Fallback()
            self.p += 1
        cdef Py_ssize_t n = self.p - start[0]
        self.p += 1
        return n

    cdef inline object string(self):
        cdef const char* start
        cdef Py_ssize_t n = self.raw_string(&start)
        try:
            return PyUnicode_DecodeUTF8(start, n, "strict")
        except UnicodeDecodeError:
            raise _Fallback() from None

    cdef inline Py_ssize_t key(self, const char** start) except -1:
        """An object key and its colon."""
        cdef Py_ssize_t n = self.raw_string(start)
        self.expect(c':')
        return n

    cdef inline int number_end(self, bint* is_float) except -1:
        """Move past a JSON number (the strict grammar); the cursor must be at its start."""
        cdef const char* p = self.p
        is_float[0] = False
        if p[0] == c'-':
            p += 1
        if p[0] == c'0':
            p += 1
        elif c'1' <= p[0] <= c'9':
            while c'0' <= p[0] <= c'9':
                p += 1
        else:
            raise _Fallback()
        if p[0] == c'.':
            is_float[0] = True
            p += 1
            if not c'0' <= p[0] <= c'9':
                raise _Fallback()
            while c'0' <= p[0] <= c'9':
                p += 1
        if p[0] == c'e' or p[0] == c'E':
            is_float[0] = True
            p += 1
            if p[0] == c'+' or p[0] == c'-':
                p += 1
            if not c'0' <= p[0] <= c'9':
                raise _Fallback()
            while c'0' <= p[0] <= c'9':
                p += 1
        self.p = p
        return 0

    cdef inline bint small_int(self, int64_t* out) except -1:
        """An integer token of at most 18 digits (exactly JSON's, no fraction or exponent) in
        C; False, the cursor unmoved, for anything else."""
        while _is_ws(self.p[0]):
            self.p += 1
        cdef const char* p = self.p
        cdef bint neg = False
        cdef int64_t v = 0
        cdef int digits = 0
        if p[0] == c'-':
            neg = True
            p += 1
        if p[0] == c'0':
            p += 1
            digits = 1
        else:
            while c'0' <= p[0] <= c'9':
                v = v * 10 + (p[0] - 48)
                p += 1
                digits += 1
                if digits > 18:
                    return False
        if digits == 0 or p[0] == c'.' or p[0] == c'e' or p[0] == c'E' or (
                c'0' <= p[0] <= c'9'):
            return False
        out[0] = -v if neg else v
        self.p = p
        return True

    cdef object integer(self):
        """An integer token as an ``int`` (fallback for anything else)."""
        cdef int64_t v
        if self.small_int(&v):
            return PyLong_FromLongLong(v)
        return self.long_int()

    cdef object long_int(self):
        """An integer token too long for ``small_int``, read as json does (``int(text)``)."""
        cdef bint is_float
        cdef const char* start = self.p
        self.number_end(&is_float)
        if is_float or self.p - start > 4000:
            raise _Fallback()
        return PyLong_FromString(self.src[start - PyBytes_AS_STRING(self.src):
                                          self.p - PyBytes_AS_STRING(self.src)], NULL, 10)

    cdef object number(self):
        """A number token: an ``int``, or a ``float`` exactly as ``float(text)`` reads it."""
        cdef int64_t v
        cdef bint is_float
        cdef char* stop
        cdef double d
        if self.small_int(&v):
            return PyLong_FromLongLong(v)
        cdef const char* start = self.p
        self.number_end(&is_float)
        if not is_float:
            self.p = start
            return self.long_int()
        if _short_decimal(start, self.p, &d):
            return PyFloat_FromDouble(d)
        d = PyOS_string_to_double(start, &stop, NULL)
        if stop != self.p:
            raise _Fallback()
        return PyFloat_FromDouble(d)

    cdef inline int literal(self, const char* word, Py_ssize_t n) except -1:
        if memcmp(self.p, word, n) != 0:
            raise _Fallback()
        self.p += n
        return 0

    cdef object value(self):
        """Any JSON value (the ``inputs`` table): dicts refuse a repeated key."""
        self.ws()
        cdef char c = self.p[0]
        cdef dict obj
        cdef list items
        if c == c'"':
            return self.string()
        if c == c'{':
            self.p += 1
            self.depth += 1
            if self.depth > 64:
                raise _Fallback()
            obj = {}
            if not self.opens(c'}'):
                while True:
                    key = self.string()
                    self.expect(c':')
                    if key in obj:
                        raise _Fallback()
                    obj[key] = self.value()
                    if not self.more(c'}'):
                        break
            self.depth -= 1
            return obj
        if c == c'[':
            self.p += 1
            self.depth += 1
            if self.depth > 64:
                raise _Fallback()
            items = []
            if not self.opens(c']'):
                while True:
                    items.append(self.value())
                    if not self.more(c']'):
                        break
            self.depth -= 1
            return items
        if c == c't':
            self.literal(b"true", 4)
            return True
        if c == c'f':
            self.literal(b"false", 5)
            return False
        if c == c'n':
            self.literal(b"null", 4)
            return None
        return self.number()

    # --- the typed parts ---------------------------------------------------------------------

    cdef inline Py_ssize_t member(self, tuple names) except -1:
        """The position in ``names`` (bytes) of the string at the cursor (else the fallback)."""
        cdef const char* start
        cdef Py_ssize_t n = self.raw_string(&start)
        cdef Py_ssize_t i = _position(start, n, names)
        if i < 0:
            raise _Fallback()
        return i

    cdef tuple shape(self):
        """A list of integers as a tuple; the tuple of a recent equal shape is reused."""
        cdef int64_t dims[MAX_RANK]
        cdef Py_ssize_t rank = 0, i
        cdef uint64_t h
        cdef tuple obj
        self.expect(c'[')
        if not self.opens(c']'):
            while True:
                if rank == MAX_RANK or not self.small_int(&dims[rank]):
                    raise _Fallback()
                rank += 1
                if not self.more(c']'):
                    break
        h = <uint64_t>rank
        for i in range(rank):
            h = h * <uint64_t>1000003 + <uint64_t>dims[i]
        h = (h ^ (h >> 17)) % SHAPE_CACHE
        if self.shape_rank[h] == rank and memcmp(self.shape_dims[h], dims,
                                                 rank * sizeof(int64_t)) == 0:
            return <tuple>self.shape_objs[h]
        obj = PyTuple_New(rank)
        for i in range(rank):
            item = PyLong_FromLongLong(dims[i])
            Py_INCREF(item)
            PyTuple_SET_ITEM(obj, i, item)
        PyObject_GC_UnTrack(obj)  # of ints only: never in a cycle
        self.shape_rank[h] = rank
        for i in range(rank):
            self.shape_dims[h][i] = dims[i]
        self.shape_objs[h] = obj
        return obj

    cdef object tensor_id(self):
        """A tensor id: an integer in [0, 10**18] (others: refimpl)."""
        cdef int64_t v
        if not self.small_int(&v) or v < 0:
            raise _Fallback()
        return PyLong_FromUnsignedLongLong(<uint64_t>v)

    cdef object tensor(self):
        """``{"id", "shape", "dtype", "status"}`` in any order, each once."""
        cdef const char* k
        cdef Py_ssize_t n
        cdef int seen = 0, bit
        cdef object tid = None, dtype = None, status = None
        cdef tuple shape = None
        self.expect(c'{')
        if self.opens(c'}'):
            raise _Fallback()
        while True:
            n = self.key(&k)
            if n == 2 and memcmp(k, b"id", 2) == 0:
                bit = 1
                tid = self.tensor_id()
            elif n == 5 and memcmp(k, b"shape", 5) == 0:
                bit = 2
                shape = self.shape()
            elif n == 5 and memcmp(k, b"dtype", 5) == 0:
                bit = 4
                dtype = _DTYPES[self.member(_DTYPE_NAMES)]
            elif n == 6 and memcmp(k, b"status", 6) == 0:
                bit = 8
                status = _STATUSES[self.member(_STATUS_NAMES)]
            else:
                raise _Fallback()
            if seen & bit:
                raise _Fallback()
            seen |= bit
            if not self.more(c'}'):
                break
        if seen != 15:
            raise _Fallback()
        return new_tensor(tid, shape, dtype, status)

    cdef object scalar(self, int family):
        """A number or bool, converted as ``refimpl.stream._scalar`` does."""
        self.ws()
        if self.p[0] == c't':
            self.literal(b"true", 4)
            return True
        if self.p[0] == c'f':
            self.literal(b"false", 5)
            return False
        value = self.number()
        if family == FAM_FLOAT:
            if type(value) is int:
                try:
                    return float(value)
                except OverflowError:
                    raise _Fallback() from None
            return value
        if family == FAM_INT and type(value) is float and (<double>value).is_integer():
            return int(value)
        return value

    cdef object field(self, int kind, int family):
        cdef list items
        if kind == K_TENSOR:
            return self.tensor()
        if kind == K_SCALAR:
            return self.scalar(family)
        if kind == K_INT:
            return self.integer()
        if kind == K_TENSORS or kind == K_INTS or kind == K_RANGES:
            self.expect(c'[')
            items = []
            if self.opens(c']'):
                if kind == K_TENSORS:
                    raise _Fallback()
                return ()
            while True:
                if kind == K_TENSORS:
                    items.append(self.tensor())
                elif kind == K_INTS:
                    items.append(self.integer())
                else:
                    self.expect(c'[')
                    start = self.integer()
                    self.expect(c',')
                    stop = self.integer()
                    self.expect(c']')
                    items.append((start, stop))
                if not self.more(c']'):
                    break
            return tuple(items)
        self.ws()
        if kind == K_BOOL:
            if self.p[0] == c't':
                self.literal(b"true", 4)
                return True
            self.literal(b"false", 5)
            return False
        return self.string()  # K_TEXT

    cdef object input_entry(self):
        """One entry of ``inputs`` of ``shape``, ``dtype`` and optionally ``strides`` and a
        ``random`` seed, in any order, each once, as its ``InputSpec`` (filled at its slots,
        untracked: of ints and an enum member); ``None`` at a ``data`` key."""
        cdef const char* k
        cdef Py_ssize_t i, n
        cdef int seen = 0
        cdef int64_t seed
        spec = new_instance(<PyTypeObject*>_InputSpec)
        self.expect(c'{')
        while not seen or self.more(c'}'):
            n = self.key(&k)
            i = _position(k, n, _IN_NAMES)
            if i < 0 or seen & (1 << i):
                raise _Fallback()
            if i == 3:
                return None  # data: read generically
            seen |= 1 << i
            if i == 1:
                value = _DTYPES[self.member(_DTYPE_NAMES)]
            elif i == 4:
                if not self.small_int(&seed):
                    raise _Fallback()
                value = PyLong_FromLongLong(seed)
            else:
                value = self.shape()
            set_slot(spec, _IN_OFFSETS[i], value)
        if seen & 3 != 3:
            raise _Fallback()
        for i in range(2, 5):
            if not seen & (1 << i):
                set_slot(spec, _IN_OFFSETS[i], None)
        PyObject_GC_UnTrack(spec)
        return spec

    cdef dict inputs_table(self):
        """``inputs``: keys that are ids in decimal, each once, read as ``_parse_inputs`` does
        (by ascending id); an entry with ``data`` is decoded generically and parsed by
        refimpl's ``_parse_input``."""
        cdef const char* k
        cdef const char* mark
        cdef Py_ssize_t n, i
        cdef int64_t tid
        cdef dict specs = {}
        self.expect(c'{')
        if self.opens(c'}'):
            return specs
        while True:
            n = self.key(&k)
            if n < 1 or n > 18 or (n > 1 and k[0] == c'0'):
                raise _Fallback()
            tid = 0
            for i in range(n):
                if not c'0' <= k[i] <= c'9':
                    raise _Fallback()
                tid = tid * 10 + (k[i] - 48)
            key = PyLong_FromLongLong(tid)
            if key in specs:
                raise _Fallback()
            mark = self.p
            spec = self.input_entry()
            if spec is None:
                self.p = mark
                try:
                    spec = _ref._parse_input(self.value(), f"inputs.{tid}", _ref._At())
                except StreamError:
                    raise _Fallback() from None
            specs[key] = spec
            if not self.more(c'}'):
                break
        return {tid: specs[tid] for tid in sorted(specs)}

    cdef object sync(self):
        """The rest of ``{"op": "Sync", "tensors": [...]}``."""
        cdef const char* k
        cdef list ids = []
        if not self.more(c'}'):
            raise _Fallback()
        if self.key(&k) != 7 or memcmp(k, b"tensors", 7) != 0:
            raise _Fallback()
        self.expect(c'[')
        if not self.opens(c']'):
            while True:
                ids.append(self.tensor_id())
                if not self.more(c']'):
                    break
        self.expect(c'}')
        return Sync(tuple(ids))

    cdef _OpForm form(self):
        """The op named by the string at the cursor (``None``: ``Sync``), found by its bytes
        among recent names first."""
        cdef const char* start
        cdef Py_ssize_t n = self.raw_string(&start), i
        cdef uint64_t h = <uint64_t>n
        cdef bytes key
        for i in range(n):
            h = h * <uint64_t>31 + <unsigned char>start[i]
        h = (h ^ (h >> 11)) % NAME_CACHE
        cached = self.name_keys[h]
        if cached is not None:
            key = <bytes>cached
            if PyBytes_GET_SIZE(key) == n and memcmp(PyBytes_AS_STRING(key), start, n) == 0:
                return <_OpForm>self.name_forms[h]
        try:
            name = PyUnicode_DecodeUTF8(start, n, "strict")
        except UnicodeDecodeError:
            raise _Fallback() from None
        if name == "Sync":
            return None
        found = _FORMS.get(name)
        if found is None:
            raise _Fallback()
        self.name_keys[h] = PyBytes_FromStringAndSize(start, n)
        self.name_forms[h] = found
        return <_OpForm>found

    cdef object item(self):
        """One op: ``"op"`` first, then its SCHEMA's fields in any order, each once."""
        cdef const char* k
        cdef Py_ssize_t n, i, next_field
        cdef int seen = 0
        cdef _OpForm form
        cdef bytes name
        self.expect(c'{')
        n = self.key(&k)
        if n != 2 or memcmp(k, b"op", 2) != 0:
            raise _Fallback()
        form = self.form()
        if form is None:
            return self.sync()
        # the operand struct, filled at its slots field by field as they are read (a
        # document the scan gives up on drops it half filled)
        desc = new_instance(<PyTypeObject*>form.struct)
        next_field = 0
        while self.more(c'}'):
            n = self.key(&k)
            i = next_field  # the canonical order first
            name = <bytes>form.names[i] if i < form.n else None
            if name is None or PyBytes_GET_SIZE(name) != n or memcmp(PyBytes_AS_STRING(name),
                                                                      k, n) != 0:
                i = _position(k, n, form.names)
            if i < 0 or seen & (1 << i):
                raise _Fallback()
            seen |= 1 << i
            next_field = i + 1
            set_slot(desc, form.offsets[i], self.field(form.kinds[i], form.family))
        if seen != (1 << form.n) - 1:
            raise _Fallback()
        PyObject_GC_UnTrack(desc)  # frozen, of snapshots and plain values
        return new_operation(form.op, desc)

    cdef object document(self):
        """The whole document: ``version``, ``inputs`` and ``ops`` in any order, each once."""
        cdef const char* k
        cdef Py_ssize_t n
        cdef int seen = 0, bit
        cdef int64_t version
        cdef list items = []
        cdef dict specs = {}
        self.expect(c'{')
        if self.opens(c'}'):
            raise _Fallback()
        while True:
            n = self.key(&k)
            if n == 7 and memcmp(k, b"version", 7) == 0:
                bit = 1
                if not self.small_int(&version) or version != FORMAT_VERSION:
                    raise _Fallback()
            elif n == 6 and memcmp(k, b"inputs", 6) == 0:
                bit = 2
                specs = self.inputs_table()
            elif n == 3 and memcmp(k, b"ops", 3) == 0:
                bit = 4
                self.expect(c'[')
                if not self.opens(c']'):
                    while True:
                        items.append(self.item())
                        if not self.more(c']'):
                            break
            else:
                raise _Fallback()
            if seen & bit:
                raise _Fallback()
            seen |= bit
            if not self.more(c'}'):
                break
        if seen & 5 != 5:
            raise _Fallback()
        self.ws()
        if self.p != self.end:
            raise _Fallback()
        return Stream(inputs=specs, items=tuple(items))


# --- the public functions ----------------------------------------------------------------------

def stream_from_json(source, *, validate=True):
    """Parse a version-1 JSON stream (text, bytes or decoded object) into a ``Stream``.

    Mirrors refimpl.stream.stream_from_json."""
    cdef int collecting = PyGC_Disable()
    try:
        return _read(source, validate)
    finally:
        if collecting:
            PyGC_Enable()


cdef object _read(object source, bint validate):
    """``stream_from_json`` with the collector paused."""
    if isinstance(source, dict):
        stream = _ref.stream_from_json(source, validate=False)
    else:
        if isinstance(source, str):
            try:
                data = (<str>source).encode("utf-8")
            except UnicodeEncodeError:
                return _ref.stream_from_json(source, validate=validate)
        elif type(source) is bytes:
            data = source
        elif isinstance(source, (bytes, bytearray)):
            data = bytes(source)
        else:
            return _ref.stream_from_json(source, validate=validate)
        try:
            stream = _Scan(data).document()
        except _Fallback:
            return _ref.stream_from_json(source, validate=validate)
    if validate:
        validate_stream(stream)
    return stream


def load_stream(path, *, validate=True):
    """Read and parse a stream file (UTF-8 JSON).

    Mirrors refimpl.stream.load_stream."""
    return stream_from_json(Path(path).read_bytes(), validate=validate)
