# cython: language_level=3
"""C-level declarations of fastplan.search.strategy (used by block, repair, search, queue and
processor)."""


cdef list leaves_of(object strategy)
cdef Py_ssize_t len_of(object strategy) except -1
cdef object map_ordering_of(object strategy, object mapping)
cdef object map_block_ordering_of(object block_opt, object mapping)
cdef object trailing_included(object block_opt, object num_operations)
cdef object unfused_block(tuple ordering)
cdef object max_shape_id_of(object strategy)
cdef bint fused_optimization(object opt) noexcept
cdef object main_trace_of(object opt)
cdef tuple trace_ids(object trace, bint outputs)
cdef tuple trace_op_names(object trace)
