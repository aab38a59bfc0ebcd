# cython: language_level=3
"""C-level declarations of fastplan.stream.queue_relative (a pending op's relative form, built
from its key: ``OperationQueue.rel_at``)."""

from fastplan.stream.queue cimport OperationQueue

cdef object relative_at(OperationQueue q, Py_ssize_t i)
cdef object materialize(OperationQueue q, Py_ssize_t i)
