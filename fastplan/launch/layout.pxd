# cython: language_level=3
"""C-level declarations of fastplan.launch.layout: the layout rules as integer cores.

Every core takes C arrays of ``int64_t`` (shape, strides: ``rank`` entries each) and C scalars,
never Python objects, and runs without the GIL. ``Dims`` holds one tensor's shape or strides
as loaded from a Python sequence by ``dims_load``.
"""

from libc.stdint cimport int64_t

cdef enum:
    DIMS_INLINE = 16  # dims held inline by a Dims before it allocates

ctypedef struct Dims:
    int64_t* v            # the values (points at ``inline`` or at a PyMem block)
    Py_ssize_t n          # how many
    int64_t inline[16]    # storage for ranks up to DIMS_INLINE

# Load a sequence of ints (``OverflowError`` beyond int64); ``dims_free`` releases it.
cdef int dims_load(Dims* d, object seq) except -1
cdef void dims_free(Dims* d) noexcept
cdef tuple dims_tuple(const int64_t* v, Py_ssize_t n)

cdef void contiguous_strides_c(const int64_t* shape, Py_ssize_t rank,
                               int64_t* out) noexcept nogil
cdef bint is_contiguous_c(const int64_t* shape, const int64_t* strides,
                          Py_ssize_t rank) noexcept nogil
cdef bint is_dense_c(const int64_t* shape, const int64_t* strides,
                     Py_ssize_t rank) noexcept nogil
# ``order`` gets ``rank`` axes (outermost first); returns whether the tensor is dense.
cdef bint dim_order_c(const int64_t* shape, const int64_t* strides, Py_ssize_t rank,
                      Py_ssize_t* order) noexcept nogil
cdef bint is_contiguous_order_c(const Py_ssize_t* order, Py_ssize_t rank) noexcept nogil
# The axis, or -1 for ``None``.
cdef Py_ssize_t permuted_innermost_axis_c(const int64_t* shape, const int64_t* strides,
                                          Py_ssize_t rank) noexcept nogil
# 0 Contiguous, 1 MildlyPermuted, 2 MildlyPermutedTransposed, 3 HighlyPermuted.
cdef int matrix_batch_layout_c(const int64_t* strides, Py_ssize_t rank) noexcept nogil
cdef void strides_for_c(const int64_t* shape, const Py_ssize_t* order, Py_ssize_t rank,
                        int64_t* out) noexcept nogil

# Python-object fast paths for the launch twins (tuples of ints in, Python values out).
cdef tuple contiguous_strides_t(tuple shape)
cdef bint is_contiguous_t(tuple shape, tuple strides) except -1
cdef bint is_dense_t(tuple shape, tuple strides) except -1
cdef object dim_order_t(tuple shape, tuple strides)
cdef object permuted_innermost_axis_t(tuple shape, tuple strides)
cdef tuple strides_for_t(tuple shape, tuple order)
# ``matrix_batch_layout``: a tuple of ints in C, anything else by refimpl's function.
cdef object matrix_batch_layout_o(object strides)
