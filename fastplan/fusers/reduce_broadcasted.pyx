# cython: language_level=3
"""The ReduceBroadcasted fuser: reduce blocks chained with the element-wise ops that broadcast
their results back (softmax, layer norm) into one plan.

burn counterpart: ``crates/burn-cubecl-fusion/src/optim/reduce_broadcasted/fuser/{base,block,
full,full_analyzer}.rs`` (``ReduceBroadcastedFuser``, ``ReduceBlockFuser``,
``ReduceBroadcastedFullFuser``, ``FullFuserAnalyzer``) and ``optimization.rs``; notes §8.3.
Mirrors ``refimpl/planner/fusers/reduce_broadcasted.py``: same names, same order, same results; the
plain-data classes (states, kinds, infos, the optimization) are refimpl's. Split along burn's
seam: the full trace (``FullFuserAnalyzer``, ``ReduceBroadcastedFullFuser``) is
``fastplan.fusers.reduce_broadcasted_full``, imported back here.

Differs from refimpl:

* blocks keep their ops as ``EncodedOp``s (``ops`` shows the ``OperationIr``s);
* ``fuse`` runs ``_fuse_no_check`` once, on the trial, and keeps the trial (refimpl runs it
  again on ``self``: the same state, since it is deterministic); ``analyze``'s accepted clone
  is kept as the block's fuser for the same reason;
* ``is_consistent`` builds only the full trace: the per-block fallbacks cover exactly
  ``num_ops`` by construction, so refimpl's second comparison always holds;
* ``finish`` finishes the full fuser of the last consistency check (``_check``'s cache) when
  it holds exactly the fuser's blocks, with the reductions' arguments its dry run recorded;
  otherwise it builds the full fuser as refimpl does. The finishes are C calls;
* ``_set_closed`` finds the ``Closed`` and ``Abort`` statuses by identity;
* ``FullFuserAnalyzer`` differs as ``reduce_broadcasted_full`` says.
"""

cimport cython

from libc.stdint cimport int64_t

from fastplan._keys cimport FieldRead, field, field_read
from fastplan.fusers.reduce cimport ReduceFuser
from fastplan.fusers.reduce_broadcasted_full cimport FullFuserAnalyzer as _Analyzer
from fastplan.fusers.reduce_broadcasted_full cimport ReduceBroadcastedFullFuser as _FullFuser
from fastplan.fusers.reduce_broadcasted_full cimport _finish_blocks_c
from fastplan.stream.relative cimport EncodedOp, encode_cached, new_frozen
from fastplan.engine.trace_fuser cimport TraceOperationFuser
from fastplan.engine.trace_fuser_cores cimport (
    tof_begin_trial, tof_end_trial, tof_fuse, tof_score,
)
from fastplan.engine.builder_cores cimport trace_num_mb_local_inputs

from fastplan.engine.trace_fuser import properties_of
# refimpl's names for the full trace's classes (defined in reduce_broadcasted_full)
from fastplan.fusers.reduce_broadcasted_full import (
    FullFuserAnalyzer, ReduceBroadcastedFullFuser, _finish_blocks,
)

from refimpl.ir import OP_IR_STRUCTS
from refimpl.planner.engine.builder import Refusal
from refimpl.planner.engine.fuser import FuserStatus
from refimpl.planner.engine.settings import reduce_broadcasted_next_read_settings
from refimpl.planner.fusers.elemwise import ElemwiseOptimization
from refimpl.planner.fusers.reduce_broadcasted import (
    ELEMWISE_BLOCK, STARTING, ReduceBlockFusionAnalysis, ReduceBlockKind,
    ReduceBroadcastedFuseBlock, ReduceBroadcastedInfo, ReduceBroadcastedOptimization,
    ReduceBroadcastedState, ReduceBroadcastedStatus,
)

__all__ = [
    "NAME", "ReduceBroadcastedState", "ReduceBroadcastedStatus", "ReduceBlockFusionAnalysis",
    "ReduceBlockKind", "ReduceBlockFuser", "FullFuserAnalyzer", "ReduceBroadcastedFuseBlock",
    "ReduceBroadcastedInfo", "ReduceBroadcastedFullFuser", "ReduceBroadcastedOptimization",
    "ReduceBroadcastedFuser",
]

