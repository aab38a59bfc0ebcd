# cython: language_level=3
"""C-level declarations of fastplan.stream.queue_execution (the execution half of
``OperationQueue``: each function takes the queue as first argument)."""

from fastplan.stream.queue cimport OperationQueue

cdef list executed_steps(OperationQueue q, Py_ssize_t start, bint unfused_context)
cdef tuple segment_of(OperationQueue q, Py_ssize_t first, Py_ssize_t count)
cdef int run_plan(OperationQueue q, object optimization, Py_ssize_t plan_id) except -1
cdef object compile_plan(OperationQueue q, object optimization, Py_ssize_t plan_id)
cdef int run_optimization(OperationQueue q, object optimization) except -1
cdef int run_leaves(OperationQueue q, list leaves, object optimization, int drops) except -1
cdef tuple dims_now(OperationQueue q)
cdef bint drops_only(OperationQueue q, list leaves) except -1
cdef object make_step(OperationQueue q, object leaf_obj)
cdef tuple global_ids(OperationQueue q, tuple relative_ids)
cdef int drain(OperationQueue q, Py_ssize_t count) except -1
