# cython: language_level=3
"""The session's recording path, compiled: ``Session`` records the same stream as refimpl's.

burn counterpart: the ``Fusion`` backend's client (``FusionClient::register``,
``crates/burn-fusion/src/client/``), as for ``refimpl/frontend/session.py``.
Mirrors ``refimpl/frontend/session.py``: ``Session`` is refimpl's, with the recording path
(``_record``, ``_typed``, ``_commit``, ``_drop``, and ``random`` and ``_input`` for inputs)
compiled; the same items, statuses, drops
and errors (class, op index, field, message) for every call, the same ``Tensor`` handles
(refimpl's class, or for the ops' outputs ``fastplan.frontend.tensor.Tensor``: refimpl's with
its ``__del__`` compiled; their methods call ``_record``).

Differs from refimpl:

* The operand counts are read here, so the status rule's table is
  ``fastplan.frontend.status``'s, calibrated on this session when the module is imported.
* The snapshots, operand structs and ops of the typed pass (element-wise unary, binary and
  scalar ops) and of ``Drop`` are filled at their slots (``fastplan._keys``) and left
  untracked by the cyclic collector (frozen, of ints, tuples and enum members); the handle
  and its state are filled at their slots too (tracked, as refimpl's). Every other op is built
  by its ``build`` function, as in refimpl; for the common structs and shape rules
  (reductions, swap_dims, reshape, matmul, clamp, masks) its dtypes and output shape are
  found in one typed pass (``_settled_shape``) that only ever *accepts*: at any doubt,
  refimpl's ``check_dtypes`` and ``expected_shape`` run and raise their error or accept. An
  output whose final shape differs from the one asked for is replaced at its slot, as
  ``dataclasses.replace`` would.
"""

import dataclasses

from cpython.object cimport PyTypeObject
from cpython.ref cimport PyObject

from fastplan._keys cimport field_offset, new_instance, new_operation, new_struct, new_tensor
from fastplan._keys cimport set_slot
from fastplan._shapes cimport broadcast_pair
from fastplan.frontend.status cimport statuses

from fastplan.frontend.status import calibrate
from fastplan.frontend.tensor import Tensor as _FastTensor
from refimpl.dtypes import DType, DTypeClass
from refimpl.errors import InputDataError, ShapeError, TensorIdError
from refimpl.frontend import session as _ref
from refimpl.frontend.operands import DEFAULT_FLOAT, check_dtypes, out_dtype, scalar
from refimpl.frontend.session import _FORMS, _form
from refimpl.frontend.status import METHOD
from refimpl.frontend.tensor import FrontendError, Tensor, TensorState, cat
from refimpl.ir import (OP_IR_STRUCTS, BinaryOpIr, ClampOpIr, DropOpIr, MaskFillOpIr,
                        MaskWhereOpIr, OperationIr, ReduceDimOpIr, ScalarOpIr, ShapeOpIr,
                        SwapDimsOpIr, TensorIr, TensorStatus, UnaryOpIr)
from refimpl.ops import OutDType, ShapeRule, op_named
from refimpl.shapes import expected_shape
from refimpl.stream import InputSpec

__all__ = ["Session", "Executor"]

Executor = _ref.Executor

cdef extern from "Python.h":
    Py_ssize_t Py_REFCNT(object o)

cdef object RW = TensorStatus.ReadWrite
cdef object _DType = DType
cdef object _NOT_INIT = TensorStatus.NotInit
cdef object _BROADCAST = ShapeRule.BROADCAST
cdef object _SAME = OutDType.SAME
cdef object _BOOL_OUT = OutDType.BOOL
cdef object _BOOL = DType.BOOL
cdef object _FLOAT = DTypeClass.FLOAT
cdef object _DROP = op_named("Drop")
cdef object _Tensor = Tensor
cdef object _Handle = _FastTensor
cdef object _TensorState = TensorState
cdef object _UnaryOpIr = UnaryOpIr
cdef object _BinaryOpIr = BinaryOpIr
cdef object _ScalarOpIr = ScalarOpIr
cdef object _ReduceDimOpIr = ReduceDimOpIr
cdef object _SwapDimsOpIr = SwapDimsOpIr
cdef object _ShapeOpIr = ShapeOpIr
cdef object _ClampOpIr = ClampOpIr
cdef object _MaskWhereOpIr = MaskWhereOpIr
cdef object _MaskFillOpIr = MaskFillOpIr
cdef Py_ssize_t _UNARY = OP_IR_STRUCTS.index(UnaryOpIr)
cdef Py_ssize_t _BINARY = OP_IR_STRUCTS.index(BinaryOpIr)
cdef Py_ssize_t _SCALAR = OP_IR_STRUCTS.index(ScalarOpIr)
cdef Py_ssize_t _DROP_DESC = OP_IR_STRUCTS.index(DropOpIr)
cdef object _TensorIr = TensorIr
cdef object _R_SAME = ShapeRule.SAME
cdef object _R_REDUCE_DIM = ShapeRule.REDUCE_DIM
cdef object _R_REDUCE_FULL = ShapeRule.REDUCE_FULL
cdef object _R_SWAP_DIMS = ShapeRule.SWAP_DIMS
cdef object _R_RESHAPE = ShapeRule.RESHAPE
cdef object _R_MATMUL = ShapeRule.MATMUL
cdef object _R_MASK = ShapeRule.MASK
# the operand structs whose output ``_with_out`` replaces at its slot: struct -> (its code,
# its field names in SCHEMA order)
cdef dict _STRUCT_FIELDS = {cls: (code, tuple(name for name, _ in cls.SCHEMA))
                            for code, cls in enumerate(OP_IR_STRUCTS)}

