# cython: language_level=3
"""Handle layouts: building a ``Handle``, a layout's buffer length, contiguous strides and
layout id, and the layouts burn-cubecl's metadata ops give their output on their input's buffer.

burn counterpart: ``CubeFusionHandle``'s layout and ``burn-cubecl``'s metadata ops
(``swap_dims``, ``permute``, ``expand``, ``reshape``, ``slice``).
Part of fastplan's twin of ``refimpl/planner/launch/handles.py``, split along its seams: the
layouts here, what launch planning reads of an op in ``handles_ops``, the ``Memory`` in
``fastplan.launch.handles``. A ``Handle`` is refimpl's frozen dataclass, filled at its slots
(``new_handle``); a layout of small ints is keyed as the words of its ints (``_layout_words``),
any other as the tuple of its fields, and a reshape seen before is laid out from a bounded
memo of ``reshape_action``.
"""


from cpython.bytes cimport PyBytes_FromStringAndSize
from cpython.object cimport PyTypeObject
from cpython.ref cimport Py_INCREF, PyObject
from cpython.tuple cimport PyTuple_GET_ITEM, PyTuple_New, PyTuple_SET_ITEM
from libc.stdint cimport int64_t

cimport cython

from fastplan._keys cimport (
    exact_long_long, field_offset, new_instance, set_slot, slot, slots, untrack_atomic,
)

from fastplan.launch.layout import reshape_action

from refimpl.planner.launch.handles import MEMORY_ALIGNMENT_BYTES, Handle
from refimpl.stream import InputSpec


cdef extern from *:
    """
    #define fastplan_type_address(o) ((void*)Py_TYPE(o))
    """
    # fastplan._keys' ``compact_int`` on a borrowed pointer (its C function, emitted with the
    # cimport)
    int _compact_at "fastplan_compact_int"(PyObject* o, long long* v) noexcept
    void* _type_address "fastplan_type_address"(PyObject* o) noexcept
    PyTypeObject PyLong_Type


# Handle's fields at their slot offsets (read directly once the exact type is checked).
cdef Py_ssize_t _H_BUFFER = field_offset(Handle, "buffer")
cdef Py_ssize_t _H_SHAPE = field_offset(Handle, "shape")
cdef Py_ssize_t _H_STRIDES = field_offset(Handle, "strides")
cdef Py_ssize_t _H_OFFSET = field_offset(Handle, "offset")
cdef Py_ssize_t _H_DTYPE = field_offset(Handle, "dtype")
cdef Py_ssize_t _I_SHAPE = field_offset(InputSpec, "shape")
cdef Py_ssize_t _I_STRIDES = field_offset(InputSpec, "strides")
cdef Py_ssize_t _I_DTYPE = field_offset(InputSpec, "dtype")


cdef object _buffer_of(object handle):
    return slot(handle, _H_BUFFER) if type(handle) is Handle else handle.buffer


cdef object handle_buffer(object handle):
    """``handle.buffer`` (read at its slot for a ``Handle``)."""
    return _buffer_of(handle)


cdef tuple handle_layout(object handle):
    """``(shape, strides, offset, dtype)`` of a handle (read at their slots for a ``Handle``)."""
    if type(handle) is Handle:
        return (slot(handle, _H_SHAPE), slot(handle, _H_STRIDES), slot(handle, _H_OFFSET),
                slot(handle, _H_DTYPE))
    return (handle.shape, handle.strides, handle.offset, handle.dtype)



cdef object new_handle(object buffer, object shape, object strides, object offset,
                       object dtype):
    """``Handle(buffer, shape, strides, offset, dtype)``: ``make_frozen(Handle, ...)``'s
    instance, its slots filled at their offsets directly (no values tuple, no layout lookup
    per handle). ``fastplan.launch.launch_memo`` replays handles through it too."""
    handle = new_instance(<PyTypeObject*>Handle)
    set_slot(handle, _H_BUFFER, buffer)
    set_slot(handle, _H_SHAPE, shape)
    set_slot(handle, _H_STRIDES, strides)
    set_slot(handle, _H_OFFSET, offset)
    set_slot(handle, _H_DTYPE, dtype)
    return handle


