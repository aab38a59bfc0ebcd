# cython: language_level=3
"""C-level declarations of fastplan.launch.launch_memo (the stream walk,
fastplan.launch.execute, keys, stores and replays fused steps through them)."""

cimport cython
from libc.stdint cimport int64_t, uint64_t

from fastplan._keys cimport KeyBuf, KeyTable
from fastplan.launch.handles cimport Memory, _InputsMemo
from fastplan.stream.queue cimport _StepContext, _StepRecord


@cython.final  # its calls among its own methods are direct (no subclass)
cdef class LaunchMemo:
    cdef dict _by_device
    cdef dict _executions_by_device
    cdef dict layout_ids  # a layout key (fastplan.launch.handles._layout_key) -> layout id
    cdef _InputsMemo inputs  # the handles of the stream inputs loaded last
    cdef public Py_ssize_t hits, misses
    cdef public bint keep_steps

    cdef dict table(self, object device)
    cdef KeyTable executions(self, object device)
    cdef bint full(self, dict table) except -1
    cdef int restart(self, Memory memory) except -1
    cdef int store(self, KeyTable executions, KeyBuf* key, uint64_t h,
                   _Execution found) except -1


cdef class _Outcome:
    """One fused step's stored launch outcome, relative to the step's tensor order."""
    cdef object optimization  # held: the key holds its id()
    cdef tuple widths  # None: no main launch plan
    cdef tuple aliases  # (output position, input position)
    cdef tuple changes  # _Change per tensor of the order whose live handle the step changed
    cdef Py_ssize_t new_buffers  # how many buffers the step allocated (their sizes are not
    #                              kept: see _replay)
    cdef object blocks_from  # the step's ``blocks`` last filled, and the filled ones
    cdef tuple blocks
    cdef object filled_from  # the step last filled without aliases, and its filled PlanStep
    cdef object filled  # (fastplan.launch.execute's ``_filled_part``)


cdef class _Change:
    """What a step did to the tensor at position ``k`` of its order: dropped its live handle
    (``gone``), or gave it a handle with this layout on a fresh buffer (``fresh``: the
    ``at``-th the step allocated) or on the buffer the tensor at position ``at`` held before."""
    cdef Py_ssize_t k
    cdef bint gone
    cdef bint fresh
    cdef Py_ssize_t at
    cdef tuple fields  # the handle's (shape, strides, offset, dtype)
    cdef Py_ssize_t layout


cdef class _Execution:
    """One whole execution's stored launch outcome (every step of one plan the queue ran): its
    net memory changes, and each fused step's widths and aliases."""
    cdef object plan  # the optimization the queue executed, held: the key holds its id
    cdef tuple optimizations  # the fused steps' optimizations, held: the key holds their ids
    cdef _Outcome memory  # the net changes and new buffers (no widths, no aliases)
    cdef list steps  # per step: None (unfused) or an _Outcome holding its widths and aliases


cdef object _key(_StepRecord item, list order, Memory memory, KeyBuf* held)
cdef object _with_state(int64_t head, object state)
cdef bint _push_state(KeyBuf* b, _StepContext context, list order, Memory memory,
                      KeyBuf* held) except -1
cdef list _handles_of(const int64_t* held, Py_ssize_t n, Memory memory)
cdef _Outcome _record(object optimization, list order, const int64_t* held, object positions,
                      list before, Memory memory, object first_new, object widths,
                      list aliases)
cdef tuple _relative_aliases(object position, object aliases)
cdef list _replay(_Outcome outcome, list order, const int64_t* held, Memory memory)
cdef list _global_pairs(tuple pairs, list order)
