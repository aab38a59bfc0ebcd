# cython: language_level=3
"""C-level declarations of fastplan.launch.launch_planners_output (burn's ``OutputPlanner``)."""

from fastplan.launch.launch_planners cimport PlanningState

# ``plan_outputs`` as a C call (the input pass first, as burn's ``LaunchPlanExecutor`` runs them)
cdef int plan_outputs_c(PlanningState state) except -1
cdef bint may_permute(object settings, object ops) except -1