# The handle and its state, filled at their slots as their ``__init__`` fills them.
assert Tensor.__slots__ == ("_moved", "_state") and _FastTensor.__slots__ == ()
assert set(TensorState.__slots__) == {"consumed_at", "dtype", "handles", "id", "session",
                                      "shape"}
cdef Py_ssize_t _H_STATE = field_offset(Tensor, "_state")
cdef Py_ssize_t _H_MOVED = field_offset(Tensor, "_moved")
cdef Py_ssize_t _S_SESSION = field_offset(TensorState, "session")
cdef Py_ssize_t _S_ID = field_offset(TensorState, "id")
cdef Py_ssize_t _S_SHAPE = field_offset(TensorState, "shape")
cdef Py_ssize_t _S_DTYPE = field_offset(TensorState, "dtype")
cdef Py_ssize_t _S_HANDLES = field_offset(TensorState, "handles")
cdef Py_ssize_t _S_CONSUMED = field_offset(TensorState, "consumed_at")


cdef inline object _slot(object obj, Py_ssize_t offset):
    """The field at ``offset`` of an object whose exact type the caller checked (set by its
    ``__init__``, or by ``_handle``)."""
    cdef PyObject* value = (<PyObject**>((<char*><PyObject*>obj) + offset))[0]
    if value == NULL:
        raise AttributeError("a field of a tensor handle is not set")
    return <object>value


cdef object _handle(object session, object tid, tuple shape, object dtype):
    """``Tensor(TensorState(session, tid, shape, dtype))``, filled at their slots (the
    handle of ``fastplan.frontend.tensor``)."""
    cdef object state = new_instance(<PyTypeObject*>_TensorState)
    set_slot(state, _S_SESSION, session)
    set_slot(state, _S_ID, tid)
    set_slot(state, _S_SHAPE, shape)
    set_slot(state, _S_DTYPE, dtype)
    set_slot(state, _S_HANDLES, 1)
    set_slot(state, _S_CONSUMED, None)
    cdef object handle = new_instance(<PyTypeObject*>_Handle)
    set_slot(handle, _H_STATE, state)
    set_slot(handle, _H_MOVED, False)
    return handle


cdef object _usable(object handle, object session, object index, str field):
    """refimpl's ``usable``: the handle's tensor state, if ``session`` may record a use of it
    now (the same checks and errors)."""
    if not isinstance(handle, _Tensor):
        raise TypeError(f"{field}: expected a Tensor, got {type(handle).__name__}")
    st = handle._state
    if st.session is not session:
        raise FrontendError(f"{field}: tensor {st.id} belongs to another session")
    if handle._moved:
        raise TensorIdError(f"tensor {st.id} was moved out of this handle (.move()); use the "
                            "handle move() returned", op_index=index, field=field)
    if st.consumed_at is not None:
        raise TensorIdError(f"tensor {st.id} was consumed (ReadWrite) by op {st.consumed_at}; "
                            "a consumed tensor can't be used again", op_index=index,
                            field=field)
    return st


cdef object _snapshot(object st, object status):
    """``st.ir(status)``: the state's tensor seen with ``status``."""
    if type(st) is _TensorState:
        return new_tensor(_slot(st, _S_ID), _slot(st, _S_SHAPE), _slot(st, _S_DTYPE), status)
    return st.ir(status)


