# cython: language_level=3
"""The ``nogil`` cores of the fusers' engine: an op's ``FuseOp``s into a trace, the kernel
limits (``TryTraceFuser``) and ``TraceOperationFuser``'s decisions, on C structs.

burn counterpart: ``crates/burn-cubecl-fusion/src/engine/fuser.rs`` (``TraceOperationFuser``,
``TryTraceFuser``); notes §2.3, §3.2–§3.6, §4.
Part of fastplan's twin of ``refimpl/planner/engine/trace_fuser.py``, split along its seam: the
``def`` twins of refimpl's classes live in ``fastplan.engine.trace_fuser`` and call the cores
here, as the fusers (``fastplan.fusers``) do. The structs are ``trace_fuser_cores.pxd``'s. An op
runs in place inside a ``Checkpoint`` and is undone if refused (refimpl: on a clone);
``add_ops`` closures are handler codes, one per operand struct, chosen from the op table at
import by the same rules as refimpl's ``_handler_for``.
"""

cimport cython

from libc.stdint cimport int32_t, int64_t, uint8_t
from libc.string cimport memcpy, memset

from fastplan._vec cimport Log, log_rollback, mem_calloc, mem_free, vec_reserve
from fastplan.engine.builder_cores cimport (
    trace_block_local_input, trace_estimate_bindings, trace_fuse_dropped, trace_fuse_operation,
    trace_input, trace_input_indexed, trace_input_reshaped, trace_input_swap_dims,
    trace_input_unhandled, trace_io_counts, trace_num_ops_fused, trace_output,
    trace_output_unhandled, trace_scalar,
)
from fastplan.engine.builder_structs cimport (
    ARG_LITERAL, E_NOMEM, LAYOUT_UNKNOWN, R_DROP_FIRST, R_MAX_BINDINGS, R_MAX_OPS, R_NONE,
    R_RESHAPE_RANK, R_SHAPE, R_UNSUPPORTED_OP, R_UNSUPPORTED_VARIANT, FOp,
)
from fastplan.engine.scoring cimport Scoring, calculate_score

from fastplan.engine.builder_boundary import FUSE_OP_CODE

from refimpl import ir
from refimpl.ops import FUSED_CATEGORIES, OPS, OpKind


# --- handlers: which add_ops an op runs, from the op table -------------------------------------


# Handler per operand struct, for ops with a ``fuse`` name (refimpl ``_DATA_HANDLERS``), and per
# view variant (refimpl ``_VIEW_HANDLERS``). Tensor positions below follow each struct's SCHEMA.
_DATA_HANDLERS = {
    ir.UnaryOpIr: H_UNARY, ir.BinaryOpIr: H_BINARY, ir.ScalarOpIr: H_SCALAR,
    ir.CreationOpIr: H_CREATION, ir.FullOpIr: H_FULL, ir.ClampOpIr: H_CLAMP,
    ir.GatherOpIr: H_GATHER, ir.SelectOpIr: H_SELECT, ir.CatOpIr: H_CAT,
    ir.MaskWhereOpIr: H_MASK_WHERE, ir.MaskFillOpIr: H_MASK_FILL,
}
_VIEW_HANDLERS = {"SwapDims": H_SWAP_DIMS, "Reshape": H_RESHAPE}
_LITERALS = {"Ones": 1, "Zeros": 0}
HANDLER_NAMES = ("drop", "unsupported op variant", "unsupported op", "_unary", "_binary",
                 "_scalar", "_creation", "_full", "_clamp", "_indexed", "_indexed", "_cat",
                 "_mask_where", "_mask_fill", "_swap_dims", "_reshape")


def handler_code(op):
    """The handler refimpl's ``TraceOperationFuser._fuse_op`` picks for ``op``, as a code."""
    if op.kind is OpKind.DROP:
        return H_DROP
    if op.category not in FUSED_CATEGORIES:
        return H_VARIANT
    if op.kind is OpKind.VIEW:
        return _VIEW_HANDLERS.get(op.variant, H_UNSUPPORTED)
    if op.fuse is None:
        return H_UNSUPPORTED
    return _DATA_HANDLERS.get(op.struct, H_UNSUPPORTED)


