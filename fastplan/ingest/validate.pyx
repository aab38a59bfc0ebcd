# cython: language_level=3
"""The spec checker for op streams, compiled: ``validate_stream`` accepts exactly the valid
streams and raises refimpl's error for every other.

burn counterpart: none as one function (see ``refimpl/validate.py``: ``TensorCheck``, the
``FusionTensor`` reference counts, the ``HandleContainer``).
Mirrors ``refimpl/validate.py``: same names, the same first error (class, op index, field,
message) for every stream.

Differs from refimpl:

* The walk keeps refimpl's own ``_State`` (the same dicts of definitions, ends and pending
  ``Init`` targets) and checks the ops that make most of a stream in one typed pass each
  (``_TYPED_STRUCTS``: element-wise unary, binary, scalar, clamp and mask-where ops, ``Drop``,
  per-axis and full reductions, swap_dims, reshape, matmul), as exact ``TensorIr`` /
  operand-struct objects, plus every ``Sync``. Such an op is
  only ever *accepted* here; at the first doubt (any check that fails, any value of another
  type) refimpl's ``_check_op`` / ``_check_sync`` runs on the same state, and raises its
  error or accepts. Every other op goes to refimpl's ``_check_op`` directly. The state is
  changed exactly as refimpl's ``_apply`` changes it, so the two walks cannot drift.
* The ``inputs`` table is checked in one typed pass when every entry is an exact
  ``InputSpec`` with a seed and no strides (else by refimpl's ``_check_inputs``), and the
  walk's start (``_start``: the ``Init`` targets, the inputs' definitions) is found in one
  typed pass when no op is an ``Init`` (else by refimpl's ``_start``).
* The cyclic garbage collector is paused during the walk (its state restored after): the
  walk's dicts hold only ints, tuples and enum members.
"""

from cpython.dict cimport PyDict_GetItem
from cpython.ref cimport PyObject

from fastplan._keys cimport compact_int, slot, slots, struct_info, Slots, StructInfo
from fastplan._shapes cimport broadcast_pair

from refimpl import validate as _ref
from refimpl.data import InputSpec
from refimpl.dtypes import DType, DTypeClass
from refimpl.errors import FieldTypeError
from refimpl.ir import (OP_IR_STRUCTS, BinaryOpIr, ClampOpIr, DropOpIr, FieldKind,
                        MaskWhereOpIr, OperationIr, ReduceDimOpIr, ScalarOpIr, ShapeOpIr,
                        SwapDimsOpIr, Sync, TensorIr, TensorStatus, UnaryOpIr)
from refimpl.ops import OPS, OpKind, OutDType, ShapeRule
from refimpl.validate import MAX_DIM, MAX_NUMEL, MAX_RANK, MAX_STRIDE_CHECK, tensor_fields

__all__ = ["validate_stream", "MAX_RANK", "MAX_DIM", "MAX_NUMEL", "MAX_STRIDE_CHECK",
           "tensor_fields"]

cdef extern from "Python.h":
    int PyGC_Enable() noexcept
    int PyGC_Disable() noexcept

cdef enum:
    RULE_SAME = 0
    RULE_BROADCAST = 1
    RULE_NONE = 2
    RULE_REDUCE_DIM = 3
    RULE_REDUCE_FULL = 4
    RULE_SWAP_DIMS = 5
    RULE_RESHAPE = 6
    RULE_MATMUL = 7
    RULE_MASK = 8
    FAM_NONE = 0
    FAM_FLOAT = 1
    FAM_INT = 2
    FAM_BOOL = 3
    N_DTYPES_MAX = 16

cdef object _TensorIr = TensorIr
cdef object _OperationIr = OperationIr
cdef object _Sync = Sync
cdef object _InputSpec = InputSpec
cdef object _NOT_INIT = TensorStatus.NotInit
cdef object _READ_WRITE = TensorStatus.ReadWrite
cdef object _STATUS_TYPE = TensorStatus
cdef object _BOOL_DTYPE = DType.BOOL
cdef object _END_DROP = "Drop"
cdef object _END_RW = "ReadWrite"
cdef long long _MAX_DIM = MAX_DIM
cdef long long _MAX_NUMEL = MAX_NUMEL
cdef Py_ssize_t _MAX_RANK = MAX_RANK

