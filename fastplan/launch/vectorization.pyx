# cython: language_level=3
"""Vector widths: candidate sizes, per-tensor vector sizes, block widths, the vector axis.

Mirrors ``refimpl/planner/launch/vectorization.py`` (burn ``launch/vectorization/{base,planner,
axis}.rs``): same names, same order, same results. The per-tensor rules are ``noexcept nogil``
cores over ``int64_t`` arrays (``vectorization.pxd``); a vector size is an ``int64_t`` there
(0 is ``Broadcasted``) and becomes refimpl's ``Vect`` (interned) at the boundary. ``Vect``,
``BROADCASTED``, ``VECTORIZATION_MAX``, ``VectorAxisAction`` and ``AxisDecision`` are refimpl's
objects. Inputs a core cannot take (a value that is not an int, an axis out of range,
a non-positive candidate) are handed to refimpl's function, so the result or the error is
refimpl's.
"""

cimport cython
from libc.stdint cimport int64_t

from fastplan.launch.layout cimport Dims, dims_free, dims_load, permuted_innermost_axis_t

from refimpl.planner.launch import vectorization as _ref
from refimpl.planner.launch.vectorization import (
    BROADCASTED, VECTORIZATION_MAX, AxisDecision, Vect, VectorAxisAction,
)

__all__ = [
    "VECTORIZATION_MAX",
    "Vect",
    "BROADCASTED",
    "candidate_widths",
    "smallest_elem_bytes",
    "vectorization_input",
    "vectorization_output",
    "vectorization_reshape",
    "vectorization_swapped",
    "merge_multi_reads",
    "block_width",
    "VectorAxisAction",
    "AxisDecision",
    "merge_axis_actions",
    "axis_action",
    "block_axis",
]

VECTORIZATION_MAX = VECTORIZATION_MAX

cdef list _ALIGNED = [Vect(s) for s in range(33)]  # interned Vect(size) for common sizes
cdef object _DEFAULT = AxisDecision(VectorAxisAction.Default)
cdef object _REFUSE = AxisDecision(VectorAxisAction.Refuse)
cdef object _ALONG = VectorAxisAction.Along


cdef object vect_of(int64_t code):
    if code == VECT_BROADCASTED:
        return BROADCASTED
    if code < 33:
        return _ALIGNED[code]
    return Vect(code)


@cython.cdivision(True)
cdef inline bint _divides(int64_t s, int64_t x) noexcept nogil:
    # ``x % s == 0`` for a candidate ``s > 0`` (checked at the boundary): divisibility does not
    # depend on the sign convention, so C's remainder gives Python's answer here.
    return x % s == 0


# --- cores --------------------------------------------------------------------------------------


cdef int64_t next_stride_c(const int64_t* strides, Py_ssize_t rank,
                           Py_ssize_t axis) noexcept nogil:
    cdef Py_ssize_t i
    cdef int64_t best = 0
    cdef bint found = False
    for i in range(rank):
        if i == axis or strides[i] == 0:
            continue
        if not found or strides[i] < best:
            best, found = strides[i], True
    return best


cdef int64_t vectorization_input_c(const int64_t* shape, const int64_t* strides,
                                   Py_ssize_t rank, Py_ssize_t axis, const int64_t* sizes,
                                   Py_ssize_t nsizes) noexcept nogil:
    cdef Py_ssize_t k
    cdef int64_t shape_axis = shape[axis], nxt, s
    if shape_axis == 1:
        return VECT_BROADCASTED
    if strides[axis] != 1:
        return 1
    nxt = next_stride_c(strides, rank, axis)
    for k in range(nsizes):
        s = sizes[k]
        if _divides(s, shape_axis) and _divides(s, nxt):
            return s
    return 1


cdef int64_t vectorization_output_c(int64_t shape_axis, const int64_t* sizes,
                                    Py_ssize_t nsizes, int64_t max_size) noexcept nogil:
    cdef Py_ssize_t k
    cdef int64_t s
    for k in range(nsizes):
        s = sizes[k]
        if _divides(s, shape_axis) and s <= max_size:
            return s
    return 1


cdef int64_t vectorization_reshape_c(int64_t reshape_axis, int64_t original_axis,
                                     bint last_axis, bint multi_reads, const int64_t* sizes,
                                     Py_ssize_t nsizes, int64_t max_size) noexcept nogil:
    cdef Py_ssize_t k
    cdef int64_t s
    if not multi_reads and reshape_axis == 1:
        return VECT_BROADCASTED
    if not last_axis or original_axis != reshape_axis:
        return 1
    for k in range(nsizes):
        s = sizes[k]
        # multi_reads adds ``original_axis % s == 0``: the same number here
        if _divides(s, reshape_axis) and s <= max_size:
            return s
    return 1