cdef uint8_t _HANDLER[MAX_CODES]
cdef uint8_t _FUSE_NAME[MAX_CODES]
cdef int64_t _LITERAL[MAX_CODES]
assert len(OPS) <= MAX_CODES
for _op in OPS:
    _HANDLER[_op.code] = handler_code(_op)
    _FUSE_NAME[_op.code] = FUSE_OP_CODE[_op.fuse] if _op.fuse is not None else 255
    _LITERAL[_op.code] = _LITERALS.get(_op.variant, 0)
cdef uint8_t _ASSIGN = FUSE_OP_CODE["Assign"]
cdef uint8_t _CLAMP = FUSE_OP_CODE["Clamp"]
cdef uint8_t _COND = FUSE_OP_CODE["ConditionalAssign"]
cdef uint8_t _CAT = FUSE_OP_CODE["Cat"]


# --- add_ops: the FuseOps of one op, into a trace ----------------------------------------------


cdef inline int _fuse_args(Trace* t, uint8_t name, uint8_t nargs, const Arg* args,
                           int64_t dim) noexcept nogil:
    cdef FOp f
    memset(&f, 0, sizeof(FOp))
    f.name = name
    f.nargs = nargs
    f.dim = dim
    memcpy(f.args, args, nargs * sizeof(Arg))
    return trace_fuse_operation(t, &f, NULL, 0)


cdef int _add_cat(Trace* t, const OpC* op) noexcept nogil:
    cdef const TensorC* ts = op.tensors
    cdef Py_ssize_t i, n = op.n_tensors - 1
    cdef Arg* sources = <Arg*>mem_calloc(n + 1, sizeof(Arg))
    cdef FOp f
    cdef int rc = 0
    if sources == NULL:
        return E_NOMEM
    for i in range(n):
        rc = trace_input_indexed(t, &ts[i], &sources[i])
        if rc != 0:
            break
    memset(&f, 0, sizeof(FOp))
    if rc == 0:
        rc = trace_output(t, &ts[n], &f.args[0])
    if rc == 0:
        f.name = _CAT
        f.nargs = 1
        f.dim = op.ints[0]
        rc = trace_fuse_operation(t, &f, sources, n)
    mem_free(sources)
    return rc