cdef object _handle(object buffer, tuple shape, tuple strides, object offset,
                           object dtype):
    untrack_atomic(shape)  # of ints: out of the collector's view, as the handle is
    untrack_atomic(strides)
    return new_handle(buffer, shape, strides, offset, dtype)


cdef long long _C_BOUND = 1 << 30  # _small_ints' bound on each value
cdef long long _C_PRODUCT_BOUND = 1LL << 33  # times a value below _C_BOUND: below 2**63


cdef bint _small_ints(tuple values):
    """Exact ints below 2**30 in magnitude, at most 8 of them: sums of their pairwise products
    stay exact in C's 64-bit arithmetic."""
    cdef Py_ssize_t i, n = len(values)
    cdef long long c_value
    if n > 8:
        return False
    for i in range(n):
        if not exact_long_long(values[i], &c_value) or not -_C_BOUND < c_value < _C_BOUND:
            return False
    return True


cdef tuple _contiguous(tuple shape):
    # Python ints, as refimpl's contiguous_strides: fastplan.launch.layout's core computes in int64
    cdef Py_ssize_t i, n = len(shape)
    cdef long long c_current = 1
    cdef list strides
    cdef tuple found
    cdef object value  # a Python int: the tuple takes a reference to it
    if _small_ints(shape):  # in C while a product of a dim below 2**30 stays below 2**63
        found = PyTuple_New(n)  # filled from the end, without a list first
        for i in range(n - 1, -1, -1):
            if not -_C_PRODUCT_BOUND < c_current < _C_PRODUCT_BOUND:
                break
            value = c_current
            Py_INCREF(value)
            PyTuple_SET_ITEM(found, i, value)
            c_current *= <long long>(<object>shape[i])
        else:
            return found
    strides = [0] * n
    current = 1
    for i in range(n - 1, -1, -1):
        strides[i] = current
        current = current * shape[i]
    return tuple(strides)


cdef object buffer_length(tuple shape, tuple strides):
    """refimpl.data.buffer_length: dims and strides paired as ``zip`` pairs them. Up to 8
    dims and their strides that are one-digit ints (below 2**30 in magnitude: the terms'
    sum stays exact in C) are read in place, through the tuples' borrowed pointers."""
    cdef Py_ssize_t i, n = min(len(shape), len(strides))
    cdef long long total = 1, c_dim, c_stride
    cdef long long dims[8]
    cdef long long steps[8]
    if len(shape) <= len(strides) and n <= 8 and _digits(shape, dims, n) and \
            _digits(strides, steps, n):
        for i in range(n):
            if dims[i] == 0:
                return 0
        for i in range(n):
            total += (dims[i] - 1) * steps[i]
        return total
    if len(shape) <= len(strides) and _small_ints(shape) and _small_ints(strides):
        for i in range(len(shape)):
            c_dim = <object>shape[i]
            if c_dim == 0:
                return 0
        for i in range(n):  # C arithmetic: at most 8 terms below 2**60 each
            c_dim, c_stride = <object>shape[i], <object>strides[i]
            total += (c_dim - 1) * c_stride
        return total
    for d in shape:
        if d == 0:
            return 0
    size = 1
    for d, stride in zip(shape, strides):
        size += (d - 1) * stride
    return size


cdef inline bint _digits(tuple values, long long* out, Py_ssize_t n) noexcept:
    """The first ``n`` items of ``values`` (it has as many) into ``out`` when each is an exact
    ``int`` of one digit, read where CPython keeps it; else false."""
    cdef Py_ssize_t i
    cdef PyObject* item
    for i in range(n):
        item = PyTuple_GET_ITEM(values, i)
        if _type_address(item) != <void*>&PyLong_Type or not _compact_at(item, &out[i]):
            return False
    return True


