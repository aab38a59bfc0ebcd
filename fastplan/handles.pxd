# cython: language_level=3
"""C-level declaration of fastplan.handles.Memory (fastplan.launch_stream reads its state)."""

cdef Py_ssize_t layout_id(dict table, object handle) except -1
cdef tuple op_nodes(object op)
cdef object buffer_length(tuple shape, tuple strides)
cdef object handle_buffer(object handle)
cdef tuple handle_layout(object handle)
cdef bint replayable_op(object op) except -1


cdef class Memory:
    cdef public dict handles
    cdef public dict sizes
    cdef public object next_buffer
    cdef public dict inputs
    cdef dict _users
    cdef readonly dict layouts
    cdef dict layout_ids
    cdef list _undo  # while a trial runs: (dict, key, old value) triples to undo; else None
    cdef object _undo_next_buffer  # next_buffer when the trial began

    cpdef Memory fork(self)
    cpdef adopt(self, Memory other)
    cpdef int begin_trial(self) except -1
    cpdef int keep_trial(self) except -1
    cpdef int undo_trial(self) except -1
    cdef int _note(self, dict table, object key) except -1
    cdef object _alloc(self, tuple shape, object dtype, tuple strides)
    cdef object _alloc_as(self, object shape, object dtype, object strides)
    cpdef register(self, object tensor_id, object handle)
    cdef int register_layout(self, object tensor_id, object handle, Py_ssize_t layout) except -1
    cdef void _release(self, object buffer) except *
    cpdef object handle(self, object tensor_id)
    cpdef object take(self, object tensor_id, object status)
    cpdef remove(self, object tensor_id)
    cdef int use_layout_ids(self, dict table) except -1
    cpdef Py_ssize_t users(self, object buffer)
    cpdef run_unfused(self, object op)
    cdef _run_unfused_any(self, object op)
