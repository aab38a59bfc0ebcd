# cython: language_level=3
"""C-level declaration of fastplan.launch.launch's launch planning for the stream walk
(fastplan.launch.execute plans each fused step through it)."""


cdef class _WalkLaunch:
    cdef readonly tuple aliases, widths
    cdef readonly bint skipped
    cdef list inputs, outputs  # the state's HandleInput / HandleOutput entries
    cdef object ref_arg


cdef _WalkLaunch plan_launch_walk(object trace, object context, object memory, object device,
                                  object matmul_operands)
cdef bint walk_matmul_refused(_WalkLaunch launch, Py_ssize_t lhs, Py_ssize_t rhs) except -1
cdef bint extents_fit(object context, object memory) except -1
cdef object context_of_c(object segment, object global2relative, object shapes,
                         object scalars)
