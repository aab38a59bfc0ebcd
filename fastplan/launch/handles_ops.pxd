# cython: language_level=3
"""C-level declarations of fastplan.launch.handles_ops (what launch planning reads of an op)."""

cdef tuple _inputs(object op)
cdef tuple op_nodes(object op)
cdef frozenset init_targets_c(object stream)