# DType members and their class (FAM_*), by position: found by identity, no hashing.
cdef tuple _DTYPES = tuple(DType)
cdef int _DTYPE_FAM[N_DTYPES_MAX]
assert len(_DTYPES) <= N_DTYPES_MAX
_FAM_CODE = {None: FAM_NONE, DTypeClass.FLOAT: FAM_FLOAT, DTypeClass.INT: FAM_INT,
             DTypeClass.BOOL: FAM_BOOL}
assert set(_FAM_CODE) == set(DTypeClass) | {None}
for _i, _d in enumerate(_DTYPES):
    _DTYPE_FAM[_i] = _FAM_CODE[_d.cls]


cdef inline Py_ssize_t _dtype_at(object dtype) noexcept:
    cdef Py_ssize_t i
    for i in range(len(_DTYPES)):
        if <PyObject*>_DTYPES[i] == <PyObject*>dtype:
            return i
    return -1


cdef class _Form:
    """An op the typed pass checks: its struct, fields and rules."""
    cdef object struct
    cdef bint drop
    cdef int family  # FAM_*
    cdef object out_rule  # OutDType
    cdef int shape_rule  # RULE_*
    cdef Py_ssize_t n_tensors  # tensor fields (SCHEMA order)
    cdef Py_ssize_t offsets[4]
    cdef bint is_out[4]
    cdef bint is_mask[4]
    cdef Py_ssize_t n_scalars  # scalar fields, checked at the precision of lhs (ScalarOpIr)
    cdef Py_ssize_t scalar_offsets[2]  # or of out (every other struct)
    cdef bint scalar_lhs
    cdef Py_ssize_t n_ints  # INT fields: axes of the first operand
    cdef Py_ssize_t int_offsets[2]

    def __init__(self, op):
        cdef const StructInfo* info = struct_info(OP_IR_STRUCTS.index(op.struct))
        self.struct = op.struct
        self.drop = op.kind is OpKind.DROP
        self.family = _FAM_CODE[op.family]
        self.out_rule = op.out_dtype
        self.shape_rule = _RULES[op.shape]
        self.n_tensors = self.n_scalars = self.n_ints = 0
        self.scalar_lhs = op.struct is ScalarOpIr
        for i, (name, kind) in enumerate(op.struct.SCHEMA):
            if kind is FieldKind.TENSOR:
                self.offsets[self.n_tensors] = info.offsets[i]
                self.is_out[self.n_tensors] = name == "out"
                self.is_mask[self.n_tensors] = name == "mask"
                self.n_tensors += 1
            elif kind is FieldKind.SCALAR:
                self.scalar_offsets[self.n_scalars] = info.offsets[i]
                self.n_scalars += 1
            elif kind is FieldKind.INT:
                self.int_offsets[self.n_ints] = info.offsets[i]
                self.n_ints += 1
            else:
                raise AssertionError(f"{op.name}: field {name} is not for the typed pass")


_RULES = {ShapeRule.SAME: RULE_SAME, ShapeRule.BROADCAST: RULE_BROADCAST,
          ShapeRule.NONE: RULE_NONE, ShapeRule.REDUCE_DIM: RULE_REDUCE_DIM,
          ShapeRule.REDUCE_FULL: RULE_REDUCE_FULL, ShapeRule.SWAP_DIMS: RULE_SWAP_DIMS,
          ShapeRule.RESHAPE: RULE_RESHAPE, ShapeRule.MATMUL: RULE_MATMUL,
          ShapeRule.MASK: RULE_MASK}
# The operand structs the typed pass takes, with the shape rules each may come with (other
# pairs, and Init, go to refimpl).
_TYPED_STRUCTS = {
    UnaryOpIr: (ShapeRule.SAME, ShapeRule.REDUCE_FULL),
    BinaryOpIr: (ShapeRule.BROADCAST, ShapeRule.MATMUL),
    ScalarOpIr: (ShapeRule.SAME,),
    DropOpIr: (ShapeRule.NONE,),
    ClampOpIr: (ShapeRule.SAME,),
    ReduceDimOpIr: (ShapeRule.REDUCE_DIM,),
    SwapDimsOpIr: (ShapeRule.SWAP_DIMS,),
    ShapeOpIr: (ShapeRule.RESHAPE,),
    MaskWhereOpIr: (ShapeRule.MASK,),
}


