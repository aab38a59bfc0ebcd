# cython: language_level=3
"""C-level declarations of fastplan.merging (used by search)."""

from fastplan.block cimport Block


cdef object merge_pair(Block a, Block b, object guard)
cdef object blocks_merged(object blocks, object guard, bint sort)
