# cython: language_level=3
"""The engine shared by the ElementWise, Matmul and Reduce fusers: ``TraceOperationFuser``
(``OperationIr`` to ``FuseOp``) on top of ``TryTraceFuser`` (kernel limits).

burn counterpart: ``crates/burn-cubecl-fusion/src/engine/fuser.rs`` (``TraceOperationFuser``,
``TryTraceFuser``), with ``TryTraceFuser::fuse`` as quoted on the seed page (0.22.1: the binding
check applies to the first op too, burn #6049/#6053); notes §2.3, §3.2–§3.6, §4.
Mirrors ``refimpl/planner/engine/trace_fuser.py``: same names, same order, same results. The
``def`` twins here call the ``nogil`` cores of ``fastplan.engine.trace_fuser_cores`` (the
handlers, ``add_ops`` and the fusers' decisions on the C structs of ``trace_fuser_cores.pxd``),
which the fusers call directly too.

Differs from refimpl:

* refimpl tries an op on a clone of its ``TraceFuser`` (and ``refusal`` on a clone of the whole
  fuser); here the op runs in place inside a ``Checkpoint`` and is undone if refused, through
  the trace's undo log (``_vec.pxd``). The first op still runs in place with no undo, as in
  refimpl (a refused first op leaves its partial changes behind).
* ``add_ops`` closures are handler codes, one per operand struct, chosen from the op table at
  import by the same rules as refimpl's ``_handler_for`` (``tests/fastplan`` compares them).
* ``properties`` scores the trace from counters instead of finishing a clone
  (``builder.trace_io_counts``).
* ``TraceOperationFuser`` and the fusers built on it keep a Cython freelist of 64, and a copy
  with no output shape yet leaves its shape arena unallocated: the search copies them for
  every new block and every trial.

Invariants:

* A trace holds at most ``MAX_OPS + 1`` = 65 data ops (``>`` checked before adding).
* ``estimate_bindings() <= max_bindings`` after every accepted op, the first included.
* Once closed, a fuser ignores further ops; ``len()`` counts accepted ops, drops and views too.
"""

cimport cython

from libc.stdint cimport int32_t, int64_t
from libc.string cimport memcpy, memset

from fastplan._vec cimport mem_calloc, mem_free, vec_free, vec_init, vec_reserve
from fastplan.engine.builder cimport TraceFuser, trace_handle
from fastplan.engine.builder_alloc cimport trace_clear, trace_clone, trace_decref, trace_new
from fastplan.engine.builder_boundary cimport (
    arg_to_py, raise_error, reason_code, reason_text, settings_code, settings_flags,
    settings_object, trace_finish,
)
from fastplan.engine.builder_cores cimport (
    trace_block_local_input, trace_next_block, trace_num_ops_fused, trace_output_nhwc_layout,
)
from fastplan.engine.builder_structs cimport Trace
from fastplan.engine.scoring cimport Scoring
from fastplan.engine.trace_fuser_cores cimport (
    H_UNARY, Checkpoint, Reason, TOFScalars, TOFState, TryState, _bindings_refusal, _close,
    _data_op, _output_is_compatible, _shape, tof_block_local_input, tof_close,
    tof_estimate_bindings, tof_fuse, tof_input_unhandled, tof_output_unhandled, tof_refusal,
    tof_score,
)
from fastplan.stream.relative cimport (
    EncodedOp, EncodedTensor, OpC, encode_cached, encode_tensor, shape_tuple,
)

from fastplan.engine.builder import Refusal
from fastplan.engine.builder_boundary import FUSE_OP_CODE

from refimpl import ir
from refimpl.dtypes import DType
from refimpl.ops import OPS
from refimpl.planner.engine.fuser import FuserProperties, FuserStatus