cdef bint _push_ints(int64_t* out, Py_ssize_t* at, object values) except -1:
    """Write ``len(values)`` then the values of a tuple of at most 8 exact ints that fit in 64
    bits at ``out[at]``, moving ``at``; false (nothing meaningful written) for anything else."""
    cdef Py_ssize_t i, n
    cdef long long value
    if type(values) is not tuple:
        return False
    n = len(<tuple>values)
    if n > 8:
        return False
    out[at[0]] = n
    for i in range(n):
        if not exact_long_long((<tuple>values)[i], &value):
            return False
        out[at[0] + 1 + i] = value
    at[0] += n + 1
    return True


cdef object _layout_key(object shape, object strides, object offset, object dtype):
    """A layout's key in the layout table: its ints in one byte string where shape and strides
    are tuples of at most 8 exact 64-bit ints and the offset one too (hashed and compared as
    bytes, without the element-wise protocol of a tuple of tuples); else the tuple
    ``(shape, strides, offset, id(dtype))``. Equal byte strings are equal layouts, so a key
    never stands for two layouts; a layout equal to another only through another int type (a
    ``bool``, a numpy int) takes the tuple form and an id of its own: a memo miss, never a
    wrong hit."""
    cdef int64_t words[20]
    cdef Py_ssize_t n = _layout_words(words, shape, strides, offset, dtype)
    if n >= 0:
        return PyBytes_FromStringAndSize(<char*>words, n * sizeof(int64_t))
    return (shape, strides, offset, <Py_ssize_t><PyObject*>dtype)


cdef Py_ssize_t _layout_words(int64_t* words, object shape, object strides, object offset,
                              object dtype) except -2:
    """The words of ``_layout_key``'s byte string in ``words`` (room for 20), and how many;
    -1 where the key takes the tuple form."""
    cdef Py_ssize_t at = 0
    cdef long long c_offset
    if (_push_ints(words, &at, shape) and _push_ints(words, &at, strides)
            and exact_long_long(offset, &c_offset)):
        words[at] = c_offset
        words[at + 1] = <int64_t><Py_ssize_t><PyObject*>dtype  # the dtype's id()
        return at + 2
    return -1


cdef Py_ssize_t layout_id(dict table, object handle) except -1:
    """The small int ``table`` gives the handle's (shape, strides, offset, dtype), so that
    fastplan.launch.launch_memo's step memo keys on ints (the table lives as long as that
    memo)."""
    if type(handle) is Handle:
        layout = _layout_key(slot(handle, _H_SHAPE), slot(handle, _H_STRIDES),
                             slot(handle, _H_OFFSET), slot(handle, _H_DTYPE))
    else:
        layout = _layout_key(handle.shape, handle.strides, handle.offset, handle.dtype)
    found = table.get(layout)
    if found is None:
        found = table[layout] = len(table)
    return <Py_ssize_t>found



# --- view layouts of burn-cubecl's metadata ops -------------------------------------------------


def _swap_dims(op, h):
    d = op.desc
    shape, strides = _swapped(h, d.dim1, d.dim2)
    return _handle(h.buffer, shape, strides, h.offset, h.dtype)


cdef tuple _swapped(object h, object dim1, object dim2):
    """The shape and strides of ``h`` with dims ``dim1`` and ``dim2`` swapped."""
    cdef list strides, shape
    if type(h) is Handle:
        strides, shape = list(slot(h, _H_STRIDES)), list(slot(h, _H_SHAPE))
    else:
        strides, shape = list(h.strides), list(h.shape)
    strides[dim1], strides[dim2] = strides[dim2], strides[dim1]
    shape[dim1], shape[dim2] = shape[dim2], shape[dim1]
    return tuple(shape), tuple(strides)


def _permute(op, h):
    axes = op.desc.axes
    shape, strides = h.shape, h.strides
    return _handle(h.buffer, tuple([shape[a] for a in axes]), tuple([strides[a] for a in axes]),
                   h.offset, h.dtype)


