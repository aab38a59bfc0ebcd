# cython: language_level=3
"""C-level declarations of fastplan.launch.handles_layouts (handle layouts: the ``Memory`` of
fastplan.launch.handles and the launch memo build and read handles through them)."""

from libc.stdint cimport int64_t

cdef object handle_buffer(object handle)
cdef tuple handle_layout(object handle)
cdef object _buffer_of(object handle)
cdef object new_handle(object buffer, object shape, object strides, object offset,
                       object dtype)
cdef object _handle(object buffer, tuple shape, tuple strides, object offset,
                           object dtype)
cdef tuple _contiguous(tuple shape)
cdef object buffer_length(tuple shape, tuple strides)
cdef Py_ssize_t _layout_words(int64_t* words, object shape, object strides, object offset,
                              object dtype) except -2
cdef Py_ssize_t layout_id(dict table, object handle) except -1
cdef object _view(object op, object variant, object source)