cdef int _add_ops(Trace* t, const OpC* op, int handler, uint8_t name) noexcept nogil:
    """The ``add`` closure of refimpl's handler: reads, scalars, output, FuseOp, in its order."""
    cdef const TensorC* ts = op.tensors
    cdef Arg a[4]
    cdef int rc
    if handler == H_UNARY:  # [input, out]
        rc = trace_input(t, &ts[0], &a[0])
        if rc == 0:
            rc = trace_output(t, &ts[1], &a[1])
        if rc != 0:
            return rc
        return _fuse_args(t, name, 2, a, 0)
    if handler == H_BINARY:  # [lhs, rhs, out]
        rc = trace_input(t, &ts[0], &a[0])
        if rc == 0:
            rc = trace_input(t, &ts[1], &a[1])
        if rc == 0:
            rc = trace_output(t, &ts[2], &a[2])
        if rc != 0:
            return rc
        return _fuse_args(t, name, 3, a, 0)
    if handler == H_SCALAR:  # [lhs, out], scalar rhs in the lhs precision
        rc = trace_input(t, &ts[0], &a[0])
        if rc == 0:
            rc = trace_scalar(t, op.scalars[0], op.scalar_ok[0], ts[0].ty, &a[1])
        if rc == 0:
            rc = trace_output(t, &ts[1], &a[2])
        if rc != 0:
            return rc
        return _fuse_args(t, name, 3, a, 0)
    if handler == H_CREATION:  # [out]: Assign of a literal
        a[0].kind = ARG_LITERAL
        a[0].ty = ts[0].ty
        a[0].layout = LAYOUT_UNKNOWN
        a[0].broadcasted = 0
        a[0].a = _LITERAL[op.code]
        a[0].b = a[0].c = 0
        rc = trace_output(t, &ts[0], &a[1])
        if rc != 0:
            return rc
        return _fuse_args(t, _ASSIGN, 2, a, 0)
    if handler == H_FULL:  # [out], scalar value
        rc = trace_scalar(t, op.scalars[0], op.scalar_ok[0], ts[0].ty, &a[0])
        if rc == 0:
            rc = trace_output(t, &ts[0], &a[1])
        if rc != 0:
            return rc
        return _fuse_args(t, _ASSIGN, 2, a, 0)
    if handler == H_CLAMP:  # [tensor, out], scalars min, max
        rc = trace_input(t, &ts[0], &a[0])
        if rc == 0:
            rc = trace_scalar(t, op.scalars[0], op.scalar_ok[0], ts[1].ty, &a[1])
        if rc == 0:
            rc = trace_scalar(t, op.scalars[1], op.scalar_ok[1], ts[1].ty, &a[2])
        if rc == 0:
            rc = trace_output(t, &ts[1], &a[3])
        if rc != 0:
            return rc
        return _fuse_args(t, _CLAMP, 4, a, 0)
    if handler == H_GATHER or handler == H_SELECT:  # [tensor, indices, out], dim
        rc = trace_input_indexed(t, &ts[0], &a[0])
        if rc == 0:
            rc = trace_input_indexed(t, &ts[1], &a[1])
        if rc == 0:
            rc = trace_output(t, &ts[2], &a[2])
        if rc != 0:
            return rc
        return _fuse_args(t, name, 3, a, op.ints[0])
    if handler == H_CAT:  # [t0, ..., out], dim
        return _add_cat(t, op)
    if handler == H_MASK_WHERE:  # [tensor, mask, value, out]: cond ? value : tensor
        rc = trace_input(t, &ts[1], &a[0])
        if rc == 0:
            rc = trace_input(t, &ts[0], &a[2])
        if rc == 0:
            rc = trace_input(t, &ts[2], &a[1])
        if rc == 0:
            rc = trace_output(t, &ts[3], &a[3])
        if rc != 0:
            return rc
        return _fuse_args(t, _COND, 4, a, 0)
    if handler == H_MASK_FILL:  # [tensor, mask, out], scalar value: cond ? value : tensor
        rc = trace_input(t, &ts[1], &a[0])
        if rc == 0:
            rc = trace_scalar(t, op.scalars[0], op.scalar_ok[0], ts[2].ty, &a[1])
        if rc == 0:
            rc = trace_input(t, &ts[0], &a[2])
        if rc == 0:
            rc = trace_output(t, &ts[2], &a[3])
        if rc != 0:
            return rc
        return _fuse_args(t, _COND, 4, a, 0)
    if handler == H_SWAP_DIMS:  # [input, out], dim1, dim2
        return trace_input_swap_dims(t, &ts[0], &ts[1], op.ints[0], op.ints[1], &a[0])
    # H_RESHAPE: [input, out]
    return trace_input_reshaped(t, &ts[0], &ts[1], &a[0])


# --- TryTraceFuser core --------------------------------------------------------------------------


cdef inline void _log_end(Log* log) noexcept nogil:
    log.depth -= 1
    if log.depth == 0:
        log.recs.len = 0


cdef int _bindings_refusal(TryState* tr, Reason* reason) noexcept nogil:
    cdef int64_t estimate
    cdef int rc = trace_estimate_bindings(tr.trace, &estimate)
    if rc == 0 and estimate > tr.max_bindings:
        reason.code = R_MAX_BINDINGS
        reason.estimate = estimate
        reason.max_bindings = tr.max_bindings
    return rc


cdef int _try_fuse(TryState* tr, const OpC* op, int handler, uint8_t name,
                   Reason* reason) noexcept nogil:
    """TryTraceFuser.fuse: add the op's FuseOps if the limits hold, else refuse (``reason``).
    The first op runs in place; later ones run in a trial undone when refused."""
    cdef Trace* t = tr.trace
    cdef Log* log = &t.log
    cdef Py_ssize_t pos
    cdef int rc
    if trace_num_ops_fused(t) > tr.max_ops:
        reason.code = R_MAX_OPS
        return 0
    if not tr.added_ops:
        tr.added_ops = 1
        rc = _add_ops(t, op, handler, name)
        if rc > 0:
            reason.code = rc
            return 0
        if rc < 0:
            return rc
        return _bindings_refusal(tr, reason)
    pos = log.recs.len
    log.depth += 1
    rc = _add_ops(t, op, handler, name)
    if rc == 0:
        rc = _bindings_refusal(tr, reason)
    if rc != 0 or reason.code != R_NONE:
        log_rollback(log, pos)
    _log_end(log)
    if rc > 0:
        reason.code = rc
        return 0
    return rc


