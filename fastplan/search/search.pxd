# cython: language_level=3
"""C-level declarations of fastplan.search.search (used by processor)."""

from fastplan.search.block cimport Block
from fastplan.search.graph cimport _Flow, Dag
from fastplan.search.merging cimport _Merger


cdef class _Pass:
    cdef list strategies
    cdef list ordering
    cdef list holes
    cdef object single  # the one block's BlockOptimization (one block), else None


cdef class BlocksOptimizer:
    cdef public list blocks  # the blocks to merge and optimize
    cdef public object num_ops  # largest end position: the segment length they cover
    cdef public object log  # a refimpl.planner.log.FusionLog
    cdef _Merger merger  # the search's merging context (None: built from Python, no memo)
    cdef object _levels_of  # the log _basic and _full were read from (None: not read yet)
    cdef bint _basic  # _levels_of prints block decisions
    cdef bint _full  # _levels_of prints search events
    cdef Dag _dag  # the merging pass's block DAG while its blocks stand unchanged, else None
    cdef object run(self)
    cdef int _read_levels(self) except -1
    cdef _Pass run_c(self)
    cdef int _merging_pass_c(self) except -1


cdef class StreamOptimizer:
    cdef public list fusers  # the fusers every new block clones
    cdef public list blocks  # sorted by start position
    cdef public object length  # ops registered so far (= the next position)
    cdef public bint stopped  # the block cap (or a cycle) stopped registration
    cdef public object max_blocks  # None: no cap
    cdef object _log  # the FusionLog (property ``log``)
    cdef bint _full  # the log prints stream events
    cdef bint _basic  # the log prints block decisions
    cdef bint _fusers_reset  # self.fusers were reset and never fed since
    cdef _Merger _merger  # refused merges of this optimizer's blocks (merging.pyx)
    cdef list _flows  # the data flow of each registered op, by position (for repair)
    cdef dict _dead  # drop op code -> the fusers a new block has after it: all frozen
    cdef tuple _dead_of  # the fusers _dead was made from (None: none yet, or reset since)
    cdef int register_op(self, object operation, _Flow flow) except -1
    cdef int _place(self, object operation, _Flow flow) except -1
    cdef bint optimizing(self) except -1
    cdef void reset_all(self) except *
    cdef void _trace(self, str template, object a=*, object b=*, object c=*) except *
    cdef bint _register_max_block(self, object operation, _Flow flow,
                                  object max_blocks) except -1
    cdef Py_ssize_t _register_inner(self, object operation, _Flow flow,
                                    bint force) except -1
    cdef int _merge(self, object operation, _Flow flow, bint everything) except -1
    cdef void _new_block(self, object operation, _Flow flow) except *
    cdef Block _opened(self, object operation, _Flow flow)
    cdef bint _same_templates(self) except -1
    cdef void _dependent(self, object operation, _Flow flow) except *
    cdef StreamOptimizer empty_clone(self)
    cdef _Pass first_pass(self, bint consume)
    cdef object optimized(self, object operations, bint consume)