cdef object _typed(object session, object op, object rule, tuple ins, object out_type,
                   object scalars, object index):
    """refimpl's ``Session._typed``: the item of a unary, binary or scalar element-wise op in
    one pass; ``None`` when a dtype or shape check fails."""
    main = ins[0].dtype
    for t in ins:
        if t.dtype is not main:
            return None
    shape = ins[0].shape
    if rule is _BROADCAST:
        shape = broadcast_pair(shape, ins[1].shape)
        if shape is None:
            return None
    out = new_tensor(session._next_id, shape, out_type, _NOT_INIT)
    struct = op.struct
    if struct is _UnaryOpIr:
        return new_operation(op, new_struct(_UNARY, [ins[0], out]))
    if struct is _BinaryOpIr:
        return new_operation(op, new_struct(_BINARY, [ins[0], ins[1], out]))
    value = scalars[0]
    if type(value) is not float or op.category.family is not _FLOAT:
        value = scalar(value, op, main, index)
    return new_operation(op, new_struct(_SCALAR, [ins[0], value, out]))


cdef inline bint _is_tensor(object t) noexcept:
    return type(t) is _TensorIr and type(t.shape) is tuple


cdef object _numel(tuple shape):
    n = 1
    for d in shape:
        n *= d
    return n


cdef object _settled_shape(object op, object desc):
    """The output shape refimpl's ``check_dtypes`` and ``expected_shape`` give ``desc`` when
    both pass, for the common structs and rules; ``None``: refimpl's checks must run (they
    raise, or pass). Every input but a mask has the first one's dtype; the axis fields are
    exact ints in range; then the rule."""
    cdef object rule = op.shape
    cdef object cls = type(desc)
    cdef Py_ssize_t rank
    if cls is _ReduceDimOpIr and rule is _R_REDUCE_DIM:
        src, axis = desc.input, desc.axis
        if not _is_tensor(src) or type(axis) is not int:
            return None
        rank = len(<tuple>src.shape)
        if not 0 <= axis < rank:
            return None
        found = list(src.shape)
        found[axis] = 1
        return tuple(found)
    if cls is _UnaryOpIr and rule is _R_REDUCE_FULL:
        return (1,) if _is_tensor(desc.input) else None
    if cls is _SwapDimsOpIr and rule is _R_SWAP_DIMS:
        src, d1, d2 = desc.input, desc.dim1, desc.dim2
        if not _is_tensor(src) or type(d1) is not int or type(d2) is not int:
            return None
        rank = len(<tuple>src.shape)
        if not (0 <= d1 < rank and 0 <= d2 < rank):
            return None
        found = list(src.shape)
        found[d1], found[d2] = found[d2], found[d1]
        return tuple(found)
    if cls is _ShapeOpIr and rule is _R_RESHAPE:
        src, out = desc.input, desc.out
        if not _is_tensor(src) or not _is_tensor(out):
            return None
        if _numel(src.shape) != _numel(out.shape):
            return None
        return out.shape
    if cls is _BinaryOpIr and rule is _R_MATMUL:
        lhs, rhs = desc.lhs, desc.rhs
        if not _is_tensor(lhs) or not _is_tensor(rhs) or rhs.dtype is not lhs.dtype:
            return None
        a, b = <tuple>lhs.shape, <tuple>rhs.shape
        rank = len(a)
        if rank < 2 or len(b) != rank or a[rank - 1] != b[rank - 2]:
            return None
        batch = broadcast_pair(a[:rank - 2], b[:rank - 2])
        if batch is None:
            return None
        return batch + (a[rank - 2], b[rank - 1])
    if cls is _ClampOpIr and rule is _R_SAME:
        return desc.tensor.shape if _is_tensor(desc.tensor) else None
    if (cls is _MaskWhereOpIr or cls is _MaskFillOpIr) and rule is _R_MASK:
        tensor, mask = desc.tensor, desc.mask
        if not _is_tensor(tensor) or not _is_tensor(mask) or mask.dtype is not _BOOL:
            return None
        shape = broadcast_pair(tensor.shape, mask.shape)
        if cls is _MaskWhereOpIr and shape is not None:
            value = desc.value
            if not _is_tensor(value) or value.dtype is not tensor.dtype:
                return None
            shape = broadcast_pair(shape, value.shape)
        return shape
    return None


cdef object _with_out(object desc, object out):
    """``dataclasses.replace(desc, out=out)``, filled at the slots for an operand struct."""
    found = _STRUCT_FIELDS.get(type(desc))
    if found is None:
        return dataclasses.replace(desc, out=out)
    code, names = found
    return new_struct(code, [out if name == "out" else getattr(desc, name) for name in names])