def _typed(op) -> bool:
    """Whether the typed pass takes ``op``: the structs and rules it knows, no ``Init``."""
    return (op.shape in _TYPED_STRUCTS.get(op.struct, ()) and op.kind is not OpKind.INIT)


cdef dict _FORMS = {op: _Form(op) for op in OPS if _typed(op)}
# Every op of the table: whether it is an ``Init`` (``_start_typed``).
cdef dict _IS_INIT = {op: op.kind is OpKind.INIT for op in OPS}


# --- the typed pass ----------------------------------------------------------------------------

cdef inline bint _exact_nonneg(object value) noexcept:
    """An exact ``int`` >= 0 (a tensor id)."""
    cdef long long v
    if type(value) is not int:
        return False
    if compact_int(value, &v):
        return v >= 0
    return value >= 0


cdef bint _dims_ok(object shape) except -1:
    """``_check_dims`` passes: a tuple of 1..MAX_RANK exact ints in [0, MAX_DIM], and at most
    MAX_NUMEL elements."""
    cdef long long d, numel = 1
    cdef bint zero = False
    cdef Py_ssize_t i, n
    if type(shape) is not tuple:
        return False
    n = len(<tuple>shape)
    if n < 1 or n > _MAX_RANK:
        return False
    for i in range(n):
        value = (<tuple>shape)[i]
        if type(value) is not int or not compact_int(value, &d):
            if type(value) is not int or value < 0 or value > _MAX_DIM:
                return False
            d = value
        if d < 0 or d > _MAX_DIM:
            return False
        if d == 0:
            zero = True
        elif numel <= _MAX_NUMEL:
            numel *= d  # both <= 2**40 and 2**31: no overflow
    return zero or numel <= _MAX_NUMEL


cdef object _numel(tuple shape):
    n = 1
    for d in shape:
        n *= d
    return n


cdef object _expected(_Form form, PyObject** shapes, Py_ssize_t n_shapes, PyObject** ints):
    """The output shape ``form``'s rule gives for the inputs' ``n_shapes`` ``shapes`` (SCHEMA
    order) and its INT fields ``ints`` (``form.n_ints``), or ``None`` where refimpl's rule
    would raise (its axis checks included); ``False`` for a rule without output."""
    cdef int rule = form.shape_rule
    cdef tuple first = <tuple>shapes[0]
    cdef Py_ssize_t rank = len(first), i
    for i in range(form.n_ints):  # _check_axis_fields: every axis attribute of the first one
        if not 0 <= <object>ints[i] < rank:
            return None
    if rule == RULE_SAME:
        return first
    if rule == RULE_BROADCAST or rule == RULE_MASK:
        shape = first
        for i in range(1, n_shapes):
            shape = broadcast_pair(shape, <tuple>shapes[i])
            if shape is None:
                return None
        return shape
    if rule == RULE_NONE:
        return False
    if rule == RULE_REDUCE_DIM:
        found = list(first)
        found[<object>ints[0]] = 1
        return tuple(found)
    if rule == RULE_REDUCE_FULL:
        return (1,)
    if rule == RULE_SWAP_DIMS:
        found = list(first)
        a, b = <object>ints[0], <object>ints[1]
        found[a], found[b] = found[b], found[a]
        return tuple(found)
    if rule == RULE_MATMUL:  # (no negative index: the module is built without wraparound)
        lhs, rhs = first, <tuple>shapes[1]
        if rank < 2 or len(rhs) != rank or lhs[rank - 1] != rhs[rank - 2]:
            return None
        batch = broadcast_pair(lhs[:rank - 2], rhs[:rank - 2])
        if batch is None:
            return None
        return batch + (lhs[rank - 2], rhs[rank - 1])
    return None  # RULE_RESHAPE: the caller's