cdef int64_t vectorization_swapped_c(const int64_t* strides, Py_ssize_t rank,
                                     int64_t swapped_axis, int64_t shape_axis,
                                     Py_ssize_t dim_index, bint multi_reads, Py_ssize_t axis,
                                     const int64_t* sizes, Py_ssize_t nsizes,
                                     int64_t max_size) noexcept nogil:
    cdef Py_ssize_t k
    cdef int64_t s, nxt
    if multi_reads and (strides[axis] != 1 or strides[dim_index] != 1):
        return 1
    if not multi_reads and strides[dim_index] != 1:
        return 1
    if not multi_reads and swapped_axis == 1:
        return VECT_BROADCASTED
    nxt = next_stride_c(strides, rank, axis)
    for k in range(nsizes):
        s = sizes[k]
        if _divides(s, swapped_axis) and _divides(s, nxt) and s <= max_size and \
                (multi_reads or _divides(s, shape_axis)):
            return s
    return 1


cdef int64_t block_width_c(const int64_t* sizes, Py_ssize_t n, int64_t max_size) noexcept nogil:
    cdef Py_ssize_t i
    cdef int64_t width = 0, size
    for i in range(n):
        size = sizes[i] if sizes[i] <= max_size else 1
        if size > width:
            width = size
    return width


cdef bint _sizes_ok(Dims* d):
    cdef Py_ssize_t k
    for k in range(d.n):
        if d.v[k] <= 0:
            return False
    return True


# --- the def twins ------------------------------------------------------------------------------


def candidate_widths(device, elem_bytes):
    """Candidate vector sizes for ``elem_bytes``-byte elements, widest first.

    Mirrors refimpl.planner.launch.vectorization.candidate_widths.
    """
    return device.vector_sizes(elem_bytes)


def smallest_elem_bytes(sizes):
    """The element size candidates are computed from: the smallest storage size among the

    Mirrors refimpl.planner.launch.vectorization.smallest_elem_bytes.
    """
    smallest = 8
    for size in sizes:
        smallest = min(smallest, size)
    return smallest


def vectorization_input(shape, strides, axis, sizes):
    """A read tensor: size-1 axis → broadcast; stride ≠ 1 on the axis → 1; else the widest

    Mirrors refimpl.planner.launch.vectorization.vectorization_input.
    """
    cdef Dims a, b, c
    cdef int64_t code
    try:
        dims_load(&a, shape)
    except (TypeError, OverflowError):
        return _ref.vectorization_input(shape, strides, axis, sizes)
    try:
        try:
            dims_load(&b, strides)
        except (TypeError, OverflowError):
            return _ref.vectorization_input(shape, strides, axis, sizes)
        try:
            try:
                dims_load(&c, sizes)
            except (TypeError, OverflowError):
                return _ref.vectorization_input(shape, strides, axis, sizes)
            try:
                # the core needs an in-range, non-negative axis and positive candidates
                if type(axis) is not int or not 0 <= axis < a.n or b.n != a.n or \
                        not _sizes_ok(&c):
                    return _ref.vectorization_input(shape, strides, axis, sizes)
                code = vectorization_input_c(a.v, b.v, a.n, axis, c.v, c.n)
                return vect_of(code)
            finally:
                dims_free(&c)
        finally:
            dims_free(&b)
    finally:
        dims_free(&a)


def vectorization_output(shape, axis, sizes, max_size):
    """A written tensor (shape only): the widest size dividing the axis length.

    Mirrors refimpl.planner.launch.vectorization.vectorization_output.
    """
    cdef Dims c
    if type(axis) is not int or not 0 <= axis < len(shape) or type(shape[axis]) is not int \
            or type(max_size) is not int:
        return _ref.vectorization_output(shape, axis, sizes, max_size)
    try:
        dims_load(&c, sizes)
    except (TypeError, OverflowError):
        return _ref.vectorization_output(shape, axis, sizes, max_size)
    try:
        if not _sizes_ok(&c):
            return _ref.vectorization_output(shape, axis, sizes, max_size)
        return vect_of(vectorization_output_c(shape[axis], c.v, c.n, max_size))
    finally:
        dims_free(&c)