__all__ = [
    "MAX_OPS", "REASON_MAX_OPS", "REASON_SHAPE", "REASON_UNSUPPORTED_OP",
    "REASON_UNSUPPORTED_VARIANT", "REASON_DROP_FIRST", "REASON_RESHAPE_RANK",
    "max_bindings_reason", "TryTraceFuser", "TraceOperationFuser",
]

MAX_OPS = 64  # "a good default, avoid errors with for loops over only memory bound operations"

REASON_MAX_OPS = "max_ops"
REASON_SHAPE = "shape"
REASON_UNSUPPORTED_OP = "unsupported op"
REASON_UNSUPPORTED_VARIANT = "unsupported op variant"
REASON_DROP_FIRST = "drop first"
REASON_RESHAPE_RANK = "reshape rank"  # a rank-decreasing reshape (not supported by burn)

_OPEN, _CLOSED = FuserStatus.Open, FuserStatus.Closed
_PROPERTIES = {}  # interned FuserProperties by score * 2 + ready (immutable values)


def properties_of(score, ready):
    """``FuserProperties(score=score, ready=ready)``, interned."""
    key = score * 2 + (1 if ready else 0)
    found = _PROPERTIES.get(key)
    if found is None:
        if len(_PROPERTIES) >= 1 << 16:
            _PROPERTIES.clear()
        found = _PROPERTIES[key] = FuserProperties(score=score, ready=bool(ready))
    return found


def max_bindings_reason(estimate, max_bindings):
    """The closing reason for a refused binding count: ``max_bindings est_bindings=9/7``.

    Mirrors refimpl.planner.engine.trace_fuser.max_bindings_reason.
    """
    return f"max_bindings est_bindings={estimate}/{max_bindings}"


# --- def twins -----------------------------------------------------------------------------------


cdef int _raise_for(int rc, Trace* t) except -1:
    if rc != 0:
        raise_error(rc, t.err_a, t.err_b)
    return 0


def _run(add_ops, fuser):
    try:
        add_ops(fuser)
    except Refusal as refusal:
        return refusal.reason
    return None


cdef TryTraceFuser _try_view(TryState* p, object owner):
    cdef TryTraceFuser view = TryTraceFuser.__new__(TryTraceFuser)
    view.p = p
    view.owner = owner
    return view


cdef class TryTraceFuser:
    """burn ``TryTraceFuser``: adds an op only if the kernel stays within its limits.

    Mirrors refimpl.planner.engine.trace_fuser.TryTraceFuser.
    """

    def __cinit__(self):
        self.p = &self.own
        self.own.trace = NULL
        self.owner = None

    def __init__(self, max_bindings, settings):
        self.own.trace = trace_new(settings_code(settings))
        if self.own.trace == NULL:
            raise MemoryError()
        self.own.max_bindings = max_bindings
        self.own.max_ops = MAX_OPS
        self.own.added_ops = 0

    def __dealloc__(self):
        trace_decref(self.own.trace)

    def clone(self):
        cdef TryTraceFuser other = TryTraceFuser.__new__(TryTraceFuser)
        other.own = self.p[0]
        other.own.trace = trace_clone(self.p.trace)
        if other.own.trace == NULL:
            raise MemoryError()
        return other

    @property
    def fuser(self):
        return trace_handle(self.p.trace)

    @property
    def max_bindings(self):
        return self.p.max_bindings

    @property
    def max_ops(self):
        return self.p.max_ops

    @max_ops.setter
    def max_ops(self, value):
        self.p.max_ops = value

    @property
    def added_ops(self):
        return bool(self.p.added_ops)

    def _bindings_refusal(self, fuser):
        estimate = fuser.estimate_bindings()
        if estimate > self.p.max_bindings:
            return max_bindings_reason(estimate, self.p.max_bindings)
        return None

    def fuse(self, add_ops):
        """Run ``add_ops`` and keep its effect if the limits hold; the refusal reason, or
        ``None`` when the op was added. The first op runs in place (no clone)."""
        cdef Trace* t = self.p.trace
        cdef TraceFuser cloned
        if trace_num_ops_fused(t) > self.p.max_ops:
            return REASON_MAX_OPS
        if not self.p.added_ops:
            self.p.added_ops = 1
            fuser = trace_handle(t)
            return _run(add_ops, fuser) or self._bindings_refusal(fuser)
        cloned = TraceFuser.__new__(TraceFuser)
        cloned.t = trace_clone(t)
        if cloned.t == NULL:
            raise MemoryError()
        reason = _run(add_ops, cloned) or self._bindings_refusal(cloned)
        if reason is None:
            cloned.t.refs += 1
            trace_decref(self.p.trace)
            self.p.trace = cloned.t
        return reason

    def finish(self, shape_ref):
        cdef EncodedTensor shape = _shape_holder(shape_ref)
        return trace_finish(self.p.trace, shape.c.shape, shape.c.rank)


