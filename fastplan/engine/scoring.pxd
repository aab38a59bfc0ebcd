# cython: language_level=3
"""C-level declarations of fastplan.engine.scoring: burn's score formula over C counters."""

from libc.stdint cimport int64_t


ctypedef struct ScoringState:
    int64_t num_reads  # unfused global reads of the registered ops
    int64_t num_writes  # unfused global writes of the registered ops
    int64_t num_ops  # registered ops (a Drop counts)


cdef int64_t calculate_score(const ScoringState* s, int64_t reads_fused, int64_t writes_fused,
                             int64_t num_penalty) noexcept nogil


cdef class Scoring:
    cdef ScoringState* p  # the counters shown (own, or a TraceOperationFuser's)
    cdef ScoringState own  # the counters of a standalone Scoring
    cdef object owner  # what keeps *p alive when it is not own (None otherwise)