cdef bint _scalar_ok(object value, int family, object dtype) except -1:
    """``_scalar_problem`` finds nothing (ints of an int op: refimpl's own check)."""
    if family == FAM_BOOL:
        return type(value) is bool
    if type(value) is not float and type(value) is not int:
        return False
    if family != FAM_INT:
        return True
    return _ref._scalar_problem(value, DTypeClass.INT, dtype) is None


cdef bint _op_typed(object item, Py_ssize_t index, _Form form, dict defined, dict ended,
                    dict pending) except -1:
    """Check ``item`` as ``_check_op`` does; apply it and return True if it is valid, or
    return False (nothing changed) if refimpl must look at it."""
    cdef const Slots* at = slots()
    cdef object desc = slot(item, at.desc)
    cdef PyObject* ts[4]
    cdef object t, tid, shape, dtype, status, known, main = None, out = None, first = None
    cdef Py_ssize_t i, pos
    cdef int fam
    cdef PyObject* found
    cdef PyObject* shapes[4]  # the inputs' (borrowed from their snapshots)
    cdef PyObject* ints[2]  # the INT fields' (borrowed from desc)
    cdef Py_ssize_t n_shapes = 0
    if type(desc) is not form.struct:
        return False
    for i in range(form.n_ints):  # _FIELD_OK: an int (exact here)
        value = slot(desc, form.int_offsets[i])
        if type(value) is not int:
            return False
        ints[i] = <PyObject*>value
    for i in range(form.n_tensors):
        t = slot(desc, form.offsets[i])
        if type(t) is not _TensorIr:
            return False
        ts[i] = <PyObject*>t
        tid = slot(t, at.tid)
        shape = slot(t, at.shape)
        dtype = slot(t, at.dtype)
        status = slot(t, at.status)
        pos = _dtype_at(dtype)
        if not _exact_nonneg(tid) or pos < 0 or type(status) is not _STATUS_TYPE:
            return False
        if not _dims_ok(shape):
            return False
        if form.is_out[i]:
            if status is not _NOT_INIT:
                return False
            if tid in defined or (pending and tid in pending) or tid in ended:
                return False
            out = t
            continue
        if tid in ended or (pending and tid in pending):
            return False
        found = PyDict_GetItem(defined, tid)
        if found == NULL or status is _NOT_INIT:
            return False
        known = <object>found
        if form.drop and status is not _READ_WRITE:
            return False
        if (<tuple>known)[1] is not dtype or (<tuple>known)[0] != shape:
            return False
        shapes[n_shapes] = <PyObject*>shape
        n_shapes += 1
        # dtypes: a mask is bool; every other operand of the op's family and of the first
        # one's dtype
        if form.is_mask[i]:
            if dtype is not _BOOL_DTYPE:
                return False
            continue
        fam = _DTYPE_FAM[pos]
        if form.family != FAM_NONE and fam != form.family:
            return False
        if main is not None and dtype is not main:
            return False
        if main is None:
            main = dtype
            first = t
    if out is not None:
        dtype = slot(out, at.dtype)
        fam = _DTYPE_FAM[_dtype_at(dtype)]
        rule = form.out_rule
        if rule is OutDType.SAME:
            ok = main is None or dtype is main
        elif rule is OutDType.BOOL:
            ok = dtype is _BOOL_DTYPE
        elif rule is OutDType.INT:
            ok = fam == FAM_INT
        elif rule is OutDType.FLOAT:
            ok = fam == FAM_FLOAT
        else:
            ok = form.family == FAM_NONE or fam == form.family
        if not ok:
            return False
    for i in range(form.n_scalars):  # at lhs's precision (ScalarOpIr) or out's
        if not _scalar_ok(slot(desc, form.scalar_offsets[i]), form.family,
                          slot(first if form.scalar_lhs else out, at.dtype)):
            return False
    if form.shape_rule == RULE_RESHAPE:
        if _numel(<tuple>shapes[0]) != _numel(slot(out, at.shape)):
            return False
    else:
        expected = _expected(form, shapes, n_shapes, ints)
        if expected is None:
            return False
        if expected is not False and slot(out, at.shape) != expected:
            return False
    # _apply
    how = _END_DROP if form.drop else _END_RW
    for i in range(form.n_tensors):
        t = <object>ts[i]
        tid = slot(t, at.tid)
        if form.is_out[i]:
            if pending:
                pending.pop(tid, None)
            defined[tid] = (slot(t, at.shape), slot(t, at.dtype))
        elif form.drop or slot(t, at.status) is _READ_WRITE:
            if tid not in ended:
                ended[tid] = (how, index)
    return True