cdef EncodedTensor _shape_holder(object shape):
    """A relative shape as C values (through the TensorIr encoder, which checks it)."""
    return encode_tensor(ir.TensorIr(0, tuple(shape), DType.F32, ir.TensorStatus.NotInit))


@cython.freelist(64)  # one per fuser copy: thousands per search
cdef class TraceOperationFuser:
    """burn ``TraceOperationFuser``: translates each accepted ``OperationIr`` into ``FuseOp``s
    and tracks the output shape, the score inputs and the fuser status.

    Mirrors refimpl.planner.engine.trace_fuser.TraceOperationFuser.
    """

    def __cinit__(self):
        memset(&self.st, 0, sizeof(TOFState))
        vec_init(&self.st.shapes, sizeof(int64_t))

    def __init__(self, max_bindings, settings):
        self.set_settings(settings_code(settings))
        self.st.s.max_bindings = max_bindings
        self.st.tr.max_bindings = max_bindings
        self.st.tr.max_ops = MAX_OPS
        self.st.tr.trace = trace_new(self.st.s.settings)
        if self.st.tr.trace == NULL:
            raise MemoryError()

    def __dealloc__(self):
        trace_decref(self.st.tr.trace)
        vec_free(&self.st.shapes)

    cdef int set_settings(self, int32_t code) except -1:
        cdef int flags = settings_flags(code)
        self.st.s.settings = code
        self.st.s.broadcast = flags & 1
        self.st.s.output_shape_updates = (flags >> 1) & 1
        return 0

    cdef int check(self, int rc) except -1:
        return _raise_for(rc, self.st.tr.trace)

    cdef TraceOperationFuser copy(self):
        cdef TraceOperationFuser other = TraceOperationFuser.__new__(TraceOperationFuser)
        other.st.s = self.st.s
        other.st.tr = self.st.tr
        other.st.tr.trace = trace_clone(self.st.tr.trace)
        if other.st.tr.trace == NULL:
            raise MemoryError()
        other.st.s.shape_off = 0
        if self.st.s.shape_len == 0:  # no shape yet: an empty arena, as a new fuser's
            return other
        if vec_reserve(&other.st.shapes, self.st.s.shape_len + 1) < 0:
            raise MemoryError()
        memcpy(other.st.shapes.data, _shape(&self.st), self.st.s.shape_len * sizeof(int64_t))
        other.st.shapes.len = self.st.s.shape_len
        return other

    cdef object current_shape(self):
        return shape_tuple(_shape(&self.st), self.st.s.shape_len)

    cdef int next_block_c(self, const TensorC* arguments, Py_ssize_t n, int32_t code,
                          bint global_, Arg* out) except -1:
        """``next_block`` on C tensors (settings by code): 0, or the refusal of a
        ``block_local_input``."""
        cdef Trace* t = self.st.tr.trace
        cdef int64_t block_pos = t.previous.len
        cdef Py_ssize_t i
        cdef int rc
        rc = trace_next_block(t, _shape(&self.st), self.st.s.shape_len, code)
        self.check(rc)
        self.st.s.shape_len = 0
        self.set_settings(code)
        self.st.s.closed = 0
        for i in range(n):
            rc = trace_block_local_input(t, &arguments[i], block_pos, global_, &out[i])
            if rc > 0:
                return rc
            self.check(rc)
        return 0

    # --- attributes ----------------------------------------------------------------------------

    @property
    def fuser(self):
        return _try_view(&self.st.tr, self)

    @property
    def scoring(self):
        cdef Scoring view = Scoring.__new__(Scoring)
        view.p = &self.st.s.scoring
        view.owner = self
        return view

    @property
    def settings(self):
        return settings_object(self.st.s.settings)

    @property
    def current_output_shape(self):
        return self.current_shape()

    @property
    def num_ops(self):
        return self.st.s.num_ops

    @property
    def num_views(self):
        return self.st.s.num_views

    @property
    def max_bindings(self):
        return self.st.s.max_bindings

    @property
    def closed_reason(self):
        return reason_text(self.st.s.reason.code, self.st.s.reason.estimate,
                           self.st.s.reason.max_bindings)

    @property
    def closed_log(self):
        cdef TOFScalars* s = &self.st.s
        if not s.has_log:
            return None
        reason = reason_text(s.log_reason.code, s.log_reason.estimate, s.log_reason.max_bindings)
        return (f"[fuser] closed on {OPS[s.log_op].name} ({reason}); had {s.log_before} "
                f"ops, est_bindings={s.log_estimate}/{s.max_bindings}")

    def clone(self):
        return self.copy()

    # --- OperationFuser ----------------------------------------------------------------------

    def fuse(self, op):
        """Accept ``op`` or close (burn ``OperationFuser::fuse``)."""
        cdef EncodedOp encoded
        if self.st.s.closed:
            return
        encoded = encode_cached(op)
        self.check(tof_fuse(&self.st, &encoded.c))

    def finish(self):
        return self.finish_c()

    cdef object finish_c(self):
        """``finish`` without a Python call (the fusers' finishes call it)."""
        return trace_finish(self.st.tr.trace, _shape(&self.st), self.st.s.shape_len)

    def len(self):
        return self.st.s.num_ops

    def reset(self):
        cdef Trace* fresh
        if self.st.tr.trace.refs == 1:  # nobody else holds it: reuse its buffers
            self.check(trace_clear(self.st.tr.trace, self.st.s.settings))
        else:  # a TraceFuser shows it: it keeps the old trace, as refimpl's object would
            fresh = trace_new(self.st.s.settings)
            if fresh == NULL:
                raise MemoryError()
            trace_decref(self.st.tr.trace)
            self.st.tr.trace = fresh
        self.st.tr.max_ops = MAX_OPS
        self.st.tr.added_ops = 0
        self.st.s.num_ops = self.st.s.num_views = 0
        memset(&self.st.s.scoring, 0, sizeof(self.st.s.scoring))
        self.st.s.closed = 0
        self.st.s.shape_len = self.st.s.shape_off = 0
        self.st.shapes.len = 0
        memset(&self.st.s.reason, 0, sizeof(Reason))
        self.st.s.has_log = 0

    def status(self):
        return _CLOSED if self.st.s.closed else _OPEN

    cdef int score_ready(self, int64_t* score) except -1:
        """``properties()`` in C: its score in ``score``; 1 if ready, else 0."""
        self.check(tof_score(&self.st, score))
        return self.st.s.num_ops > 0

    def properties(self):
        cdef int64_t score
        cdef int ready = self.score_ready(&score)
        return properties_of(score, ready)

    # --- used by the fusers built on this one --------------------------------------------------

    def close(self, reason, op=None, num_ops_before=0):
        """Close, recording why (and burn's log line when an op caused it)."""
        cdef Reason r
        cdef EncodedOp encoded
        memset(&r, 0, sizeof(Reason))
        r.code = reason_code(reason)
        if op is None:
            tof_close(&self.st, r)
        else:
            encoded = encode_cached(op)
            _close(&self.st, r, encoded.c.code, num_ops_before, True)

    def can_fuse(self, op):
        """Whether ``op`` would be accepted (tried on a clone)."""
        return self.refusal(op) is None

    def refusal(self, op):
        """Why ``op`` would be refused (tried on a clone), or ``None`` if it would be accepted."""
        cdef EncodedOp encoded = encode_cached(op)
        cdef Reason r
        self.check(tof_refusal(&self.st, &encoded.c, &r))
        return reason_text(r.code, r.estimate, r.max_bindings)

    def estimate_bindings(self):
        cdef int64_t estimate
        self.check(tof_estimate_bindings(&self.st, &estimate))
        return estimate

    def input_unhandled(self, tensor):
        cdef EncodedTensor t = encode_tensor(tensor)
        cdef Arg out
        self.check(tof_input_unhandled(&self.st, &t.c, &out))
        return arg_to_py(&out)

    def output_unhandled(self, tensor):
        """Declare an output the runner writes; the largest such shape becomes the reference."""
        cdef EncodedTensor t = encode_tensor(tensor)
        cdef Arg out
        self.check(tof_output_unhandled(&self.st, &t.c, &out))
        return arg_to_py(&out)

    def next_block(self, arguments, settings, global_):
        """Close the current block and open one with ``settings``; ``arguments`` flow from the
        closed block into the new one."""
        cdef list encoded = [encode_tensor(t) for t in arguments]
        cdef Py_ssize_t i, n = len(encoded)
        cdef TensorC* tensors = <TensorC*>mem_calloc(n + 1, sizeof(TensorC))
        cdef Arg* out = <Arg*>mem_calloc(n + 1, sizeof(Arg))
        cdef int rc
        try:
            if tensors == NULL or out == NULL:
                raise MemoryError()
            for i in range(n):
                tensors[i] = (<EncodedTensor>encoded[i]).c
            rc = self.next_block_c(tensors, n, settings_code(settings), global_, out)
            if rc > 0:
                raise Refusal(reason_text(rc, 0, 0))
            return [arg_to_py(&out[i]) for i in range(n)]
        finally:
            mem_free(tensors)
            mem_free(out)

    def block_local_input(self, tensor, block_pos, global_):
        cdef EncodedTensor t = encode_tensor(tensor)
        cdef Arg out
        self.check(tof_block_local_input(&self.st, &t.c, block_pos, global_, &out))

    def output_nhwc_layout(self, tensor, permutation):
        cdef EncodedTensor perm = _shape_holder(permutation)
        self.check(trace_output_nhwc_layout(self.st.tr.trace, tensor.id, perm.c.shape,
                                            perm.c.rank))

    # --- dispatch ------------------------------------------------------------------------------

    def output_is_compatible(self, out):
        """Whether ``out`` fits the block's reference shape (relative ids, 0 == size 1),
        growing the reference along size-1 dims when the settings allow (notes §3.4)."""
        cdef EncodedTensor t = encode_tensor(out)
        cdef bint ok
        self.check(_output_is_compatible(&self.st, &t.c, &ok))
        return ok

    def fuse_unary_op(self, input, out, name):
        cdef EncodedTensor i = encode_tensor(input)
        cdef EncodedTensor o = encode_tensor(out)
        cdef TensorC tensors[2]
        cdef OpC op
        cdef Reason r
        memset(&op, 0, sizeof(OpC))
        memset(&r, 0, sizeof(Reason))
        tensors[0] = i.c
        tensors[1] = o.c
        op.tensors = tensors
        op.n_tensors = 2
        self.check(_data_op(&self.st, &op, &tensors[1], H_UNARY, FUSE_OP_CODE[name], &r))
        return reason_text(r.code, r.estimate, r.max_bindings)