NAME = "ReduceBroadcasted"
# refimpl calls reduce_broadcasted_next_read_settings() for every block: equal values each time.
_NEXT_READ_SETTINGS = reduce_broadcasted_next_read_settings()

_ACCEPT = ReduceBlockFusionAnalysis.Accept
_REFUSE = ReduceBlockFusionAnalysis.Refuse
_NEW_BLOCK = ReduceBlockFusionAnalysis.NewBlockRequired
_INIT = ReduceBroadcastedState.Init
_CLOSED = ReduceBroadcastedState.Closed
_ABORT = ReduceBroadcastedState.Abort
_STARTING = ReduceBroadcastedState.Starting
cdef FieldRead _STATE = field_read("state")  # ReduceBroadcastedStatus.state (_keys.field)
# The status of each state without a shape (frozen values, built once with refimpl's defaults)
cdef dict _BARE_STATUS = {state: ReduceBroadcastedStatus(state) for state in ReduceBroadcastedState}
# the two a fuser closes with, found by identity (an Enum's hash is a Python call)
cdef object _CLOSED_STATUS = _BARE_STATUS[_CLOSED]
cdef object _ABORT_STATUS = _BARE_STATUS[_ABORT]


# The encoded tensors of an op are its TENSOR/TENSORS fields in SCHEMA order (a TENSORS field
# contributes all its tensors), so ``out`` sits _AFTER_OUT[struct] entries before the end (-1:
# no ``out``); the other tensors are ``op.inputs()``, in order.
def _after_out(struct):
    names = [name for name, _ in struct.SCHEMA]
    if "out" not in names:
        return -1
    return sum(kind.name == "TENSOR" for _, kind in struct.SCHEMA[names.index("out") + 1:])


_AFTER_OUT = tuple(_after_out(s) for s in OP_IR_STRUCTS)


cdef int out_index(EncodedOp op):
    cdef int after = _AFTER_OUT[op.c.struct_code]
    return op.c.n_tensors - 1 - after if after >= 0 else -1


