# cython: language_level=3
"""C-level declarations of fastplan.launch.vectorization: the per-tensor vector-size rules as
integer cores.

A vector size is encoded as an ``int64_t``: ``VECT_BROADCASTED`` (0) is burn's
``Vect::Broadcasted``, any positive value ``Vect::Aligned(size)``. ``sizes`` are the candidate
widths, widest first (``nsizes`` of them, all positive).
"""

from libc.stdint cimport int64_t

cdef enum:
    VECT_BROADCASTED = 0  # Vect(1, True)

cdef int64_t next_stride_c(const int64_t* strides, Py_ssize_t rank,
                           Py_ssize_t axis) noexcept nogil
cdef int64_t vectorization_input_c(const int64_t* shape, const int64_t* strides,
                                   Py_ssize_t rank, Py_ssize_t axis, const int64_t* sizes,
                                   Py_ssize_t nsizes) noexcept nogil
cdef int64_t vectorization_output_c(int64_t shape_axis, const int64_t* sizes,
                                    Py_ssize_t nsizes, int64_t max_size) noexcept nogil
cdef int64_t vectorization_reshape_c(int64_t reshape_axis, int64_t original_axis,
                                     bint last_axis, bint multi_reads, const int64_t* sizes,
                                     Py_ssize_t nsizes, int64_t max_size) noexcept nogil
cdef int64_t vectorization_swapped_c(const int64_t* strides, Py_ssize_t rank,
                                     int64_t swapped_axis, int64_t shape_axis,
                                     Py_ssize_t dim_index, bint multi_reads, Py_ssize_t axis,
                                     const int64_t* sizes, Py_ssize_t nsizes,
                                     int64_t max_size) noexcept nogil
cdef int64_t block_width_c(const int64_t* sizes, Py_ssize_t n, int64_t max_size) noexcept nogil

# The Vect object of an encoded size (interned: Vect is a frozen dataclass).
cdef object vect_of(int64_t code)
