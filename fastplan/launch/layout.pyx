# cython: language_level=3
"""Memory layouts: strides, dimension orders, density, and what a reshape can keep.

burn counterpart: ``burn-cubecl-fusion``'s ``engine/launch/layout.rs`` and burn-std's tensor
helpers.
Mirrors ``refimpl/planner/launch/layout.py``: same names, same order, same results.
``ReshapeAction`` and ``MatrixBatchLayout`` are refimpl's classes.

Differs from refimpl: the per-tensor rules (``contiguous_strides``, ``is_contiguous``,
``is_dense``, ``dim_order``, ``permuted_innermost_axis``, ``strides_for``,
``matrix_batch_layout``) are ``noexcept nogil`` cores over ``int64_t`` arrays
(``layout.pxd``); the ``def`` twins load their sequences into C arrays (``dims_load``, which
reads an exact one-digit ``int`` where CPython keeps it) and call them. A sequence that does
not load (a value that is not an int, or beyond 64 bits) is handed to refimpl's own
function, so the result (or the error) is refimpl's.
"""

from cpython.mem cimport PyMem_Free, PyMem_Malloc
from cpython.object cimport PyTypeObject
from cpython.long cimport PyLong_FromLongLong
from cpython.ref cimport Py_INCREF, PyObject
from cpython.tuple cimport PyTuple_New, PyTuple_SET_ITEM
from libc.stdint cimport int64_t

from fastplan._keys cimport _tuple_item

cdef extern from *:
    # fastplan._keys' ``compact_int`` on a borrowed pointer (its C function, emitted with the
    # cimport)
    int _compact_at "fastplan_compact_int"(PyObject* o, long long* v) noexcept
    PyTypeObject* _type_at "Py_TYPE"(PyObject* o) noexcept
    PyTypeObject PyLong_Type

from refimpl.planner.launch import layout as _ref
from refimpl.planner.launch.layout import MatrixBatchLayout, ReshapeAction, Shape, Strides

__all__ = [
    "Shape",
    "Strides",
    "contiguous_strides",
    "is_contiguous",
    "is_dense",
    "dim_order",
    "is_contiguous_order",
    "permuted_innermost_axis",
    "strides_for",
    "swap_dims_transform",
    "unsqueezed",
    "ReshapeAction",
    "reshape_action",
    "relayout_strides",
    "MatrixBatchLayout",
    "matrix_batch_layout",
]

Shape = Shape
Strides = Strides


# --- loading (the boundary) ---------------------------------------------------------------------


cdef int dims_load(Dims* d, object seq) except -1:
    """Load ``seq`` into ``d``. An exact ``int`` of one digit (every dim and stride a launch
    meets) is read where CPython keeps it, through the tuple's borrowed pointer; any other
    item goes through ``_load_item`` (the conversion, or its error)."""
    cdef Py_ssize_t i, n
    cdef long long value
    cdef PyObject* item
    cdef tuple t = seq if type(seq) is tuple else tuple(seq)
    n = len(t)
    d.n = n
    if n <= DIMS_INLINE:
        d.v = d.inline
    else:
        d.v = <int64_t*>PyMem_Malloc(n * sizeof(int64_t))
        if d.v == NULL:
            raise MemoryError()
    for i in range(n):
        item = _tuple_item(<PyObject*>t, i)  # borrowed: ``t`` holds it
        if _type_at(item) == &PyLong_Type and _compact_at(item, &value):
            d.v[i] = value
        elif _load_item(d, i, <object>item) < 0:
            return -1
    return 0


cdef int _load_item(Dims* d, Py_ssize_t i, object item) except -1:
    """``dims_load``'s conversion of an item that is no one-digit ``int`` (``d`` freed where
    it fails)."""
    try:
        if type(item) is not int:  # bool, float, ...: refimpl's Python semantics decide
            raise TypeError("not an int")
        d.v[i] = item
    except BaseException:
        dims_free(d)
        raise
    return 0


cdef void dims_free(Dims* d) noexcept:
    if d.v != NULL and d.v != d.inline:
        PyMem_Free(d.v)
    d.v = NULL
    d.n = 0


cdef tuple dims_tuple(const int64_t* v, Py_ssize_t n):
    """The ints ``v[:n]`` as a tuple, filled in place (no list made and copied)."""
    cdef Py_ssize_t i
    cdef tuple found = PyTuple_New(n)
    for i in range(n):
        item = PyLong_FromLongLong(v[i])
        Py_INCREF(item)  # the tuple's reference (PyTuple_SET_ITEM steals one)
        PyTuple_SET_ITEM(found, i, item)
    return found


# --- cores --------------------------------------------------------------------------------------