@cython.freelist(64)  # a trial per op fed, made and dropped in bulk
cdef class ReduceBlockFuser:
    """burn ``ReduceBlockFuser``: one block, its ops, and its kind.

    Mirrors refimpl.planner.fusers.reduce_broadcasted.ReduceBlockFuser.
    """

    def __init__(self, fuser):
        self.fuser = (<ReduceFuser?>fuser).copy()
        self.encoded = []
        self.kind = ELEMWISE_BLOCK

    @property
    def kind(self):
        return self._kind

    @kind.setter
    def kind(self, kind):
        self._kind = kind
        self.elemwise = kind.is_elemwise
        self.ops_index = kind.ops_index

    cdef ReduceBlockFuser copy(self):
        cdef ReduceBlockFuser other = ReduceBlockFuser.__new__(ReduceBlockFuser)
        other.fuser = self.fuser.copy()
        other.encoded = list(self.encoded)
        other._kind, other.elemwise, other.ops_index = self._kind, self.elemwise, self.ops_index
        return other

    def clone(self):
        return self.copy()

    @property
    def ops(self):
        return [(<EncodedOp>e).source for e in self.encoded]

    cdef tuple _analyze(self, EncodedOp op, object status, ReduceFuser default, bint hold):
        """``analyze``, plus the fuser that took ``op``: a fresh one, a clone of the block's,
        or (``hold``, an element-wise op) the block's own, holding ``op`` in a trial."""
        cdef ReduceFuser trial, fresh
        if hold and self.fuser.can_hold(op):
            accepted, refused = self.fuser.try_hold(op)
            if accepted:
                return _ACCEPT, None, self.fuser
        else:
            trial = self.fuser.copy()
            trial.fuse_encoded(op)
            if trial.length() > self.fuser.length():
                return _ACCEPT, None, trial
            refused = trial.closed_reason
        if self.fuser.reduce is None:
            return _REFUSE, refused, None
        inner = self.fuser.fuser
        if inner.st.s.num_views > 0 and trace_num_mb_local_inputs(inner.st.tr.trace) > 0:
            return _REFUSE, "view in a broadcast block", None
        fresh = default.copy()
        fresh.fuse_encoded(op)
        if fresh.length() == default.length():
            return _REFUSE, fresh.closed_reason, None
        if fresh.reduce is not None:
            analysis, reason = _new_block_analysis(status, True, _reduce_shape(fresh),
                                                   fresh.reduce.axis)
        else:
            analysis, reason = _new_block_analysis(
                status, False, fresh.fuser_read_fallback.current_shape(), 0)
        return analysis, reason, fresh

    def analyze(self, op, status, default):
        """Whether this block takes ``op``, a new block must, or nobody (with the reason)."""
        analysis, reason, _ = self._analyze(encode_cached(op), status, default, False)
        return analysis, reason

    cdef ReduceBlockFuser _with_op(self, EncodedOp op, ReduceFuser fuser):
        """A new block: this one after ``fuse(op)``, given the fuser that already took ``op``
        (this block is left as it was)."""
        cdef ReduceBlockFuser other = ReduceBlockFuser.__new__(ReduceBlockFuser)
        other.fuser = fuser
        other.encoded = list(self.encoded)
        other.encoded.append(op)
        other._kind, other.elemwise, other.ops_index = self._kind, self.elemwise, self.ops_index
        if fuser.reduce is not None and other.elemwise:
            other.kind = new_frozen(ReduceBlockKind, (len(other.encoded) - 1, fuser.reduce))
        return other

    def fuse(self, op):
        cdef EncodedOp encoded = encode_cached(op)
        self.fuser.fuse_encoded(encoded)
        self.encoded.append(encoded)
        if self.fuser.reduce is not None and self.elemwise:
            self.kind = new_frozen(ReduceBlockKind, (len(self.encoded) - 1, self.fuser.reduce))

    cdef bint _ready(self):
        return self.elemwise or self.fuser.reduce is not None

    cdef int64_t _score(self) except -1:
        cdef int64_t score
        self.fuser.fuser.check(tof_score(&self.fuser.fuser.st, &score))
        return score

    def properties(self):
        properties = self.fuser.properties()
        if self.elemwise:  # element-wise blocks are always ready to run
            return properties_of(properties.score, True)
        return properties

    cdef int64_t _covered(self):
        if self.elemwise:
            return self.fuser.fuser_read_fallback.st.s.num_ops
        return self.fuser.length()

    def finish(self, full):
        """This block's own optimization (its fallback) and the ops it covers."""
        cdef int64_t covered
        full.register(self)
        optimization = self._finish(&covered)
        return optimization, covered

    cdef object _finish(self, int64_t* covered):
        """``finish`` once the block is registered in the full fuser: its own optimization,
        and the ops it covers in ``covered``."""
        cdef TraceOperationFuser fallback
        if self.elemwise:
            fallback = self.fuser.fuser_read_fallback
            covered[0] = fallback.st.s.num_ops
            return new_frozen(ElemwiseOptimization, (fallback.finish_c(), covered[0]))
        optimization = self.fuser.finish_c()
        covered[0] = self.fuser.length()
        return optimization


cdef object _reduce_shape(ReduceFuser fuser):
    """``FusedReduceInfo.shape_input_id`` of a fuser holding a reduction."""
    return fuser.reduce.op.input.shape


cdef ReduceBlockFuser _empty_block():
    """A block with no op and no fuser yet (``_with_op`` gives it both)."""
    cdef ReduceBlockFuser block = ReduceBlockFuser.__new__(ReduceBlockFuser)
    block.encoded = []
    block.kind = ELEMWISE_BLOCK
    return block


cdef ReduceBlockFuser _EMPTY_BLOCK = _empty_block()


cdef tuple _new_block_analysis(object status, bint is_reduce, object shape, object axis):
    """refimpl ``_new_block_analysis`` on the fresh fuser's info: a reduction (its input shape
    and axis) or element-wise ops (their shape)."""
    if status.state is not _INIT:
        return _REFUSE, "no reduction to broadcast"
    if is_reduce:
        same = shape == status.shape_id and axis == status.axis
        reason = "reduce shape or axis differs"
    else:
        same = shape == status.shape_id
        reason = "broadcast shape differs"
    if same:
        return _NEW_BLOCK, None
    return _REFUSE, reason


