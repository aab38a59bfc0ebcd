# cython: language_level=3
"""How much a fused trace saves: global reads and writes avoided, kernel launches saved.

burn counterpart: ``crates/burn-cubecl-fusion/src/engine/scoring.rs`` (``Scoring``); notes §9.2.
Mirrors ``refimpl/planner/engine/scoring.py``: same names, same order, same results. The counters
are a C struct (``ScoringState``); a ``TraceOperationFuser`` embeds one and scores its trace without
building it (``trace_fuser.tof_properties`` counts the same reads, writes and view penalties
``evaluate`` counts on a finished ``FuseTrace``).

    score = max(0, unfused_io - fused_io) * 100 + (num_ops - 1) * 10 - penalty * 50   (>= 0)

>>> Scoring(num_reads=2, num_writes=2, num_ops=2).calculate_score(1, 1, 0)
210
>>> Scoring(num_reads=2, num_writes=2, num_ops=2).calculate_score(1, 1, 1)
160
"""

from libc.stdint cimport int64_t

from refimpl.planner.engine.trace import Input, InputReshaped, InputSwapDims, Output

__all__ = ["Scoring", "FACTOR_IO", "FACTOR_LAUNCH", "FACTOR_PENALTY"]

FACTOR_IO = 100  # per global read or write saved
FACTOR_LAUNCH = 10  # per kernel launch saved (one launch is always needed)
FACTOR_PENALTY = 50  # per read through a fused view (index math on every element)

cdef int64_t _FACTOR_IO = FACTOR_IO
cdef int64_t _FACTOR_LAUNCH = FACTOR_LAUNCH
cdef int64_t _FACTOR_PENALTY = FACTOR_PENALTY

_GLOBAL = (Input, Output)
_VIEWS = (InputReshaped, InputSwapDims)


cdef int64_t calculate_score(const ScoringState* s, int64_t reads_fused, int64_t writes_fused,
                             int64_t num_penalty) noexcept nogil:
    """burn's formula (saturating at 0)."""
    cdef int64_t fused = reads_fused + writes_fused
    cdef int64_t unfused = s.num_reads + s.num_writes
    cdef int64_t score_io = 0 if fused >= unfused else (unfused - fused) * _FACTOR_IO
    cdef int64_t score_launch = (s.num_ops - 1 if s.num_ops > 1 else 0) * _FACTOR_LAUNCH
    cdef int64_t score = score_io + score_launch - num_penalty * _FACTOR_PENALTY
    return score if score > 0 else 0


cdef class Scoring:
    """burn ``Scoring``: the unfused I/O of the ops registered so far.

    Mirrors refimpl.planner.engine.scoring.Scoring.
    """

    def __cinit__(self):
        self.p = &self.own
        self.owner = None

    def __init__(self, num_reads=0, num_writes=0, num_ops=0):
        self.own.num_reads = num_reads
        self.own.num_writes = num_writes
        self.own.num_ops = num_ops

    @property
    def num_reads(self):
        return self.p.num_reads

    @num_reads.setter
    def num_reads(self, value):
        self.p.num_reads = value

    @property
    def num_writes(self):
        return self.p.num_writes

    @num_writes.setter
    def num_writes(self, value):
        self.p.num_writes = value

    @property
    def num_ops(self):
        return self.p.num_ops

    @num_ops.setter
    def num_ops(self, value):
        self.p.num_ops = value

    def __eq__(self, other):
        if type(other) is not Scoring:
            return NotImplemented
        return (self.num_reads, self.num_writes, self.num_ops) == (
            other.num_reads, other.num_writes, other.num_ops)

    def __repr__(self):
        return (f"Scoring(num_reads={self.num_reads}, num_writes={self.num_writes}, "
                f"num_ops={self.num_ops})")

    def clone(self):
        return Scoring(self.p.num_reads, self.p.num_writes, self.p.num_ops)

    def reset(self):
        self.p.num_reads = self.p.num_writes = self.p.num_ops = 0

    def register(self, op):
        """Count an accepted op's unfused I/O (a ``Drop`` counts one read and one op)."""
        self.p.num_writes += len(op.outputs())
        self.p.num_reads += len(op.inputs())
        self.p.num_ops += 1

    def evaluate(self, trace):
        """The score of ``trace`` against the registered unfused I/O."""
        cdef int64_t reads = 0, writes = 0, penalty = 0, io, views
        for block in trace.blocks:
            for _, ops in block.reads:
                io, views = _count_fused_io(ops, True)
                reads, penalty = reads + io, penalty + views
            for _, ops in block.writes:
                io, views = _count_fused_io(ops, False)
                writes, penalty = writes + io, penalty + views
        return calculate_score(self.p, reads, writes, penalty)

    def calculate_score(self, reads_fused, writes_fused, num_penalty):
        """burn's formula (saturating at 0)."""
        return calculate_score(self.p, reads_fused, writes_fused, num_penalty)


cdef tuple _count_fused_io(tuple ops, bint read):
    """(global accesses, view penalties) of the ``Assign`` ops of one tensor's reads/writes."""
    cdef int64_t io = 0, views = 0
    for op in ops:
        arg = op.args.input if read else op.args.out
        if isinstance(arg, _VIEWS):
            io, views = io + 1, views + 1
        elif isinstance(arg, _GLOBAL):
            io += 1
    return io, views