cdef void contiguous_strides_c(const int64_t* shape, Py_ssize_t rank,
                               int64_t* out) noexcept nogil:
    cdef Py_ssize_t i
    cdef int64_t current = 1
    for i in range(rank - 1, -1, -1):
        out[i] = current
        current *= shape[i]


cdef bint is_contiguous_c(const int64_t* shape, const int64_t* strides,
                          Py_ssize_t rank) noexcept nogil:
    cdef Py_ssize_t i
    cdef int64_t current = 1
    for i in range(rank - 1, -1, -1):
        if strides[i] != current:
            return False
        current *= shape[i]
    return True


cdef bint is_dense_c(const int64_t* shape, const int64_t* strides,
                     Py_ssize_t rank) noexcept nogil:
    # refimpl sorts the (stride, dim) pairs of the dims > 1 by stride (stable); here: pick the
    # smallest remaining stride each round (earliest index on ties), same sequence.
    cdef Py_ssize_t i, best, count = 0, _k
    cdef int64_t expected = 1
    cdef unsigned long long used = 0
    if rank > 64:
        return _is_dense_long(shape, strides, rank)
    for i in range(rank):
        if shape[i] > 1:
            count += 1
        else:
            used |= 1ULL << i
    for _k in range(count):
        best = -1
        for i in range(rank):
            if used & (1ULL << i):
                continue
            if best < 0 or strides[i] < strides[best]:
                best = i
        used |= 1ULL << best
        if strides[best] != expected:
            return False
        expected *= shape[best]
    return True


cdef bint _is_dense_long(const int64_t* shape, const int64_t* strides,
                         Py_ssize_t rank) noexcept nogil:
    # ranks beyond 64 (never seen in practice): quadratic selection with a "last taken" cursor
    cdef Py_ssize_t i, best, last = -1, _k, count = 0
    cdef int64_t expected = 1
    for i in range(rank):
        if shape[i] > 1:
            count += 1
    for _k in range(count):
        best = -1
        for i in range(rank):
            if shape[i] <= 1:
                continue
            # strictly after the last taken pair in (stride, index) order
            if last >= 0 and (strides[i] < strides[last] or
                              (strides[i] == strides[last] and i <= last)):
                continue
            if best < 0 or strides[i] < strides[best]:
                best = i
        last = best
        if strides[best] != expected:
            return False
        expected *= shape[best]
    return True


cdef bint dim_order_c(const int64_t* shape, const int64_t* strides, Py_ssize_t rank,
                      Py_ssize_t* order) noexcept nogil:
    cdef Py_ssize_t i, j, axis
    cdef int64_t expected = 1
    # insertion sort by (-stride, axis): stable, so ties keep ascending axes
    for i in range(rank):
        j = i
        while j > 0 and strides[order[j - 1]] < strides[i]:
            order[j] = order[j - 1]
            j -= 1
        order[j] = i
    for i in range(rank - 1, -1, -1):
        axis = order[i]
        if shape[axis] == 1:
            continue
        if strides[axis] != expected:
            return False
        expected *= shape[axis]
    return True


cdef bint is_contiguous_order_c(const Py_ssize_t* order, Py_ssize_t rank) noexcept nogil:
    cdef Py_ssize_t i
    for i in range(rank):
        if order[i] != i:
            return False
    return True


cdef Py_ssize_t permuted_innermost_axis_c(const int64_t* shape, const int64_t* strides,
                                          Py_ssize_t rank) noexcept nogil:
    cdef Py_ssize_t i, axis, result = -1
    cdef Py_ssize_t small[16]
    cdef Py_ssize_t* order = small
    if rank > 16:
        with gil:
            order = <Py_ssize_t*>PyMem_Malloc(rank * sizeof(Py_ssize_t))
        if order == NULL:
            return -2
    if dim_order_c(shape, strides, rank, order) and not is_contiguous_order_c(order, rank):
        for i in range(rank - 1, -1, -1):
            axis = order[i]
            if shape[axis] > 1:
                result = axis
                break
    if order != small:
        with gil:
            PyMem_Free(order)
    return result


cdef void strides_for_c(const int64_t* shape, const Py_ssize_t* order, Py_ssize_t rank,
                        int64_t* out) noexcept nogil:
    cdef Py_ssize_t i
    cdef int64_t current = 1
    for i in range(rank):
        out[i] = 0
    for i in range(rank - 1, -1, -1):
        out[order[i]] = current
        current *= shape[order[i]]


# --- tuple fast paths (used by the launch twins, whose shapes and strides are int tuples) --------


cdef tuple contiguous_strides_t(tuple shape):
    return _contiguous(shape)


