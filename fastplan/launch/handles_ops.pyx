# cython: language_level=3
"""What launch planning reads of an op: the tensors it reads, and which tensors a stream
creates.

burn counterpart: ``OperationIr::nodes`` (burn-ir) and the ``Init`` ops that bring a stream's
inputs.
Part of fastplan's twin of ``refimpl/planner/launch/handles.py`` (see ``handles_layouts`` for
the split): ``op_nodes`` reads an exact op's tensors at their slots in field order, and
``init_targets`` passes over an op that creates nothing by its op-table entry's address.
"""


from cpython.object cimport PyTypeObject
from cpython.ref cimport PyObject
from cpython.tuple cimport PyTuple_GET_ITEM
from libc.stdint cimport int64_t
from libc.string cimport memset

cimport cython

from fastplan._keys cimport exact_codes, op_code_of, slots


from refimpl.ir import FieldKind, OperationIr, TensorStatus
from refimpl.ops import OPS, OpKind


cdef object _READ_WRITE = TensorStatus.ReadWrite
cdef object _DROP = OpKind.DROP
cdef object _INIT = OpKind.INIT
cdef object _VIEW_KINDS = (OpKind.VIEW, OpKind.MOVEMENT)


cdef object _TENSOR = FieldKind.TENSOR
cdef object _TENSORS = FieldKind.TENSORS
cdef dict _INPUT_FIELDS = {}  # operand struct type -> ((field, is a tuple of tensors), ...)
cdef dict _HAS_OUT = {}  # operand struct type -> whether it has an ``out`` field


cdef tuple _input_fields(type struct):
    found = _INPUT_FIELDS.get(struct)
    if found is None:
        found = _INPUT_FIELDS[struct] = tuple([
            (name, kind is _TENSORS) for name, kind in struct.SCHEMA
            if name != "out" and (kind is _TENSOR or kind is _TENSORS)])
    return <tuple>found


cdef tuple _inputs(object op):
    """``op.inputs()``: the tensors it reads, in field order."""
    return tuple(_reads(op.desc))


cdef list _reads(object desc):
    cdef list found = []
    for name, many in _input_fields(type(desc)):
        if many:
            found.extend(getattr(desc, name))
        else:
            found.append(getattr(desc, name))
    return found


cdef tuple op_nodes(object op):
    """``op.nodes()`` (inputs, then the ``out`` tensor if the struct has one), for an exact
    ``OperationIr``; anything else answers its own ``nodes()``."""
    if type(op) is not OperationIr:
        return op.nodes()
    desc = op.desc
    cdef list found = _reads(desc)
    struct = type(desc)
    has_out = _HAS_OUT.get(struct)
    if has_out is None:
        has_out = _HAS_OUT[struct] = any([name == "out" for name, _ in struct.SCHEMA])
    if has_out:
        found.append(desc.out)
    return tuple(found)


def init_targets(stream):
    """Stream inputs an ``Init`` op creates (they are not live before it).

    Mirrors refimpl.planner.launch.handles.init_targets.
    """
    return init_targets_c(stream)


# The op table's entries that create nothing (every op but ``Init``), by address: an open
# addressing set built once from ``OPS`` (held here for good, so the addresses stay valid).
# ``init_targets_c`` skips an exact ``OperationIr`` whose op is one of them with a probe or
# two instead of ``op_code_of``'s call.
cdef tuple _OPS_HELD = tuple(OPS)
cdef object _OPERATION_IR = OperationIr


cdef extern from *:
    """
    #define fastplan_type_address(o) ((void*)Py_TYPE(o))
    """
    void* _type_address "fastplan_type_address"(PyObject* o) noexcept
    # fastplan._keys' ``compact_int`` on a borrowed pointer (its C function, emitted with the
    # cimport)
    int _compact_at "fastplan_compact_int"(PyObject* o, long long* v) noexcept
    PyTypeObject PyLong_Type


# Whether each op of the op table, by op code, creates a tensor (``Init``).
cdef bint _CREATES[512]
assert len(OPS) <= 512
for _op in OPS:
    _CREATES[_op.code] = _op.kind is _INIT


cdef enum:
    _PLAIN_CAP = 2048  # a power of two, at least 4x the table's ops
cdef PyObject* _PLAIN_OPS[_PLAIN_CAP]
memset(_PLAIN_OPS, 0, sizeof(_PLAIN_OPS))
assert len(_OPS_HELD) * 4 <= _PLAIN_CAP


cdef inline size_t _plain_home(PyObject* op) noexcept:
    return ((<size_t>op) >> 4) & (_PLAIN_CAP - 1)


cdef bint _is_plain_op(PyObject* op) noexcept:
    """Whether ``op`` is an entry of ``OPS`` that creates nothing (by address)."""
    cdef size_t i = _plain_home(op)
    while _PLAIN_OPS[i] != NULL:
        if _PLAIN_OPS[i] == op:
            return True
        i = (i + 1) & (_PLAIN_CAP - 1)
    return False


for _op in _OPS_HELD:
    if _op.kind is not _INIT and not _is_plain_op(<PyObject*>_op):
        _i = _plain_home(<PyObject*>_op)
        while _PLAIN_OPS[_i] != NULL:
            _i = (_i + 1) & (_PLAIN_CAP - 1)
        _PLAIN_OPS[_i] = <PyObject*>_op


cdef frozenset init_targets_c(object stream):
    """``init_targets`` as a C call (each walk's memory loads the stream's inputs): an exact
    ``OperationIr`` whose op is an entry of the op table that creates nothing is passed over
    by the op's address (``_is_plain_op``), any other item read as refimpl reads it."""
    cdef list found = []
    cdef int64_t code, struct_code
    cdef Py_ssize_t known, i, n
    cdef Py_ssize_t op_at = slots().op
    cdef PyObject* obj
    cdef PyObject* op
    items = stream.items
    if type(items) is not tuple:
        items = tuple(items)
    n = len(<tuple>items)
    for i in range(n):
        obj = PyTuple_GET_ITEM(<tuple>items, i)
        if _type_address(obj) == <void*>_OPERATION_IR:
            op = (<PyObject**>((<char*>obj) + op_at))[0]
            if op != NULL and _is_plain_op(op):
                continue
        item = <object>obj
        known = op_code_of(item)
        if known >= 0 and not _CREATES[known]:  # a table op that creates nothing
            continue
        if exact_codes(item, &code, &struct_code):
            if _CREATES[code]:
                found.append(item.desc.out.id)
        elif isinstance(item, OperationIr) and item.op.kind is _INIT:
            found.append(item.desc.out.id)
    return frozenset(found)