# --- TraceOperationFuser core --------------------------------------------------------------------



cdef int _set_shape(TOFState* f, const int64_t* shape, Py_ssize_t rank) noexcept nogil:
    """``current_output_shape = shape`` (appended to the ``shapes`` arena)."""
    cdef Py_ssize_t i, off = f.shapes.len
    if tof_shape_equals(f, shape, rank):
        return 0
    if vec_reserve(&f.shapes, off + rank) < 0:
        return E_NOMEM
    for i in range(rank):
        (<int64_t*>f.shapes.data)[off + i] = shape[i]
    f.shapes.len = off + rank
    f.s.shape_off = off
    f.s.shape_len = rank
    return 0


cdef bint tof_shape_equals(const TOFState* f, const int64_t* shape,
                           Py_ssize_t rank) noexcept nogil:
    cdef const int64_t* current = _shape(f)
    cdef Py_ssize_t i
    if rank != f.s.shape_len:
        return False
    for i in range(rank):
        if current[i] != shape[i]:
            return False
    return True


cdef int _output_is_compatible(TOFState* f, const TensorC* out, bint* ok) noexcept nogil:
    """Whether ``out`` fits the block's reference shape (relative ids, 0 == size 1),
    growing the reference along size-1 dims when the settings allow (notes §3.4)."""
    cdef const int64_t* current = _shape(f)
    cdef Py_ssize_t i
    cdef int64_t curr, new
    cdef bint broadcast = f.s.broadcast, should_update = False, kept_differs = False
    ok[0] = True
    if f.s.shape_len == 0:
        return _set_shape(f, out.shape, out.rank)
    if f.s.shape_len != out.rank:
        ok[0] = False
        return 0
    for i in range(out.rank):
        curr = current[i]
        new = out.shape[i]
        if curr == new or (broadcast and new == 0):
            kept_differs = kept_differs or curr != new  # updated[i] stays curr
            continue
        if not broadcast:
            ok[0] = False
            return 0
        if curr == 0 and f.s.output_shape_updates:
            should_update = True  # updated[i] = new
            continue
        ok[0] = False
        return 0
    if should_update:
        if kept_differs:  # tuple(updated) != out.shape
            ok[0] = False
            return 0
        return _set_shape(f, out.shape, out.rank)
    return 0


cdef int _data_op(TOFState* f, const OpC* op, const TensorC* out, int handler, uint8_t name,
                  Reason* reason) noexcept nogil:
    cdef bint ok
    cdef int rc = _output_is_compatible(f, out, &ok)
    if rc != 0:
        return rc
    if not ok:
        reason.code = R_SHAPE
        return 0
    return _try_fuse(&f.tr, op, handler, name, reason)


cdef int _view_op(TOFState* f, const OpC* op, const TensorC* out, int handler,
                  Reason* reason) noexcept nogil:
    cdef int rc = _data_op(f, op, out, handler, 255, reason)
    if rc == 0 and reason.code == R_NONE:
        f.s.num_views += 1
    return rc


cdef bint _same_shape(const TensorC* a, const TensorC* b) noexcept nogil:
    cdef Py_ssize_t i
    if a.rank != b.rank:
        return False
    for i in range(a.rank):
        if a.shape[i] != b.shape[i]:
            return False
    return True