cdef tuple _contiguous(tuple shape):
    cdef Py_ssize_t n = len(shape)
    cdef int64_t small[16]
    cdef Dims d
    dims_load(&d, shape)
    try:
        if n <= 16:
            contiguous_strides_c(d.v, n, small)
            return dims_tuple(small, n)
        out = <int64_t*>PyMem_Malloc(n * sizeof(int64_t))
        try:
            contiguous_strides_c(d.v, n, out)
            return dims_tuple(out, n)
        finally:
            PyMem_Free(out)
    finally:
        dims_free(&d)


cdef bint is_contiguous_t(tuple shape, tuple strides) except -1:
    cdef Dims a, b
    if len(shape) != len(strides):
        return False
    dims_load(&a, shape)
    try:
        dims_load(&b, strides)
        try:
            return is_contiguous_c(a.v, b.v, a.n)
        finally:
            dims_free(&b)
    finally:
        dims_free(&a)


cdef bint is_dense_t(tuple shape, tuple strides) except -1:
    cdef Dims a, b
    if len(shape) != len(strides):
        return False
    dims_load(&a, shape)
    try:
        dims_load(&b, strides)
        try:
            return is_dense_c(a.v, b.v, a.n)
        finally:
            dims_free(&b)
    finally:
        dims_free(&a)


cdef object dim_order_t(tuple shape, tuple strides):
    cdef Dims a, b
    cdef Py_ssize_t i, n = len(shape)
    cdef Py_ssize_t* order
    cdef bint dense
    if n != len(strides):
        return None
    dims_load(&a, shape)
    try:
        dims_load(&b, strides)
        try:
            order = <Py_ssize_t*>PyMem_Malloc((n + 1) * sizeof(Py_ssize_t))
            if order == NULL:
                raise MemoryError()
            try:
                dense = dim_order_c(a.v, b.v, n, order)
                if not dense:
                    return None
                return tuple([order[i] for i in range(n)])
            finally:
                PyMem_Free(order)
        finally:
            dims_free(&b)
    finally:
        dims_free(&a)


cdef object permuted_innermost_axis_t(tuple shape, tuple strides):
    cdef Dims a, b
    cdef Py_ssize_t axis
    if len(shape) != len(strides):
        return None
    dims_load(&a, shape)
    try:
        dims_load(&b, strides)
        try:
            axis = permuted_innermost_axis_c(a.v, b.v, a.n)
        finally:
            dims_free(&b)
    finally:
        dims_free(&a)
    if axis == -2:
        raise MemoryError()
    return None if axis < 0 else axis


cdef tuple strides_for_t(tuple shape, tuple order):
    cdef Dims a, o
    cdef Py_ssize_t i, n = len(shape)
    cdef Py_ssize_t* ord_
    cdef int64_t* out
    dims_load(&a, shape)
    try:
        dims_load(&o, order)
        try:
            # refimpl: ``order`` may be shorter than ``shape`` (dims it omits keep stride 0)
            # or hold any axis; outside the permutation case refimpl's code runs.
            if o.n != n:
                return _ref.strides_for(shape, order)
            for i in range(n):
                if o.v[i] < 0 or o.v[i] >= n:
                    return _ref.strides_for(shape, order)
            ord_ = <Py_ssize_t*>PyMem_Malloc((n + 1) * sizeof(Py_ssize_t))
            out = <int64_t*>PyMem_Malloc((n + 1) * sizeof(int64_t))
            try:
                for i in range(n):
                    ord_[i] = <Py_ssize_t>o.v[i]
                strides_for_c(a.v, ord_, n, out)
                return dims_tuple(out, n)
            finally:
                PyMem_Free(ord_)
                PyMem_Free(out)
        finally:
            dims_free(&o)
    finally:
        dims_free(&a)


# --- the def twins ------------------------------------------------------------------------------


def contiguous_strides(shape):
    """Row-major strides: each is the product of the dims to its right (burn-std).

    Mirrors refimpl.planner.launch.layout.contiguous_strides.
    """
    try:
        return _contiguous(tuple(shape))
    except (TypeError, OverflowError):
        return _ref.contiguous_strides(shape)


def is_contiguous(shape, strides):
    """Exactly the row-major strides (size-1 dims included).

    Mirrors refimpl.planner.launch.layout.is_contiguous.
    """
    try:
        return is_contiguous_t(tuple(shape), tuple(strides))
    except (TypeError, OverflowError):
        return _ref.is_contiguous(shape, strides)


def is_dense(shape, strides):
    """The tensor fills its buffer without gaps in some dim order (size-1 dims ignored).

    Mirrors refimpl.planner.launch.layout.is_dense.
    """
    try:
        return is_dense_t(tuple(shape), tuple(strides))
    except (TypeError, OverflowError):
        return _ref.is_dense(shape, strides)


