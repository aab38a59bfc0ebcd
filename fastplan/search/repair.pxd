# cython: language_level=3
"""C-level declarations of fastplan.search.repair (used by search)."""


cdef class Chunk:
    cdef public tuple positions  # the segment positions of one top-level strategy
    cdef public dict produced_ids  # ids its ops output (an insertion-ordered set)
    cdef public dict read_ids  # ids read that no op of the chunk produced
    cdef public dict freed_ids  # ids read ReadWrite (even when the chunk produced them)


cdef object unfused_order(object positions)
cdef object repaired(object opt, object operations, list known=*)
