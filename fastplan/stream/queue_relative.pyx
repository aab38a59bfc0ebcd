# cython: language_level=3
"""The relative form of a pending op, built from its key only when asked for.

burn counterpart: the ``relative`` ops of ``crates/burn-fusion/src/stream/queue/base.rs``
(``OperationQueue::add`` relativises each op as it is queued).
Part of fastplan's twin of ``refimpl/planner/stream/queue.py`` (its ``relative`` list): the
queue (``fastplan.stream.queue``) relativises each op straight into its key, and
``OperationQueue.rel_at`` builds the relative ``OperationIr`` from that key here, never on a
cache hit (only ``operations()`` and the search ask). A relative op and its ``EncodedOp`` are
kept by key (``_made``), taken again where the op built before is indistinguishable from a new
one (``_same_values``).
"""

from cpython.bytes cimport PyBytes_AS_STRING
from cpython.ref cimport Py_INCREF
from cpython.tuple cimport PyTuple_New, PyTuple_SET_ITEM
from libc.stdint cimport int64_t

from fastplan._keys cimport (
    F_INT, F_OTHER, F_RANGES, F_SCALAR, F_TENSOR, F_TENSORS, Slots, StructInfo, dtype_of,
    exact_codes, interned, list_push, new_operation, new_struct, new_tensor, slot, slots,
    status_of, struct_info,
)
from fastplan.stream.queue cimport OperationQueue
from fastplan.stream.relative cimport EncodedOp, encode_key, remember_encoded


cdef enum:
    _MADE_LIMIT = 4096  # relative ops an OperationQueue keeps by key (emptied when full)


cdef object relative_at(OperationQueue q, Py_ssize_t i):
    """The relative op at position ``i``, built from its key on first use with its
    ``EncodedOp`` (the search encodes every op it is given).

    Both are kept by key: the same relative op comes back often (relative ids restart at
    every drain), and then the op built before is taken again where it is
    indistinguishable from a new one (``_same_values``)."""
    if i < len(q._rel):
        found = q._rel[i]
        if found is not None:
            return found
    key = <bytes>q.keys[i]
    made = q._made.get(key)
    if made is not None and _same_values(made[0], q.global_ops[i]):
        found = made[0]
        remember_encoded(<EncodedOp>made[1])
    else:
        found = materialize(q, i)
        if len(q._made) >= _MADE_LIMIT:
            q._made.clear()
        q._made[key] = (found, encode_key(key, found))
    while len(q._rel) <= i:  # ``_rel`` grows only as far as it is asked for
        list_push(q._rel, None)
    q._rel[i] = found
    return found


cdef object materialize(OperationQueue q, Py_ssize_t i):
    """The relative op at ``i``, read from its key and the global op's fields. ``_encode``
    checked the op's exact types, so the fields are read at their slots as it read them."""
    cdef bytes key = q.keys[i]
    cdef const int64_t* p = <const int64_t*>PyBytes_AS_STRING(key)
    cdef Py_ssize_t pos = 2
    cdef int64_t struct_code = p[1]
    cdef const StructInfo* info = struct_info(struct_code)
    cdef const Slots* at = slots()
    cdef Py_ssize_t f
    cdef int kind
    cdef list values = []
    cdef list tensors
    operation = q.global_ops[i]
    desc = slot(operation, at.desc)
    for f in range(info.n_fields):
        value = slot(desc, info.offsets[f])
        kind = info.kinds[f]
        if kind == F_TENSOR:
            values.append(_tensor_at(p, &pos))
        elif kind == F_TENSORS:
            pos += 1  # the tensor count: ``value`` has them
            tensors = []
            for _ in value:
                tensors.append(_tensor_at(p, &pos))
            values.append(tuple(tensors))
        elif kind == F_SCALAR:
            values.append(p[pos])
            pos += 1
        elif kind == F_RANGES:
            values.append(interned(p[pos]))
            pos += 1
        else:
            values.append(value)
            pos += 1
    return new_operation(slot(operation, at.op), new_struct(struct_code, values))


cdef bint _same_values(object relative, object operation) except -1:
    """Whether the relative op built earlier from an equal key holds the very values that
    building it from ``operation`` would: equal keys give equal ops (``==``), made of the
    key's ints, and of ``operation``'s INT fields and other values (``_materialize``). An INT
    field must be an ``int`` on both sides (the key holds ``True`` as 1), any other value the
    same object (``0.0`` and ``-0.0`` share a key)."""
    cdef const Slots* at = slots()
    cdef int64_t code, struct_code
    cdef const StructInfo* info
    cdef Py_ssize_t f
    if not exact_codes(operation, &code, &struct_code):
        return False
    info = struct_info(struct_code)
    mine = slot(relative, at.desc)
    theirs = slot(operation, at.desc)
    for f in range(info.n_fields):
        if info.kinds[f] == F_INT:
            if type(slot(mine, info.offsets[f])) is not int \
                    or type(slot(theirs, info.offsets[f])) is not int:
                return False
        elif info.kinds[f] == F_OTHER:
            if slot(mine, info.offsets[f]) is not slot(theirs, info.offsets[f]):
                return False
    return True


cdef object _tensor_at(const int64_t* p, Py_ssize_t* pos):
    """The relative ``TensorIr`` encoded at ``p[pos]`` (advancing ``pos``): id, rank, the
    shape's relative dims, then the dtype's and the status's slots."""
    cdef Py_ssize_t rank = p[pos[0] + 1]
    cdef Py_ssize_t at = pos[0] + 2
    cdef Py_ssize_t i
    # a Python int: the reference Py_INCREF takes is the one PyTuple_SET_ITEM steals (an
    # int64_t, as Cython would infer, made a new int per call: the tuple's was freed under it)
    cdef object dim
    cdef tuple shape = PyTuple_New(rank)
    for i in range(rank):
        dim = p[at + i]
        Py_INCREF(dim)
        PyTuple_SET_ITEM(shape, i, dim)
    result = new_tensor(p[pos[0]], shape, dtype_of(p[at + rank]), status_of(p[at + rank + 1]))
    pos[0] = at + rank + 2
    return result