cdef int _fuse_op(TOFState* f, const OpC* op, Reason* reason) noexcept nogil:
    """Dispatch (refimpl ``_fuse_op``): a refusal goes to ``reason``."""
    cdef int handler = _HANDLER[op.code]
    cdef const TensorC* ts = op.tensors
    if handler == H_DROP:
        if f.s.num_ops == 0:
            reason.code = R_DROP_FIRST
            return 0
        return trace_fuse_dropped(f.tr.trace, &ts[0])
    if handler == H_VARIANT:
        reason.code = R_UNSUPPORTED_VARIANT
        return 0
    if handler == H_UNSUPPORTED:
        reason.code = R_UNSUPPORTED_OP
        return 0
    if handler == H_SWAP_DIMS:
        return _view_op(f, op, &ts[1], handler, reason)
    if handler == H_RESHAPE:
        if _same_shape(&ts[0], &ts[1]):
            return _data_op(f, op, &ts[1], H_UNARY, _ASSIGN, reason)
        if ts[0].rank > ts[1].rank:
            reason.code = R_RESHAPE_RANK
            return 0
        return _view_op(f, op, &ts[1], handler, reason)
    # the output is the last tensor of every data struct but FullOpIr / CreationOpIr ([out])
    return _data_op(f, op, &ts[op.n_tensors - 1], handler, _FUSE_NAME[op.code], reason)


cdef void _close(TOFState* f, Reason reason, int32_t op_code, int64_t num_ops_before,
                 bint with_log) noexcept nogil:
    cdef int64_t estimate = 0
    f.s.closed = 1
    f.s.reason = reason
    if with_log:
        trace_estimate_bindings(f.tr.trace, &estimate)
        f.s.has_log = 1
        f.s.log_op = op_code
        f.s.log_reason = reason
        f.s.log_before = num_ops_before
        f.s.log_estimate = estimate


cdef void tof_close(TOFState* f, Reason reason) noexcept nogil:
    """Close without an op (no log line), as the fusers built on this one do."""
    _close(f, reason, -1, 0, False)


cdef int tof_fuse(TOFState* f, const OpC* op) noexcept nogil:
    """Accept ``op`` or close (burn ``OperationFuser::fuse``)."""
    cdef Reason reason
    cdef int64_t num_ops_before = f.s.num_ops
    cdef int rc
    if f.s.closed:
        return 0
    memset(&reason, 0, sizeof(Reason))
    rc = _fuse_op(f, op, &reason)
    if rc != 0:
        return rc
    if reason.code != R_NONE:
        _close(f, reason, op.code, num_ops_before, True)
        return 0
    f.s.closed = 0
    f.s.scoring.num_writes += op.n_outputs
    f.s.scoring.num_reads += op.n_inputs
    f.s.scoring.num_ops += 1
    f.s.num_ops += 1
    return 0


cdef inline void _begin(TOFState* f, Checkpoint* cp) noexcept nogil:
    cp.s = f.s
    cp.added_ops = f.tr.added_ops
    cp.shapes_len = f.shapes.len
    cp.log_pos = f.tr.trace.log.recs.len
    f.tr.trace.log.depth += 1


cdef inline void _rollback(TOFState* f, const Checkpoint* cp) noexcept nogil:
    log_rollback(&f.tr.trace.log, cp.log_pos)
    _log_end(&f.tr.trace.log)
    f.s = cp.s
    f.tr.added_ops = cp.added_ops
    f.shapes.len = cp.shapes_len


cdef inline void _commit(TOFState* f) noexcept nogil:
    _log_end(&f.tr.trace.log)


cdef int tof_refusal(TOFState* f, const OpC* op, Reason* reason) noexcept nogil:
    """Why ``op`` would be refused, or code 0 if it would be accepted (a trial, undone)."""
    cdef Checkpoint cp
    cdef int64_t before = f.s.num_ops
    cdef int rc
    _begin(f, &cp)
    rc = tof_fuse(f, op)
    memset(reason, 0, sizeof(Reason))
    if rc == 0 and f.s.num_ops <= before:
        reason[0] = f.s.reason
    _rollback(f, &cp)
    return rc


cdef int tof_fuse_both(TOFState* a, TOFState* b, const OpC* op, Reason* reason) noexcept nogil:
    """``reason = a.refusal(op) or b.refusal(op)``; both fuse ``op`` if it is None, else both
    close with it. (refimpl tries each on a clone and fuses again; one trial each suffices.)"""
    cdef Checkpoint ca, cb
    cdef int64_t before_a = a.s.num_ops, before_b = b.s.num_ops
    cdef int rc
    memset(reason, 0, sizeof(Reason))
    _begin(a, &ca)
    rc = tof_fuse(a, op)
    if rc != 0:
        _rollback(a, &ca)
        return rc
    if a.s.num_ops <= before_a:
        reason[0] = a.s.reason
        _rollback(a, &ca)
    else:
        _begin(b, &cb)
        rc = tof_fuse(b, op)
        if rc != 0 or b.s.num_ops <= before_b:
            reason[0] = b.s.reason
            _rollback(b, &cb)
            _rollback(a, &ca)
            if rc != 0:
                return rc
        else:
            _commit(b)
            _commit(a)
            return 0
    tof_close(a, reason[0])
    tof_close(b, reason[0])
    return 0