def _expand(op, h):
    # Python ints on purpose: an input of higher rank than the output makes ``diff`` negative,
    # and the indices then wrap as refimpl's do (a stream no validator passed, but planned)
    cdef object i, diff
    target = tuple(op.desc.out.shape)
    diff = len(target) - len(h.shape)
    strides = [0] * len(target)
    for i in range(diff, len(target)):
        if h.shape[i - diff] == target[i]:
            strides[i] = h.strides[i - diff]
    return _handle(h.buffer, target, tuple(strides), h.offset, h.dtype)


# reshape_action of (shape, strides, new shape) seen before: a runtime reshapes the same
# layouts at every iteration. Bounded: emptied when full.
cdef dict _RESHAPES = {}
cdef Py_ssize_t _RESHAPES_CAPACITY = 4096


cdef bint _ints(object values):
    """A tuple of exact ints (what a memo key may hold: equal means identical)."""
    if type(values) is not tuple:
        return False
    for value in <tuple>values:
        if type(value) is not int:
            return False
    return True


def _reshape(op, h):
    strides = _reshaped_strides(h.shape, h.strides, op.desc.out.shape)
    if strides is None:
        return None
    return _handle(h.buffer, tuple(op.desc.out.shape), strides, h.offset, h.dtype)


cdef object _reshaped_strides(object shape, object strides, object new_shape):
    """The strides of a reshape of ``(shape, strides)`` to ``new_shape`` laid out on the same
    buffer, or ``None`` (``reshape_action``'s ``Recompute``: a fresh buffer)."""
    query = None
    action = None
    if _ints(shape) and _ints(strides) and _ints(new_shape):
        query = (shape, strides, new_shape)
        action = _RESHAPES.get(query)
    if action is None:
        action = reshape_action(shape, strides, new_shape)
        if query is not None:
            if len(_RESHAPES) >= _RESHAPES_CAPACITY:
                _RESHAPES.clear()
            _RESHAPES[query] = action
    if action.kind == "Recompute":
        return None
    return action.strides


def _slice(op, h):
    start = end = 0
    shape = list(h.shape)
    for i, (first, last) in enumerate(op.desc.ranges):
        start += h.strides[i] * first
        end += h.strides[i] * (shape[i] - last)
        shape[i] = last - first
    size = h.dtype.storage_bytes
    if (start * size) % MEMORY_ALIGNMENT_BYTES or (end * size) % MEMORY_ALIGNMENT_BYTES:
        return None
    return _handle(h.buffer, tuple(shape), h.strides, h.offset + start, h.dtype)


UNFUSED_LAYOUTS = {
    "SwapDims": _swap_dims,
    "Permute": _permute,
    "Expand": _expand,
    "Reshape": _reshape,
    "Slice": _slice,
}


cdef object _view(object op, object variant, object source):
    """``unfused_view`` of an exact op of a view kind whose first input's handle is
    ``source``. ``Reshape`` and ``SwapDims`` on an exact ``Handle`` (what a runtime's stream
    has between its fused steps) are laid out here, without the call through the table."""
    view = UNFUSED_LAYOUTS.get(variant)
    if view is None:
        return None
    if type(source) is Handle and (view is _RESHAPE or view is _SWAP_DIMS):
        desc = slot(op, slots().desc)  # the table's order: the layout, then the dtype
        if view is _RESHAPE:
            out = desc.out
            strides = _reshaped_strides(slot(source, _H_SHAPE), slot(source, _H_STRIDES),
                                        out.shape)
            if strides is None:
                return None
            return _handle(slot(source, _H_BUFFER), tuple(out.shape), strides,
                           slot(source, _H_OFFSET), out.dtype)
        shape, strides = _swapped(source, desc.dim1, desc.dim2)
        return _handle(slot(source, _H_BUFFER), shape, strides, slot(source, _H_OFFSET),
                       desc.out.dtype)
    result = view(op, source)
    if result is None:
        return None
    dtype = op.desc.out.dtype
    if (slot(result, _H_DTYPE) if type(result) is Handle else result.dtype) is dtype:
        return result
    return _handle(result.buffer, result.shape, result.strides, result.offset, dtype)


cdef object _RESHAPE = _reshape
cdef object _SWAP_DIMS = _swap_dims

