# cython: language_level=3
"""C-level declaration of fastplan.launch.launch_vectorize's pass (fastplan.launch.launch chains
it)."""

from fastplan.launch.launch_planners cimport PlanningState


cdef int plan_vectorization_c(PlanningState state, object device,
                              object matmul_operands) except -1