cdef int tof_try_both(TOFState* a, TOFState* b, const OpC* op, Checkpoint* ca, Checkpoint* cb,
                      Reason* reason, bint* accepted) noexcept nogil:
    """``tof_fuse_both`` as trials left open (``tof_end_trial`` keeps or undoes them): if
    either refuses, both are undone now, nothing is closed, and ``reason`` is the reason
    ``tof_fuse_both`` would close them with."""
    cdef int64_t before_a = a.s.num_ops, before_b = b.s.num_ops
    cdef int rc
    memset(reason, 0, sizeof(Reason))
    accepted[0] = False
    _begin(a, ca)
    rc = tof_fuse(a, op)
    if rc != 0 or a.s.num_ops <= before_a:
        reason[0] = a.s.reason
        _rollback(a, ca)
        return rc
    _begin(b, cb)
    rc = tof_fuse(b, op)
    if rc != 0 or b.s.num_ops <= before_b:
        reason[0] = b.s.reason
        _rollback(b, cb)
        _rollback(a, ca)
        return rc
    accepted[0] = True
    return 0


cdef void tof_begin_trial(TOFState* f, Checkpoint* cp) noexcept nogil:
    """Open a trial on ``f``: until ``tof_end_trial``, every change can be undone."""
    _begin(f, cp)


cdef void tof_end_trial(TOFState* f, Checkpoint* cp, bint keep) noexcept nogil:
    """Keep (commit) or undo a trial left open by ``tof_try_both``."""
    if keep:
        _commit(f)
    else:
        _rollback(f, cp)


cdef int tof_score(TOFState* f, int64_t* score) noexcept nogil:
    """``Scoring.evaluate`` of the trace ``finish`` would give, from counters."""
    cdef int64_t reads, writes, penalty
    cdef int rc = trace_io_counts(f.tr.trace, &reads, &writes, &penalty)
    score[0] = calculate_score(&f.s.scoring, reads, writes, penalty)
    return rc


cdef int tof_estimate_bindings(TOFState* f, int64_t* estimate) noexcept nogil:
    return trace_estimate_bindings(f.tr.trace, estimate)


cdef int tof_input_unhandled(TOFState* f, const TensorC* tensor, Arg* out) noexcept nogil:
    return trace_input_unhandled(f.tr.trace, tensor, out)


cdef int _shape_sum_less(const int64_t* a, Py_ssize_t na, const int64_t* b,
                         Py_ssize_t nb) noexcept nogil:
    """``sum(a) < sum(b)`` exactly (Python ints do not overflow; split each value in halves)."""
    cdef int64_t hi = 0, lo = 0, mask = 0xFFFFFFFF
    cdef Py_ssize_t i
    for i in range(na):
        hi += a[i] >> 32
        lo += a[i] & mask
    for i in range(nb):
        hi -= b[i] >> 32
        lo -= b[i] & mask
    hi += lo >> 32  # arithmetic shift: floor division by 2**32; lo & mask is then >= 0
    return hi < 0


cdef int tof_output_unhandled(TOFState* f, const TensorC* tensor, Arg* out) noexcept nogil:
    """Declare an output the runner writes; the largest such shape becomes the reference."""
    cdef int rc
    if f.s.shape_len == 0 or _shape_sum_less(_shape(f), f.s.shape_len, tensor.shape,
                                             tensor.rank):
        rc = _set_shape(f, tensor.shape, tensor.rank)
        if rc != 0:
            return rc
    return trace_output_unhandled(f.tr.trace, tensor, out)


cdef int tof_block_local_input(TOFState* f, const TensorC* tensor, int64_t block_pos,
                               bint global_, Arg* out) noexcept nogil:
    return trace_block_local_input(f.tr.trace, tensor, block_pos, global_, out)