cdef bint _plain_shape(object shape) noexcept:
    """A tuple of 1 or more exact ints >= 0: what ``check_shape`` returns unchanged."""
    if type(shape) is not tuple or len(<tuple>shape) == 0:
        return False
    for d in <tuple>shape:
        if type(d) is not int or d < 0:
            return False
    return True


class Session(_ref.Session):
    """refimpl's ``Session`` with its recording path compiled (see the module docstring)."""

    def random(self, shape, dtype=DEFAULT_FLOAT, *, seed=None, strides=None):
        """An input from the documented generator (``seed`` defaults to the tensor id).
        refimpl's ``Session.random``; a shape of exact ints, a ``DType``, an exact int seed
        or none, and no strides are taken here, anything else by refimpl's."""
        if (strides is not None or not _plain_shape(shape) or type(dtype) is not _DType
                or (seed is not None and type(seed) is not int)):
            return _ref.Session.random(self, shape, dtype, seed=seed, strides=strides)
        if seed is None:
            seed = self._next_id
        if seed < 0:
            raise InputDataError(f"random seed {seed} is negative")
        return self._input(InputSpec(shape, dtype, None, random=seed))

    def _input(self, spec):
        if self._closed:
            raise FrontendError("the session is closed")
        tid = self._next_id
        self._inputs[tid] = spec
        self._next_id += 1
        if type(spec.shape) is tuple:
            return _handle(self, tid, spec.shape, spec.dtype)
        return _FastTensor(TensorState(self, tid, spec.shape, spec.dtype))

    def _record(self, path, key, operands, build, scalars=(), *, dtype=None, shape=(),
                held=False):
        """Append one op: the single place that reads reference counts (keep it first).
        refimpl's ``Session._record``."""
        cdef list counts = []
        for handle in operands:
            counts.append(Py_REFCNT(handle))
        if self._closed:
            raise FrontendError("the session is closed")
        items = self._items
        index = len(items)
        if self._probe is not None:
            self._probe.append((path, tuple(counts)))
        main = operands[0].dtype if operands else dtype
        form = _FORMS.get((key, id(main), len(operands)))
        if form is None:
            form = _form(key, main, len(operands), index)
        op, fields, rule, rule_build = form
        cdef list states = [_usable(h, self, index, f) for h, f in zip(operands, fields)]
        cdef list uses = statuses(path, counts, states, held)
        ins = tuple([_snapshot(st, status) for st, status in zip(states, uses)])
        rule_out = op.out_dtype
        if rule_out is _SAME:
            out_type = main
        elif rule_out is _BOOL_OUT:
            out_type = _BOOL
        else:
            out_type = out_dtype(op, main, dtype, index)
        if build is rule_build and dtype is None and not shape:
            item = _typed(self, op, rule, ins, out_type, scalars, index)
            if item is not None:
                return self._commit(item, states, uses)
        out = new_tensor(self._next_id, tuple(shape), out_type, _NOT_INIT)
        precision = ins[0].dtype if op.struct is _ScalarOpIr else out_type
        values = tuple([scalar(v, op, precision, index) for v in scalars])
        desc = build(ins, out, values)
        item = new_operation(op, desc)
        final = _settled_shape(op, desc)
        if final is None:
            check_dtypes(item, index)
            final = tuple(expected_shape(item, index))
        if not final or min(final) < 0:
            raise ShapeError(f"{op.name} gives shape {list(final)}: a tensor has rank >= 1 and "
                             "non-negative dims", op_index=index, field="out.shape",
                             op_name=op.name)
        if final != out.shape:
            item = new_operation(op, _with_out(desc, new_tensor(out.id, final, out_type,
                                                                _NOT_INIT)))
        return self._commit(item, states, uses)

    def _commit(self, item, states, uses):
        """Append the item; the states it consumed are marked; the output's handle."""
        items = self._items
        index = len(items)
        for st, status in zip(states, uses):
            if status is RW:
                st.consumed_at = index
        items.append(item)
        self._next_id += 1
        out = item.desc.out
        if type(out) is TensorIr and type(out.shape) is tuple:
            return _handle(self, out.id, out.shape, out.dtype)
        return _FastTensor(TensorState(self, out.id, out.shape, out.dtype))

    def _drop(self, state):
        if not self._closed:
            self._items.append(new_operation(_DROP, new_struct(_DROP_DESC,
                                                               [_snapshot(state, RW)])))


def _probe_session():
    """A record-only session that logs the reference counts of every op it records."""
    probe = Session(executor=None)
    probe._probe = []
    return probe


calibrate(_probe_session, cat)