@cython.freelist(64)  # a trial per op fed, made and dropped in bulk
cdef class ReduceBroadcastedFuser:
    """burn ``ReduceBroadcastedFuser``.

    Mirrors refimpl.planner.fusers.reduce_broadcasted.ReduceBroadcastedFuser.
    """

    name = NAME

    def __init__(self, max_bindings):
        self.fuser_default = ReduceFuser(max_bindings)
        self.blocks = [ReduceBlockFuser(self.fuser_default)]
        self.num_ops = 0
        self.state = STARTING
        self.max_bindings = max_bindings
        self.closed_reason = None

    cdef ReduceBlockFuser _last(self):
        if not self.blocks:
            raise IndexError("list index out of range")
        return self.blocks[len(self.blocks) - 1]

    cdef ReduceBroadcastedFuser copy(self):
        cdef ReduceBroadcastedFuser other = ReduceBroadcastedFuser.__new__(ReduceBroadcastedFuser)
        other.fuser_default = self.fuser_default
        other.blocks = [(<ReduceBlockFuser>block).copy() for block in self.blocks]
        other.num_ops, other.state = self.num_ops, self.state
        other.max_bindings, other.closed_reason = self.max_bindings, self.closed_reason
        return other

    cdef ReduceBroadcastedFuser _shallow(self):
        """A copy sharing the blocks (``_fuse_no_check`` never changes a block in place)."""
        cdef ReduceBroadcastedFuser other = ReduceBroadcastedFuser.__new__(ReduceBroadcastedFuser)
        other.fuser_default = self.fuser_default
        other.blocks = list(self.blocks)
        other.num_ops, other.state = self.num_ops, self.state
        other.max_bindings, other.closed_reason = self.max_bindings, self.closed_reason
        return other

    def clone(self):
        return self.copy()

    def _set_closed(self, state, reason):
        self._close(state, reason)

    cdef int _close(self, object state, object reason) except -1:
        """``_set_closed`` without a Python call."""
        if state is _CLOSED:
            found = _CLOSED_STATUS
        elif state is _ABORT:
            found = _ABORT_STATUS
        else:
            found = _BARE_STATUS.get(state)
        self.state = ReduceBroadcastedStatus(state) if found is None else found
        self.closed_reason = reason
        return 0

    cdef object _full_run(self):
        """Build the full trace's fuser over every block: ``(full fuser, analyzer)``, or None
        when a block-crossing read is refused (burn panics: not consistent)."""
        cdef _FullFuser full
        cdef ReduceBlockFuser block
        cdef _Analyzer analyzer = _Analyzer(self.blocks)
        try:
            full = _FullFuser(self.max_bindings, analyzer)
            full.dry = True
            for block in self.blocks:
                full.register_c(block)
        except Refusal:
            return None
        return full, analyzer

    cdef int64_t _covered(self) except -1:
        cdef ReduceBlockFuser block
        cdef int64_t num_ops = 0
        for block in self.blocks:
            num_ops += block._covered()
        return num_ops

    cdef bint _consistent(self) except -1:
        run = self._full_run()
        if run is None:
            return False
        return (<_FullFuser>run[0]).num_ops_fused() == self._covered()

    def is_consistent(self):
        """Dry run: the full trace and the per-block fallbacks both cover every op."""
        return self._consistent()

    cdef bint _extends_cache(self, ReduceBroadcastedFuser trial, EncodedOp op) except -1:
        """Whether ``trial`` is this fuser with ``op`` appended to the last segment of its last
        block, reading nothing from an earlier block, and the cache is this fuser's: then the
        full fuser is the cached one with ``op`` fused last (same receives, same order)."""
        cdef Py_ssize_t i, k = len(self.blocks)
        cdef ReduceBlockFuser last, cached
        cdef int out
        if self._full is None or len(trial.blocks) != k or len(self._full_blocks) != k:
            return False
        for i in range(k):
            if self.blocks[i] is not self._full_blocks[i]:
                return False
            if i < k - 1 and trial.blocks[i] is not self.blocks[i]:
                return False
        last, cached = trial.blocks[k - 1], self.blocks[k - 1]
        if len(last.encoded) != self._full_last_len + 1 \
                or last.encoded[len(last.encoded) - 1] is not op \
                or last.elemwise != cached.elemwise or last.ops_index != cached.ops_index:
            return False
        out = out_index(op)
        for i in range(op.c.n_tensors):
            if i != out and op.c.tensors[i].id in self._full_single:
                return False
        return True

    cdef bint _same_blocks(self, ReduceBroadcastedFuser trial) except -1:
        """Whether ``trial`` holds exactly the cached blocks (the op was refused)."""
        cdef Py_ssize_t i
        if self._full is None or len(trial.blocks) != len(self._full_blocks):
            return False
        for i in range(len(trial.blocks)):
            if trial.blocks[i] is not self._full_blocks[i] or self.blocks[i] is not trial.blocks[i]:
                return False
        return True

    cdef object _check(self, ReduceBroadcastedFuser trial, EncodedOp op):
        """``trial._consistent()``, from this fuser's cached full fuser when ``trial`` holds the
        same blocks (the cached check stands) or only extends them (the op is then fused in a
        trial left open on the cache), else by a full run. ``(consistent, a new cache or None,
        how)``: how is 0 (a full run), 1 (extended) or 2 (unchanged)."""
        cdef TraceOperationFuser full
        if self._same_blocks(trial):  # a cache is only kept for a consistent state
            return True, None, 2
        if self._extends_cache(trial, op):
            full = self._full
            tof_begin_trial(&full.st, &self._full_trial)
            try:
                full.check(tof_fuse(&full.st, &op.c))
            except BaseException:
                tof_end_trial(&full.st, &self._full_trial, False)
                raise
            return full.st.s.num_ops + self._full_num_reduce == trial._covered(), None, 1
        run = trial._full_run()
        if run is None:
            return False, None, 0
        fuser = <_FullFuser>run[0]
        return fuser.num_ops_fused() == trial._covered(), run, 0

    cdef void _keep_cache(self, object run, int how, bint kept):
        """After ``fuse`` decided: the cache follows the kept state (or is dropped)."""
        cdef _FullFuser full
        if how == 2:
            return
        if how == 1:
            tof_end_trial(&self._full.st, &self._full_trial, kept)
            if kept:
                self._full_blocks = list(self.blocks)
                self._full_last_len += 1
            return
        if run is None or not kept:
            if kept:
                self._full = None  # the state moved without a check: no cache
            return
        full = run[0]
        self._full = full.fuser
        self._full_owner = full
        self._full_blocks = list(self.blocks)
        self._full_last_len = len((<ReduceBlockFuser>self.blocks[len(self.blocks) - 1]).encoded)
        self._full_num_reduce = full.num_reduce
        self._full_single = (<_Analyzer>run[1]).last_single

    cdef int _fuse_no_check(self, EncodedOp op) except -1:
        """refimpl ``_fuse_no_check``; the last block is replaced, never changed in place, so a
        trial may share every block with the fuser it was copied from."""
        cdef ReduceBlockFuser block = self._last()
        cdef ReduceFuser info
        analysis, reason, fuser = block._analyze(op, self.state, self.fuser_default, True)
        if fuser is block.fuser:
            self._held = block.fuser  # the op is held in a trial: fuse() keeps or undoes it
        if analysis is _REFUSE:
            self._close(_CLOSED, reason)
            return 0
        info = block.fuser  # refimpl: info = block.fuser.reduce_info()
        if analysis is _ACCEPT:
            block = block._with_op(op, fuser)
            self.blocks[len(self.blocks) - 1] = block
            info = block.fuser
        else:
            self.blocks.append(_EMPTY_BLOCK._with_op(op, fuser))
        self.num_ops += 1
        if info.reduce is not None:  # a FusedReduceInfo
            shape, axis = _reduce_shape(info), info.reduce.axis
            if axis != len(shape) - 1:
                self._close(_ABORT, "reduce axis not last")
            elif not (self.state.state is _INIT and self.state.axis == axis
                      and self.state.shape_id == shape):
                self.state = new_frozen(ReduceBroadcastedStatus, (_INIT, shape, axis))
        return 0

    cdef bint _ready(self) except -1:
        cdef ReduceBlockFuser block
        state = self.state.state
        if state is _STARTING or state is _ABORT:
            ready = False
        elif state is _CLOSED and len(self.blocks) == 1:
            ready = not (<ReduceBlockFuser>self.blocks[0]).elemwise
        else:
            ready = True
        for block in self.blocks:
            ready = block._ready() and ready
        return ready

    cdef bint closed(self) except -1:
        """Whether ``fuse`` does nothing: closed or aborted (a closed last block is not enough),
        a state only ``reset`` leaves."""
        state = field(self.state, &_STATE)
        return state is _CLOSED or state is _ABORT

    def fuse(self, operation):
        if not self.closed():
            self.fuse_encoded(encode_cached(operation))

    cdef int fuse_encoded(self, EncodedOp encoded) except -1:
        """``fuse`` on an open fuser, given the op's encoding (``encode_cached``)."""
        cdef ReduceBroadcastedFuser trial
        trial = self._shallow()
        run, how, inconsistent = None, 0, False
        try:
            trial._fuse_no_check(encoded)
            if trial._ready():
                consistent, run, how = self._check(trial, encoded)
                inconsistent = not consistent
        except BaseException:
            if trial._held is not None:
                trial._held.end_hold(False)
            raise
        if trial._held is not None:  # the trial's ops stand exactly when the trial does
            trial._held.end_hold(not inconsistent)
        if inconsistent:
            self._keep_cache(run, how, False)
            self._close(_CLOSED, "inconsistent trace")
        else:  # refimpl runs _fuse_no_check again on self: the trial is that state
            self.blocks, self.num_ops = trial.blocks, trial.num_ops
            self.state, self.closed_reason = trial.state, trial.closed_reason
            self._keep_cache(run, how, True)
        return 0

    def finish(self):
        return self.finish_c()

    cdef object finish_c(self):
        """``finish`` in C. When the cached full fuser of the last check holds exactly the
        blocks (it is then the full fuser a new run would build, op for op), its trace is
        finished as it is, without building it again."""
        cdef _FullFuser full = self._cached_full()
        cdef ReduceBlockFuser block
        cdef list fallbacks
        cdef int64_t covered, num_ops = 0
        if full is None:
            fallbacks, full, num_ops = _finish_blocks_c(self.blocks, self.max_bindings)
            info = full.finish_c()
        else:
            fallbacks = []
            for block in self.blocks:
                fallbacks.append(block._finish(&covered))
                num_ops += covered
            info = full.finish_dry(self.blocks)
        return new_frozen(ReduceBroadcastedOptimization, (tuple(fallbacks), info, num_ops))

    cdef object _cached_full(self):
        """The full fuser of the last consistency check if it holds exactly this fuser's blocks
        (the same block objects, the last with as many ops), else None."""
        cdef Py_ssize_t i, k = len(self.blocks)
        if self._full is None or self._full_owner is None or k == 0 \
                or (<_FullFuser>self._full_owner).fuser is not self._full \
                or len(self._full_blocks) != k:
            return None
        for i in range(k):
            if self.blocks[i] is not self._full_blocks[i]:
                return None
        if len((<ReduceBlockFuser>self.blocks[k - 1]).encoded) != self._full_last_len:
            return None
        return self._full_owner

    def reset(self):
        cdef ReduceBlockFuser first = self.blocks[0] if len(self.blocks) == 1 else None
        self._full = None
        self._full_owner = None
        if first is None or first.encoded or first.fuser.length() != 0 \
                or first.fuser.fuser.st.s.closed or first.fuser.fuser_read_fallback.st.s.closed:
            self.blocks = [ReduceBlockFuser(self.fuser_default)]
        # (else: a lone block that took no op is still a fresh copy of fuser_default)
        self.num_ops = 0
        self.state = STARTING
        self.closed_reason = None

    def status(self):
        if self.closed():
            return FuserStatus.Closed
        return self._last().fuser.status()

    cdef bint is_open(self) except -1:
        """``status() is Open`` in C: not closed, and the last block's fuser open (its status
        is its trace fuser's closed flag)."""
        return not self.closed() and not self._last().fuser.fuser.st.s.closed

    cdef int score_ready(self, int64_t* score) except -1:
        """``properties()`` in C: the blocks' scores summed in ``score``; 1 if ready, else 0."""
        cdef ReduceBlockFuser block
        score[0] = 0
        for block in self.blocks:
            score[0] += block._score()
        return self._ready()

    def properties(self):
        cdef int64_t score
        cdef int ready = self.score_ready(&score)
        return properties_of(score, ready)

    def len(self):
        return self.num_ops

    def estimate_bindings(self):
        """Bindings of the last block's fused trace (the full trace exists only at finish)."""
        return self._last().fuser.estimate_bindings()
