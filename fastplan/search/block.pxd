# cython: language_level=3
"""C-level declarations of fastplan.search.block (used by merging and search)."""

from fastplan.search.graph cimport _Flow


cdef class Block:
    cdef public list fusers  # one clone of every fuser, fed the block's ops in order
    cdef public list operations  # the block's relative ops, in registration order
    cdef public list ordering  # their segment positions
    cdef public set ids  # every tensor id an op of the block touches (membership only)
    cdef public dict produced_ids  # ids an op outputs (an insertion-ordered set)
    cdef public dict read_ids  # ids read that nothing in the block produced
    cdef public dict freed_ids  # ids read ReadWrite
    cdef public object constituents  # bit set (int) of the original blocks it subsumes
    cdef public object start_pos  # smallest position (sys.maxsize while empty)
    cdef public object end_pos  # largest position + 1 (0 while empty)
    cdef list flows  # graph._Flow of each op, parallel to operations
    cdef unsigned long long state  # names its contents: new at each register_op; clones keep it
    cdef _Flow _flow  # as_flow's value for the contents _flow_state names (None: not built)
    cdef unsigned long long _flow_state

    cpdef Block clone(self)
    cdef list fusers_sharing(self)
    cdef Block clone_lists(self)
    cdef bint live(self) except -1
    cdef object merged_copy(self, Block other)
    cdef int register_op(self, object operation, object pos, _Flow flow) except -1
    cdef int _record_op(self, object operation, object pos, _Flow flow) except -1
    cdef int _record_ids(self, _Flow flow) except -1
    cdef int accepts(self, object operation, object pos, _Flow flow, bint force) except -1
    cdef bint touches(self, _Flow flow) except -1
    cdef bint open_(self) except -1
    cdef bint ready(self) except -1
    cdef bint appendable(self, Block other) except -1
    cdef bint merge_from(self, Block other) except -1
    cdef bint merge_appendable(self, Block other) except -1
    cdef _Flow as_flow(self)
    cdef object optimized(self, object log, bint logged)


cdef Block new_block(list fusers)
cdef Block block_sharing(list fusers)
cdef _Flow op_flow(object operation)
cdef object best_fuser(list fusers)
