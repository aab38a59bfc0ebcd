# cython: language_level=3
"""C-level declarations of fastplan.launch_planners shared with the other launch twins."""

# ``dtype.storage_bytes`` from a table keyed by the DType member (refimpl's property otherwise).
cdef object storage_bytes(object dtype)