def vectorization_reshape(reshaped, original, multi_reads, axis, sizes, max_size):
    """A fused reshape view of ``original`` (shapes only).

    Mirrors refimpl.planner.launch.vectorization.vectorization_reshape.
    """
    cdef Dims c
    if type(axis) is not int or not 0 <= axis < len(reshaped) or len(original) == 0 or \
            type(reshaped[axis]) is not int or type(original[len(original) - 1]) is not int or \
            type(max_size) is not int:
        return _ref.vectorization_reshape(reshaped, original, multi_reads, axis, sizes,
                                          max_size)
    try:
        dims_load(&c, sizes)
    except (TypeError, OverflowError):
        return _ref.vectorization_reshape(reshaped, original, multi_reads, axis, sizes,
                                          max_size)
    try:
        if not _sizes_ok(&c):
            return _ref.vectorization_reshape(reshaped, original, multi_reads, axis, sizes,
                                              max_size)
        return vect_of(vectorization_reshape_c(
            reshaped[axis], original[len(original) - 1], axis == len(reshaped) - 1,
            bool(multi_reads), c.v, c.n, max_size))
    finally:
        dims_free(&c)


def vectorization_swapped(strides, swapped, original, multi_reads, dims, axis, sizes, max_size):
    """A fused swap_dims view read from ``original``'s buffer (``strides`` are the

    Mirrors refimpl.planner.launch.vectorization.vectorization_swapped.
    """
    cdef Dims b, c
    cdef Py_ssize_t dim_index
    cdef int64_t code
    args = (strides, swapped, original, multi_reads, dims, axis, sizes, max_size)
    if type(axis) is not int or type(max_size) is not int:
        return _ref.vectorization_swapped(*args)
    dim_index = dims[1] if axis == dims[0] else dims[0] if axis == dims[1] else axis
    n = len(strides)
    if not (0 <= axis < n and 0 <= dim_index < n and axis < len(swapped)
            and axis < len(original)) or type(swapped[axis]) is not int or \
            type(original[axis]) is not int:
        return _ref.vectorization_swapped(*args)
    try:
        dims_load(&b, strides)
    except (TypeError, OverflowError):
        return _ref.vectorization_swapped(*args)
    try:
        try:
            dims_load(&c, sizes)
        except (TypeError, OverflowError):
            return _ref.vectorization_swapped(*args)
        try:
            if not _sizes_ok(&c):
                return _ref.vectorization_swapped(*args)
            code = vectorization_swapped_c(b.v, b.n, swapped[axis], original[axis], dim_index,
                                           bool(multi_reads), axis, c.v, c.n, max_size)
            return vect_of(code)
        finally:
            dims_free(&c)
    finally:
        dims_free(&b)


def merge_multi_reads(existing, new):
    """A view's vector size merged into its original's entry: a broadcast entry stays; an

    Mirrors refimpl.planner.launch.vectorization.merge_multi_reads.
    """
    if existing is None:
        return new
    if existing.broadcast:
        return existing
    if new.broadcast or new.size != existing.size:
        return _ALIGNED[1]
    return existing


def block_width(items, max_size):
    """burn ``apply_vectorization_block``'s width: the maximum over the block's items

    Mirrors refimpl.planner.launch.vectorization.block_width.
    """
    width = 0
    for vect, _ in items:
        width = max(width, vect.size if vect.size <= max_size else 1)
    return width


def merge_axis_actions(current, other):
    """Two blocks touching the same tensor must agree, or the tensor is refused.

    Mirrors refimpl.planner.launch.vectorization.merge_axis_actions.
    """
    return current if current == other else _REFUSE


def axis_action(block_axis_value, rank, stride_on_axis):
    """``VectorAxisPolicy::LineUpWithBlock`` for one tensor of one block.

    Mirrors refimpl.planner.launch.vectorization.axis_action.
    """
    if block_axis_value is None:
        return _DEFAULT
    if block_axis_value >= rank:
        return _REFUSE
    if stride_on_axis is not None and stride_on_axis != 1:
        return _REFUSE
    return AxisDecision(_ALONG, block_axis_value)


def block_axis(concrete_shape, concrete_strides):
    """The axis a block with a concrete reference iterates along when that reference is

    Mirrors refimpl.planner.launch.vectorization.block_axis.
    """
    if concrete_shape is None or concrete_strides is None:
        return None
    try:
        return permuted_innermost_axis_t(tuple(concrete_shape), tuple(concrete_strides))
    except (TypeError, OverflowError):
        return _ref.block_axis(concrete_shape, concrete_strides)