cdef bint _sync_typed(object item, dict defined, dict ended, dict pending) except -1:
    """Whether ``_check_sync`` passes: distinct exact int ids, each live."""
    tensors = item.tensors
    if type(tensors) is not tuple:
        return False
    cdef set seen = set()
    for tid in <tuple>tensors:
        if type(tid) is not int or tid in ended or tid in pending or tid not in defined:
            return False
        if tid in seen:
            return False
        seen.add(tid)
    return True


cdef bint _inputs_typed(object inputs) except -1:
    """Whether ``_check_inputs`` passes, for the common table: exact ``InputSpec`` entries
    under exact int ids >= 0, each with a valid shape, a ``DType``, no strides, no data and
    an exact int seed >= 0 (False: refimpl must look at it)."""
    if type(inputs) is not dict:
        return False
    for tid, spec in (<dict>inputs).items():
        if not _exact_nonneg(tid) or type(spec) is not _InputSpec:
            return False
        if not _dims_ok(spec.shape) or _dtype_at(spec.dtype) < 0:
            return False
        if spec.strides is not None or spec.data is not None or not _exact_nonneg(
                spec.random):
            return False
    return True


cdef object _start_typed(object stream, tuple items):
    """``_start(stream)``: refimpl's ``_State`` with every input defined, for a stream of
    exact ops and syncs without an ``Init`` (else refimpl's ``_start``)."""
    cdef const Slots* at = slots()
    cdef PyObject* found
    inputs = stream.inputs
    if type(inputs) is not dict:
        return _ref._start(stream)
    for item in items:
        if type(item) is _OperationIr:
            found = PyDict_GetItem(_IS_INIT, slot(item, at.op))
            if found == NULL or <object>found is True:
                return _ref._start(stream)
        elif type(item) is not _Sync:
            return _ref._start(stream)
    state = _ref._State()
    cdef dict defined = state.defined
    for tid in sorted(inputs):
        spec = (<dict>inputs)[tid]
        shape = spec.shape
        defined[tid] = (shape if type(shape) is tuple else tuple(shape), spec.dtype)
    return state


def validate_stream(stream):
    """Raise the first ``StreamError`` of ``stream``; return ``None`` if it is valid.

    Mirrors refimpl.validate.validate_stream."""
    cdef int collecting = PyGC_Disable()
    try:
        _walk(stream)
    finally:
        if collecting:
            PyGC_Enable()


cdef _walk(stream):
    """``validate_stream`` with the collector paused."""
    if not _inputs_typed(stream.inputs):
        _ref._check_inputs(stream)
    items = stream.items
    state = (_start_typed(stream, <tuple>items) if type(items) is tuple
             else _ref._start(stream))
    cdef dict defined = state.defined, ended = state.ended, pending = state.pending
    cdef const Slots* at = slots()
    cdef Py_ssize_t index = 0
    cdef PyObject* found
    for item in items:
        if type(item) is _OperationIr:
            found = PyDict_GetItem(_FORMS, slot(item, at.op))
            if found == NULL or not _op_typed(item, index, <_Form>found, defined, ended,
                                              pending):
                _ref._check_op(item, index, state)
        elif type(item) is _Sync:
            if not _sync_typed(item, defined, ended, pending):
                _ref._check_sync(item, index, state)
        elif isinstance(item, Sync):
            _ref._check_sync(item, index, state)
        elif isinstance(item, OperationIr):
            _ref._check_op(item, index, state)
        else:
            raise FieldTypeError(f"item is a {type(item).__name__}, not an op or a Sync",
                                 op_index=index)
        index += 1
