# cython: language_level=3
"""C-level declarations of fastplan.search.merging (used by search)."""

from fastplan.search.block cimport Block


cdef class _Merger:
    cdef set refused  # (base.state, other.state): registering other after base was refused
    cdef void forget(self)


cdef object merge_pair(Block a, Block b, object guard, _Merger merger)
cdef object blocks_merged(object blocks, object guard, bint sort, _Merger merger)
