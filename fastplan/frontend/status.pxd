# cython: language_level=3
"""C-level declarations of fastplan.frontend.status (the compiled recorder's status rule)."""

cdef list statuses(str path, list counts, list tensors, bint held)