def dim_order(shape, strides):
    """Dims outermost first (descending stride, ties by index) for a dense tensor, else

    Mirrors refimpl.planner.launch.layout.dim_order.
    """
    try:
        return dim_order_t(tuple(shape), tuple(strides))
    except (TypeError, OverflowError):
        return _ref.dim_order(shape, strides)


def is_contiguous_order(order):
    """``order`` is ``0, 1, .., rank-1``.

    Mirrors refimpl.planner.launch.layout.is_contiguous_order.
    """
    cdef Py_ssize_t pos = 0
    for axis in order:
        if axis != pos:
            return False
        pos += 1
    return True


def permuted_innermost_axis(shape, strides):
    """The innermost non-degenerate dim of a dense tensor laid out in a permuted order; ``None``

    Mirrors refimpl.planner.launch.layout.permuted_innermost_axis.
    """
    try:
        return permuted_innermost_axis_t(tuple(shape), tuple(strides))
    except (TypeError, OverflowError):
        return _ref.permuted_innermost_axis(shape, strides)


def strides_for(shape, order):
    """The strides of ``shape`` laid out densely in ``order`` (outermost first).

    Mirrors refimpl.planner.launch.layout.strides_for.
    """
    try:
        return strides_for_t(tuple(shape), tuple(order))
    except (TypeError, OverflowError):
        return _ref.strides_for(shape, order)


def swap_dims_transform(i, dims):
    """Where dim ``i`` of a swapped view lives in its original.

    Mirrors refimpl.planner.launch.layout.swap_dims_transform.
    """
    if i == dims[0]:
        return dims[1]
    if i == dims[1]:
        return dims[0]
    return i


def unsqueezed(shape, strides, rank):
    """Leading size-1 dims up to ``rank``, each with stride ``numel`` (burn's InputPlanner).

    Mirrors refimpl.planner.launch.layout.unsqueezed.
    """
    missing = rank - len(shape)
    if missing <= 0:
        return tuple(shape), tuple(strides)
    numel = 1
    for d in shape:
        numel *= d
    return (1,) * missing + tuple(shape), (numel,) * missing + tuple(strides)


def reshape_action(shape, strides, new_shape):
    """What a reshape of a tensor laid out with ``strides`` needs (burn-std

    Mirrors refimpl.planner.launch.layout.reshape_action.
    """
    # The analysis runs once per reshape view, not per tensor: refimpl's code, shared as is.
    return _ref.reshape_action(shape, strides, new_shape)


def relayout_strides(strides, shape, stride_relayout):
    """Strides with dim ``d`` moved to memory position ``stride_relayout[d]`` (NHWC outputs),

    Mirrors refimpl.planner.launch.layout.relayout_strides.
    """
    # NHWC outputs only (once per relayout trace): refimpl's code, shared as is.
    return _ref.relayout_strides(strides, shape, stride_relayout)


# MatrixBatchLayout's members by the core's code (matrix_batch_layout_c)
cdef tuple _BATCH_LAYOUTS = (MatrixBatchLayout.Contiguous, MatrixBatchLayout.MildlyPermuted,
                             MatrixBatchLayout.MildlyPermutedTransposed,
                             MatrixBatchLayout.HighlyPermuted)


cdef int matrix_batch_layout_c(const int64_t* strides, Py_ssize_t rank) noexcept nogil:
    # 0 Contiguous, 1 MildlyPermuted, 2 MildlyPermutedTransposed, 3 HighlyPermuted
    cdef Py_ssize_t d
    cdef int64_t row, col, current, previous
    cdef bint transposed, batch_swap = False
    if rank <= 1:
        return 0
    row, col = strides[rank - 2], strides[rank - 1]
    if row == 0 or col == 0:
        return 3
    transposed, previous = row < col, row
    for d in range(rank - 2):
        current = strides[rank - 3 - d]
        if current < row or current < col:
            if current != 0:
                return 3
            batch_swap = True
        if current < previous:
            batch_swap = True
        previous = current
    if transposed:
        return 2
    return 1 if batch_swap else 0


cdef object matrix_batch_layout_o(object strides):
    cdef Dims a
    cdef int code
    if type(strides) is tuple:
        try:
            dims_load(&a, strides)
        except (TypeError, OverflowError):
            pass
        else:
            code = matrix_batch_layout_c(a.v, a.n)
            dims_free(&a)
            return _BATCH_LAYOUTS[code]
    return _ref.matrix_batch_layout(strides)  # other sequences and values: refimpl decides


def matrix_batch_layout(strides):
    """How a batch of matrices is laid out (cubecl ``matrix_batch_layout``).

    Mirrors refimpl.planner.launch.layout.matrix_batch_layout.
    """
    return matrix_batch_layout_o(strides)
