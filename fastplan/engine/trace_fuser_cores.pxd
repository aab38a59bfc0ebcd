# cython: language_level=3
"""C-level declarations of fastplan.engine.trace_fuser_cores: ``TraceOperationFuser`` as a C
struct, and its ``nogil`` cores.

A ``TOFState`` holds what refimpl's ``TraceOperationFuser`` and its ``TryTraceFuser`` hold;
the trace itself is a ``builder_structs.Trace``. A trial (refimpl: fuse on a clone) is a
``Checkpoint``: the scalars copied by value, the trace's changes in its undo log.
"""

from libc.stdint cimport int32_t, int64_t, uint8_t

from fastplan._vec cimport Vec
from fastplan.engine.builder_structs cimport Arg, Trace
from fastplan.engine.scoring cimport ScoringState
from fastplan.stream.relative cimport OpC, TensorC


ctypedef struct Reason:
    int32_t code  # builder.R_* or an interned text (0: none)
    int64_t estimate  # R_MAX_BINDINGS: the estimate that was refused
    int64_t max_bindings  # R_MAX_BINDINGS: the limit


ctypedef struct TryState:
    Trace* trace  # TryTraceFuser.fuser (counted ref)
    int64_t max_bindings
    int64_t max_ops
    uint8_t added_ops  # the first op ran (in place, no trial)


ctypedef struct TOFScalars:
    int32_t settings  # settings code (builder.settings_object)
    uint8_t broadcast  # settings.broadcast
    uint8_t output_shape_updates  # settings.output_shape_updates
    uint8_t closed  # FuserStatus.Closed
    int64_t num_ops  # accepted ops, drops and views included
    int64_t num_views
    int64_t max_bindings
    ScoringState scoring
    Py_ssize_t shape_off  # current_output_shape: shape_len entries of ``shapes`` at shape_off
    Py_ssize_t shape_len
    Reason reason  # closed_reason
    uint8_t has_log  # closed_log is set
    int32_t log_op  # closed_log: code of the op that closed the fuser
    Reason log_reason
    int64_t log_before  # closed_log: ops accepted before
    int64_t log_estimate  # closed_log: est_bindings


ctypedef struct TOFState:
    TOFScalars s
    TryState tr
    Vec shapes  # int64: every current_output_shape value, newest last


ctypedef struct Checkpoint:
    TOFScalars s  # copied by value
    uint8_t added_ops
    Py_ssize_t shapes_len
    Py_ssize_t log_pos  # where the trial's undo records start


# the handler an op runs (``add_ops``), by op code
cdef enum:
    H_DROP = 0
    H_VARIANT = 1  # a top-level variant the fuser never accepts
    H_UNSUPPORTED = 2  # a fused category, but no handler
    H_UNARY = 3
    H_BINARY = 4
    H_SCALAR = 5
    H_CREATION = 6
    H_FULL = 7
    H_CLAMP = 8
    H_GATHER = 9
    H_SELECT = 10
    H_CAT = 11
    H_MASK_WHERE = 12
    H_MASK_FILL = 13
    H_SWAP_DIMS = 14
    H_RESHAPE = 15
    MAX_CODES = 1024


cdef inline const int64_t* _shape(const TOFState* f) noexcept nogil:
    """The fuser's ``current_output_shape`` (its ``shape_len`` entries of the arena)."""
    return <const int64_t*>f.shapes.data + f.s.shape_off


cdef int tof_fuse(TOFState* f, const OpC* op) noexcept nogil
cdef int tof_refusal(TOFState* f, const OpC* op, Reason* reason) noexcept nogil
cdef int tof_fuse_both(TOFState* a, TOFState* b, const OpC* op, Reason* reason) noexcept nogil
cdef int tof_try_both(TOFState* a, TOFState* b, const OpC* op, Checkpoint* ca, Checkpoint* cb,
                      Reason* reason, bint* accepted) noexcept nogil
cdef void tof_begin_trial(TOFState* f, Checkpoint* cp) noexcept nogil
cdef void tof_end_trial(TOFState* f, Checkpoint* cp, bint keep) noexcept nogil
cdef void tof_close(TOFState* f, Reason reason) noexcept nogil
cdef int tof_score(TOFState* f, int64_t* score) noexcept nogil
cdef int tof_estimate_bindings(TOFState* f, int64_t* estimate) noexcept nogil
cdef bint tof_shape_equals(const TOFState* f, const int64_t* shape,
                           Py_ssize_t rank) noexcept nogil
cdef int tof_input_unhandled(TOFState* f, const TensorC* tensor, Arg* out) noexcept nogil
cdef int tof_output_unhandled(TOFState* f, const TensorC* tensor, Arg* out) noexcept nogil
cdef int tof_block_local_input(TOFState* f, const TensorC* tensor, int64_t block_pos,
                               bint global_, Arg* out) noexcept nogil
cdef int _bindings_refusal(TryState* tr, Reason* reason) noexcept nogil
cdef void _close(TOFState* f, Reason reason, int32_t op_code, int64_t num_ops_before,
                 bint with_log) noexcept nogil
cdef int _data_op(TOFState* f, const OpC* op, const TensorC* out, int handler, uint8_t name,
                  Reason* reason) noexcept nogil
cdef int _output_is_compatible(TOFState* f, const TensorC* out, bint* ok) noexcept nogil
