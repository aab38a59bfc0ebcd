# cython: language_level=3
"""Building a trace: ``FuseBlockBuilder`` (one block) and ``TraceFuser`` (blocks + resources).

burn counterpart: ``crates/burn-cubecl-fusion/src/engine/trace/block.rs``
(``FuseBlockBuilder``, ``LocalVariablePool``) and ``engine/trace/fuser.rs`` (``TraceFuser``);
notes §3.3, §3.6–§3.8.
Mirrors ``refimpl/planner/engine/builder.py``: same names, same order, same results. The ``def``
classes are thin converters around the ``nogil`` cores below, which work on the C structs of
``builder.pxd``.

Differs from refimpl:

* refimpl's dicts keyed by tensor id are vectors searched by id; the emitted order (sorted by
  id, then registration) is rebuilt by ``trace_finish`` exactly as ``_sorted_ops`` does;
* a refusal is a positive return code (refimpl raises ``Refusal``); the ``def`` twins raise
  the very same ``Refusal`` class;
* FuseArgs, FuseOps, blocks and resources are refimpl's dataclasses, built only at the
  boundary (``arg_to_py``, ``trace_finish``) and filled at their slot offsets (``_Frozen``,
  ``_make``);
* a trace whose last reference goes is cleared (``trace_clear``) and pooled, up to 64 traces
  with their buffers (none holding more than 16 KiB), for ``trace_new`` and ``trace_clone``:
  the search makes and drops traces by the thousand. Only memory is kept, never a trace's
  contents.

Invariants (shared with refimpl):

* A tensor produced in a block is a ``BlockLocal``; it is written to global memory iff its latest
  status in the trace is not ``ReadWrite`` (or a later block reads it back from a buffer).
* Reads and writes are kept per tensor id and emitted sorted by id (burn's BTreeMaps).
* ``estimate_bindings() = 1 + written outputs + inputs``; scalars are not counted.
"""

from libc.stdint cimport int32_t, int64_t, uint8_t, uint64_t
from libc.string cimport memcpy, memset

from fastplan._vec cimport (
    Log, UndoRec, Vec, field_set, log_record, mem_calloc, mem_free, vec_assign, vec_copy, vec_free,
    vec_init, vec_push, vec_reserve, vec_set,
)
from cpython.object cimport PyTypeObject
from cpython.ref cimport Py_INCREF, Py_XDECREF, PyObject

from fastplan._keys cimport dtype_of, field_offset, new_instance, new_tensor, set_slot, status_of

from fastplan.stream.relative cimport (
    READ_WRITE, EncodedTensor, TensorC, encode_tensor, shape_tuple,
)

import dataclasses

from refimpl.planner.engine import builder as _ref
from refimpl.planner.engine import trace_fuser as _ref_trace_fuser
from refimpl.planner.engine.builder import Refusal
from refimpl.planner.engine.fuse_ir import fuse_type_of
from refimpl.planner.engine.trace import (
    BINARY_FUSE_OPS, UNARY_FUSE_OPS, BinaryFuseArgs, BlockLocal, CatArgs, ClampArgs,
    ConditionalAssignArgs, FuseBlock, FuseOp, FuseResources, FuseTrace, FuseType, GatherArgs,
    Input, InputReshaped, InputSwapDims, LayoutInfo, Literal, MultiBlockGlobal, MultiBlockLocal,
    MultiBlockPos, NhwcStridesView, Output, RegisteredTensor, RegisteredTensors, ReshapeView,
    Scalar, ScalarShape, SelectArgs, SwapDimsView, UnaryFuseArgs,
)

__all__ = [
    "Refusal", "REFUSED_INDEXED", "REFUSED_VIEW", "LocalVariablePool", "ResourcesBuilder",
    "FuseBlockBuilder", "TraceFuser",
]

REFUSED_INDEXED = "indexed input"  # a tensor both indexed (gather/select/cat) and read/written
REFUSED_VIEW = "view"  # a view whose original is not an input already read in this block

# --- codes <-> refimpl values ------------------------------------------------------------------
_FT = tuple(FuseType)  # FuseType by value (values are 0..12 in order)
assert [int(ft) for ft in _FT] == list(range(NUM_FUSE_TYPES)) and _FT[FT_U32] is FuseType.U32
_LAYOUTS = tuple(LayoutInfo)
assert _LAYOUTS[LAYOUT_UNKNOWN] is LayoutInfo.Unknown
_LAYOUT_CODE = {layout: i for i, layout in enumerate(_LAYOUTS)}

# FuseOp names and the args struct each carries (refimpl.planner.engine.fuse_ir.FUSE_OP_ARGS).
FUSE_OP_NAMES = UNARY_FUSE_OPS + BINARY_FUSE_OPS + (
    "Clamp", "ConditionalAssign", "Gather", "Select", "Cat")
FUSE_OP_CODE = {name: i for i, name in enumerate(FUSE_OP_NAMES)}
_ARGS_UNARY, _ARGS_BINARY, _ARGS_CLAMP, _ARGS_COND, _ARGS_GATHER, _ARGS_SELECT, _ARGS_CAT = range(7)
_ARGS_CLASSES = (UnaryFuseArgs, BinaryFuseArgs, ClampArgs, ConditionalAssignArgs, GatherArgs,
                 SelectArgs, CatArgs)
_ARGS_OF = tuple(
    _ARGS_UNARY if name in UNARY_FUSE_OPS else _ARGS_BINARY if name in BINARY_FUSE_OPS
    else ("Clamp", "ConditionalAssign", "Gather", "Select", "Cat").index(name) + 2
    for name in FUSE_OP_NAMES)
_NARGS = (2, 3, 4, 4, 3, 3, 1)
FUSE_ASSIGN = FUSE_OP_CODE["Assign"]
cdef uint8_t _ASSIGN = FUSE_ASSIGN

# Settings are interned: blocks store a code, ``settings_object`` gives an equal FuseSettings,
# ``settings_flags`` its ``broadcast`` (bit 0) and ``output_shape_updates`` (bit 1). Objects
# already seen are found by identity first (hashing a FuseSettings runs Python code).
_SETTINGS = []
_SETTINGS_FLAGS = []
_SETTINGS_CODE = {}

cdef enum:
    _SEEN_MAX = 64  # settings objects found by address (a program uses a dozen)

# The settings objects already seen, by address, and their codes: a scan of a few pointers
# (a dict keyed by ``id()`` would cost the builtin ``id``, the lookup of ``get`` and the call).
# Each object is held (a reference taken once), so that its address stays its own.
cdef PyObject* _SEEN[_SEEN_MAX]
cdef int32_t _SEEN_CODE[_SEEN_MAX]
cdef Py_ssize_t _seen_len = 0


cdef int32_t settings_code(object settings) except -1:
    global _seen_len
    cdef Py_ssize_t i
    cdef PyObject* p = <PyObject*>settings
    for i in range(_seen_len):
        if _SEEN[i] == p:
            return _SEEN_CODE[i]
    code = _SETTINGS_CODE.get(settings)
    if code is None:
        flags = (1 if settings.broadcast else 0) | (2 if settings.output_shape_updates else 0)
        code = len(_SETTINGS)
        _SETTINGS.append(settings)
        _SETTINGS_FLAGS.append(flags)
        _SETTINGS_CODE[settings] = code
    if _seen_len < _SEEN_MAX:
        Py_INCREF(settings)
        _SEEN[_seen_len] = p
        _SEEN_CODE[_seen_len] = <int32_t>code
        _seen_len += 1
    return code


cdef int settings_flags(int32_t code) except -1:
    return _SETTINGS_FLAGS[code]


cdef object settings_object(int32_t code):
    return _SETTINGS[code]


# Refusal reasons: fixed codes for the reasons the fusers use, interned codes for any other
# text a caller closes a fuser with. The texts are refimpl's constants.
_REASONS = [None, _ref.REFUSED_INDEXED, _ref.REFUSED_VIEW, _ref_trace_fuser.REASON_MAX_OPS,
            _ref_trace_fuser.REASON_SHAPE, _ref_trace_fuser.REASON_UNSUPPORTED_OP,
            _ref_trace_fuser.REASON_UNSUPPORTED_VARIANT, _ref_trace_fuser.REASON_DROP_FIRST,
            _ref_trace_fuser.REASON_RESHAPE_RANK, None, "first op not a matmul",
            "reduce input shape", "reduce captured"]
_REASON_CODE = {text: i for i, text in enumerate(_REASONS) if text is not None}


cdef int32_t reason_code(object text) except -1:
    if text is None:
        return R_NONE
    code = _REASON_CODE.get(text)
    if code is None:
        code = len(_REASONS)
        _REASONS.append(text)
        _REASON_CODE[text] = code
    return code


cdef object reason_text(int32_t code, int64_t estimate, int64_t max_bindings):
    if code == R_MAX_BINDINGS:
        return f"max_bindings est_bindings={estimate}/{max_bindings}"
    return _REASONS[code]


cdef int raise_error(int code, int64_t a, int64_t b) except -1:
    """Raise the exception refimpl raises where a core returned ``code``."""
    if code == E_NOMEM:
        raise MemoryError()
    if code == E_SCALAR_TYPE:
        raise TypeError("fusers take relative ops: scalars must be placeholder ints")
    if code == E_INDEX:
        raise IndexError("tuple index out of range")
    if code == E_NO_VALUE:
        raise RuntimeError(f"tensor {a} has no value in block {b}")
    if code == E_OUTPUT_INDEXED:
        raise RuntimeError(f"output {a} is already an indexed input")
    if code == E_INPUT_INDEXED:
        raise RuntimeError(f"input {a} is already an indexed input")
    if code == E_BLOCK_POS:
        raise IndexError("list index out of range")
    if code > 0:
        raise Refusal(reason_text(code, 0, 0))
    raise SystemError(f"fastplan: unknown core error {code}")


cdef int _check(int rc, Trace* t) except -1:
    if rc != 0:
        raise_error(rc, t.err_a if t != NULL else 0, t.err_b if t != NULL else 0)
    return 0


# --- lifecycle ---------------------------------------------------------------------------------


cdef Block* block_new(int32_t settings) noexcept nogil:
    cdef Block* b = <Block*>mem_calloc(1, sizeof(Block))
    if b == NULL:
        return NULL
    b.refs = 1
    b.settings = settings
    vec_init(&b.locals, sizeof(Local))
    vec_init(&b.ops, sizeof(FOp))
    vec_init(&b.cat, sizeof(Arg))
    vec_init(&b.reads, sizeof(Assign))
    vec_init(&b.writes, sizeof(Assign))
    vec_init(&b.outputs, sizeof(BlockOut))
    vec_init(&b.outputs_unhandled, sizeof(Arg))
    vec_init(&b.local_inputs, sizeof(Keyed))
    vec_init(&b.shape_ref, sizeof(int64_t))
    return b


cdef void _block_free(Block* b) noexcept nogil:
    vec_free(&b.locals)
    vec_free(&b.ops)
    vec_free(&b.cat)
    vec_free(&b.reads)
    vec_free(&b.writes)
    vec_free(&b.outputs)
    vec_free(&b.outputs_unhandled)
    vec_free(&b.local_inputs)
    vec_free(&b.shape_ref)
    mem_free(b)


cdef void block_decref(Block* b) noexcept nogil:
    if b == NULL:
        return
    b.refs -= 1
    if b.refs == 0:
        _block_free(b)


cdef int _block_assign(Block* c, const Block* b) noexcept nogil:
    """``c`` (a new or cleared block: empty vectors) takes ``b``'s contents, in its own
    buffers; -1 when memory runs out."""
    cdef int rc = 0
    c.settings = b.settings
    memcpy(c.counts, b.counts, sizeof(b.counts))
    c.write_keys = b.write_keys
    rc |= vec_assign(&c.locals, &b.locals)
    rc |= vec_assign(&c.ops, &b.ops)
    rc |= vec_assign(&c.cat, &b.cat)
    rc |= vec_assign(&c.reads, &b.reads)
    rc |= vec_assign(&c.writes, &b.writes)
    rc |= vec_assign(&c.outputs, &b.outputs)
    rc |= vec_assign(&c.outputs_unhandled, &b.outputs_unhandled)
    rc |= vec_assign(&c.local_inputs, &b.local_inputs)
    rc |= vec_assign(&c.shape_ref, &b.shape_ref)
    return rc


cdef Block* block_clone(const Block* b) noexcept nogil:
    cdef Block* c = block_new(b.settings)
    if c == NULL:
        return NULL
    if _block_assign(c, b) != 0:
        _block_free(c)
        return NULL
    return c


cdef Resources* res_new() noexcept nogil:
    cdef Resources* r = <Resources*>mem_calloc(1, sizeof(Resources))
    if r == NULL:
        return NULL
    r.refs = 1
    vec_init(&r.outputs, sizeof(RegT))
    vec_init(&r.inputs, sizeof(RegT))
    vec_init(&r.dims, sizeof(int64_t))
    vec_init(&r.scalars, sizeof(ScalarRec))
    vec_init(&r.views, sizeof(ViewRec))
    vec_init(&r.indexed, sizeof(Keyed))
    vec_init(&r.inputs_unhandled, sizeof(int64_t))
    vec_init(&r.outputs_unhandled, sizeof(Arg))
    vec_init(&r.dropped, sizeof(int64_t))
    vec_init(&r.buffers, sizeof(RegT))
    vec_init(&r.registers, sizeof(Keyed))
    return r


cdef void _res_free(Resources* r) noexcept nogil:
    vec_free(&r.outputs)
    vec_free(&r.inputs)
    vec_free(&r.dims)
    vec_free(&r.scalars)
    vec_free(&r.views)
    vec_free(&r.indexed)
    vec_free(&r.inputs_unhandled)
    vec_free(&r.outputs_unhandled)
    vec_free(&r.dropped)
    vec_free(&r.buffers)
    vec_free(&r.registers)
    mem_free(r)


cdef void res_decref(Resources* r) noexcept nogil:
    if r == NULL:
        return
    r.refs -= 1
    if r.refs == 0:
        _res_free(r)


cdef int _res_assign(Resources* c, const Resources* r) noexcept nogil:
    """``c`` (new or cleared resources: empty vectors) takes ``r``'s contents, in its own
    buffers; -1 when memory runs out."""
    cdef int rc = 0
    c.num_reshaped = r.num_reshaped
    rc |= vec_assign(&c.outputs, &r.outputs)
    rc |= vec_assign(&c.inputs, &r.inputs)
    rc |= vec_assign(&c.dims, &r.dims)
    rc |= vec_assign(&c.scalars, &r.scalars)
    rc |= vec_assign(&c.views, &r.views)
    rc |= vec_assign(&c.indexed, &r.indexed)
    rc |= vec_assign(&c.inputs_unhandled, &r.inputs_unhandled)
    rc |= vec_assign(&c.outputs_unhandled, &r.outputs_unhandled)
    rc |= vec_assign(&c.dropped, &r.dropped)
    rc |= vec_assign(&c.buffers, &r.buffers)
    rc |= vec_assign(&c.registers, &r.registers)
    return rc


cdef Resources* res_clone(const Resources* r) noexcept nogil:
    cdef Resources* c = res_new()
    if c == NULL:
        return NULL
    if _res_assign(c, r) != 0:
        _res_free(c)
        return NULL
    return c


# Traces whose last reference went, kept with their buffers for the next trace_new or
# trace_clone (the search makes and drops traces by the thousand: a fuser's trial copy, a new
# block's clones). A pooled trace is cleared (trace_clear): no op, no block before the current
# one, the current block and the resources its own (refs 1), empty vectors with their capacity.
# Memory only: nothing of a trace's contents outlives it.
cdef enum:
    _TRACE_POOL_MAX = 64
    _POOL_KEEP_BYTES = 16384  # a trace whose buffers hold more is freed, not pooled

cdef Trace* _trace_pool[_TRACE_POOL_MAX]
cdef Py_ssize_t _trace_pool_len = 0


cdef inline Trace* _pool_take() noexcept nogil:
    global _trace_pool_len
    if _trace_pool_len == 0:
        return NULL
    _trace_pool_len -= 1
    return _trace_pool[_trace_pool_len]


cdef inline size_t _vec_bytes(const Vec* v) noexcept nogil:
    return <size_t>v.cap * <size_t>v.itemsize


cdef size_t _trace_bytes(const Trace* t) noexcept nogil:
    """The bytes held by a trace's buffers (current block, resources, undo log)."""
    cdef const Block* b = t.current
    cdef const Resources* r = t.res
    return (_vec_bytes(&b.locals) + _vec_bytes(&b.ops) + _vec_bytes(&b.cat)
            + _vec_bytes(&b.reads) + _vec_bytes(&b.writes) + _vec_bytes(&b.outputs)
            + _vec_bytes(&b.outputs_unhandled) + _vec_bytes(&b.local_inputs)
            + _vec_bytes(&b.shape_ref) + _vec_bytes(&r.outputs) + _vec_bytes(&r.inputs)
            + _vec_bytes(&r.dims) + _vec_bytes(&r.scalars) + _vec_bytes(&r.views)
            + _vec_bytes(&r.indexed) + _vec_bytes(&r.inputs_unhandled)
            + _vec_bytes(&r.outputs_unhandled) + _vec_bytes(&r.dropped)
            + _vec_bytes(&r.buffers) + _vec_bytes(&r.registers) + _vec_bytes(&t.previous)
            + _vec_bytes(&t.log.recs))


cdef bint _pool_put(Trace* t) noexcept nogil:
    """Keep ``t`` (no reference left) in the pool, cleared; False if it must be freed."""
    global _trace_pool_len
    if _trace_pool_len >= _TRACE_POOL_MAX or t.current == NULL or t.res == NULL \
            or t.current.refs != 1 or t.res.refs != 1 or _trace_bytes(t) > _POOL_KEEP_BYTES:
        return False
    if trace_clear(t, t.settings) != 0:  # in place (both its own): cannot fail
        return False
    t.err_a = t.err_b = 0
    _trace_pool[_trace_pool_len] = t
    _trace_pool_len += 1
    return True


cdef Trace* trace_new(int32_t settings) noexcept nogil:
    cdef Trace* t = _pool_take()
    if t != NULL:
        t.refs = 1
        trace_clear(t, settings)  # in place: sets the settings of the trace and its block
        return t
    t = <Trace*>mem_calloc(1, sizeof(Trace))
    if t == NULL:
        return NULL
    t.refs = 1
    t.settings = settings
    vec_init(&t.previous, sizeof(Block*))
    vec_init(&t.log.recs, sizeof(UndoRec))
    t.current = block_new(settings)
    t.res = res_new()
    if t.current == NULL or t.res == NULL:
        trace_decref(t)
        return NULL
    return t


cdef void trace_decref(Trace* t) noexcept nogil:
    cdef Py_ssize_t i
    if t == NULL:
        return
    t.refs -= 1
    if t.refs != 0:
        return
    if _pool_put(t):
        return
    block_decref(t.current)
    for i in range(t.previous.len):
        block_decref((<Block**>t.previous.data)[i])
    res_decref(t.res)
    vec_free(&t.previous)
    vec_free(&t.log.recs)
    mem_free(t)


cdef Trace* trace_clone(const Trace* t) noexcept nogil:
    cdef Trace* c = _pool_take()
    cdef Py_ssize_t i
    cdef Block* b
    if c != NULL:  # cleared: its own empty block and resources, which take t's contents
        c.refs = 1
        c.settings = t.settings
        if _block_assign(c.current, t.current) != 0 or _res_assign(c.res, t.res) != 0 \
                or vec_reserve(&c.previous, t.previous.len) < 0:
            trace_decref(c)
            return NULL
    else:
        c = <Trace*>mem_calloc(1, sizeof(Trace))
        if c == NULL:
            return NULL
        c.refs = 1
        c.settings = t.settings
        vec_init(&c.previous, sizeof(Block*))
        vec_init(&c.log.recs, sizeof(UndoRec))
        c.current = block_clone(t.current)
        c.res = res_clone(t.res)
        if c.current == NULL or c.res == NULL or vec_reserve(&c.previous, t.previous.len) < 0:
            trace_decref(c)
            return NULL
    for i in range(t.previous.len):
        b = block_clone((<Block**>t.previous.data)[i])
        if b == NULL:
            trace_decref(c)
            return NULL
        (<Block**>c.previous.data)[i] = b
        c.previous.len = i + 1
    return c


cdef int trace_clear(Trace* t, int32_t settings) noexcept nogil:
    """Make ``t`` a fresh trace with ``settings`` in place, keeping its buffers (the caller
    checked that nothing else holds it)."""
    cdef Py_ssize_t i
    cdef Block* b
    cdef Resources* r
    for i in range(t.previous.len):
        block_decref(_previous(t, i))
    t.previous.len = 0
    t.log.recs.len = 0
    t.log.depth = 0
    t.settings = settings
    if t.current.refs == 1:
        b = t.current
        b.locals.len = b.ops.len = b.cat.len = b.reads.len = b.writes.len = 0
        b.outputs.len = b.outputs_unhandled.len = b.local_inputs.len = b.shape_ref.len = 0
        memset(b.counts, 0, sizeof(b.counts))
        b.write_keys = 0
        b.settings = settings
    else:
        block_decref(t.current)
        t.current = block_new(settings)
        if t.current == NULL:
            return E_NOMEM
    if t.res.refs == 1:
        r = t.res
        r.outputs.len = r.inputs.len = r.dims.len = r.scalars.len = r.views.len = 0
        r.indexed.len = r.inputs_unhandled.len = r.outputs_unhandled.len = 0
        r.dropped.len = r.buffers.len = r.registers.len = 0
        r.num_reshaped = 0
    else:
        res_decref(t.res)
        t.res = res_new()
        if t.res == NULL:
            return E_NOMEM
    return 0


# --- lookups -------------------------------------------------------------------------------------


cdef inline Py_ssize_t _regs_index(const Vec* v, int64_t tid) noexcept nogil:
    cdef RegT* e = <RegT*>v.data
    cdef Py_ssize_t i
    for i in range(v.len):
        if e[i].id == tid:
            return i
    return -1


cdef inline Py_ssize_t _keyed_index(const Vec* v, int64_t tid) noexcept nogil:
    cdef Keyed* e = <Keyed*>v.data
    cdef Py_ssize_t i
    for i in range(v.len):
        if e[i].tid == tid:
            return i
    return -1


cdef inline Py_ssize_t _ids_index(const Vec* v, int64_t tid) noexcept nogil:
    cdef int64_t* e = <int64_t*>v.data
    cdef Py_ssize_t i
    for i in range(v.len):
        if e[i] == tid:
            return i
    return -1


cdef inline Py_ssize_t _local_index(const Block* b, uint8_t ty, int64_t tid) noexcept nogil:
    cdef Local* e = <Local*>b.locals.data
    cdef Py_ssize_t i
    for i in range(b.locals.len):
        if e[i].tid == tid and e[i].ty == ty:
            return i
    return -1


cdef inline Py_ssize_t _local_index_any(const Block* b, int64_t tid) noexcept nogil:
    """The local of ``tid`` with the smallest type (refimpl visits types in FuseType order)."""
    cdef Local* e = <Local*>b.locals.data
    cdef Py_ssize_t i, found = -1
    for i in range(b.locals.len):
        if e[i].tid == tid and (found < 0 or e[i].ty < e[found].ty):
            found = i
    return found


cdef inline Arg _arg(uint8_t kind, uint8_t ty, int64_t a) noexcept nogil:
    cdef Arg arg
    arg.kind = kind
    arg.ty = ty
    arg.layout = LAYOUT_UNKNOWN
    arg.broadcasted = 0
    arg.a = a
    arg.b = 0
    arg.c = 0
    return arg


cdef inline Arg _local_arg(const Block* b, Py_ssize_t i) noexcept nogil:
    cdef Local* e = <Local*>b.locals.data
    return _arg(ARG_LOCAL, e[i].ty, e[i].pos)


cdef inline int _dims_append(Resources* r, const int64_t* shape, Py_ssize_t rank, Log* log,
                             Py_ssize_t* off) noexcept nogil:
    """Append a shape to the resources' dims (one undo record for the whole shape)."""
    off[0] = r.dims.len
    if rank == 0:
        return 0
    if vec_reserve(&r.dims, r.dims.len + rank) < 0:
        return E_NOMEM
    if log_record(log, &r.dims, NULL, -1, 0, &r.dims.len, sizeof(Py_ssize_t)) < 0:
        return E_NOMEM
    memcpy(r.dims.data + r.dims.len * sizeof(int64_t), shape, <size_t>rank * sizeof(int64_t))
    r.dims.len += rank
    return 0


cdef int _regs_insert(Resources* r, Vec* v, uint8_t ty, const TensorC* t, Log* log,
                      Py_ssize_t* pos) noexcept nogil:
    """RegisteredTensors.insert: the position of ``t.id``, registering ``t`` if it is new."""
    cdef Py_ssize_t off
    cdef RegT* e
    pos[0] = _regs_index(v, t.id)
    if pos[0] >= 0:
        return 0
    if _dims_append(r, t.shape, t.rank, log, &off) != 0:
        return E_NOMEM
    e = <RegT*>vec_push(v, log)
    if e == NULL:
        return E_NOMEM
    e.id = t.id
    e.dims_off = off
    e.rank = t.rank
    e.ty = ty
    e.dtype = t.dtype
    e.status = t.status
    pos[0] = v.len - 1
    return 0


cdef int _regs_update(Vec* v, const TensorC* t, Log* log) noexcept nogil:
    """RegisteredTensors.update: the registered tensor takes ``t``'s status."""
    cdef Py_ssize_t pos = _regs_index(v, t.id)
    cdef RegT entry
    if pos < 0:
        return 0
    entry = (<RegT*>v.data)[pos]
    if entry.status == t.status:
        return 0
    entry.status = t.status
    return E_NOMEM if vec_set(v, pos, 0, &entry, sizeof(RegT), log) < 0 else 0


cdef int _keyed_set(Vec* v, int64_t tid, const Arg* arg, Log* log) noexcept nogil:
    """``d[tid] = arg`` on a vector of Keyed (an existing key keeps its position)."""
    cdef Keyed entry
    cdef Keyed* slot
    cdef Py_ssize_t pos = _keyed_index(v, tid)
    if pos >= 0:
        entry.tid = tid
        entry.arg = arg[0]
        return E_NOMEM if vec_set(v, pos, 0, &entry, sizeof(Keyed), log) < 0 else 0
    slot = <Keyed*>vec_push(v, log)
    if slot == NULL:
        return E_NOMEM
    slot.tid = tid
    slot.arg = arg[0]
    return 0


cdef int _push_assign(Vec* v, int64_t tid, const Arg* src, const Arg* dst,
                      Log* log) noexcept nogil:
    cdef Assign* slot = <Assign*>vec_push(v, log)
    if slot == NULL:
        return E_NOMEM
    slot.tid = tid
    slot.src = src[0]
    slot.dst = dst[0]
    return 0


cdef int _push_arg(Vec* v, const Arg* arg, Log* log) noexcept nogil:
    cdef Arg* slot = <Arg*>vec_push(v, log)
    if slot == NULL:
        return E_NOMEM
    slot[0] = arg[0]
    return 0


cdef int _push_id(Vec* v, int64_t tid, Log* log) noexcept nogil:
    cdef int64_t* slot = <int64_t*>vec_push(v, log)
    if slot == NULL:
        return E_NOMEM
    slot[0] = tid
    return 0


# --- LocalVariablePool cores -------------------------------------------------------------------


cdef int _locals_create(Block* b, uint8_t ty, int64_t tid, Log* log, Arg* out) noexcept nogil:
    """``ids[tid] = len(ids)`` for the type's ids (an existing id gets the count as pos)."""
    cdef int64_t count = b.counts[ty]
    cdef int64_t next_count = count + 1
    cdef Py_ssize_t pos = _local_index(b, ty, tid)
    cdef Local entry
    cdef Local* slot
    if pos >= 0:
        entry = (<Local*>b.locals.data)[pos]
        entry.pos = count
        if vec_set(&b.locals, pos, 0, &entry, sizeof(Local), log) < 0:
            return E_NOMEM
    else:
        slot = <Local*>vec_push(&b.locals, log)
        if slot == NULL:
            return E_NOMEM
        slot.tid = tid
        slot.ty = ty
        slot.pos = count
        if field_set(<char*>&b.counts[ty], &next_count, sizeof(int64_t), log) < 0:
            return E_NOMEM
    out[0] = _arg(ARG_LOCAL, ty, count)
    return 0


# --- FuseBlockBuilder cores ----------------------------------------------------------------------


cdef int _block_output(Block* b, Resources* r, const TensorC* t, Log* log,
                       Arg* out) noexcept nogil:
    cdef Py_ssize_t pos
    cdef BlockOut* slot
    cdef int rc
    if _keyed_index(&r.indexed, t.id) >= 0:
        return R_INDEXED
    pos = _local_index(b, t.ty, t.id)
    if pos >= 0:
        out[0] = _local_arg(b, pos)
        return 0
    rc = _locals_create(b, t.ty, t.id, log, out)
    if rc != 0:
        return rc
    slot = NULL
    for pos in range(b.outputs.len):
        if (<BlockOut*>b.outputs.data)[pos].id == t.id:
            break
    else:
        slot = <BlockOut*>vec_push(&b.outputs, log)
        if slot == NULL:
            return E_NOMEM
        slot.id = t.id
        slot.ty = t.ty
    rc = _regs_insert(r, &r.outputs, t.ty, t, log, &pos)
    if slot != NULL:
        slot.hint = pos
    return rc


cdef int _block_multi_block_variable(Block* b, int64_t block_pos, const TensorC* t,
                                     bint global_, Log* log, Arg* out,
                                     bint* found) noexcept nogil:
    cdef Py_ssize_t pos = _keyed_index(&b.local_inputs, t.id)
    cdef Arg local, shared
    cdef int64_t keys
    found[0] = True
    if pos >= 0:
        out[0] = (<Keyed*>b.local_inputs.data)[pos].arg
        return 0
    pos = _local_index(b, t.ty, t.id)
    if pos < 0:
        found[0] = False
        return 0
    local = _local_arg(b, pos)
    shared = _arg(ARG_MB_GLOBAL if global_ else ARG_MB_LOCAL, local.ty, block_pos)
    shared.b = b.write_keys
    for pos in range(b.writes.len):
        if (<Assign*>b.writes.data)[pos].tid == t.id:
            break
    else:
        keys = b.write_keys + 1
        if field_set(<char*>&b.write_keys, &keys, sizeof(int64_t), log) < 0:
            return E_NOMEM
    out[0] = shared
    return _push_assign(&b.writes, t.id, &local, &shared, log)


cdef int _block_input(Block* b, Resources* r, const TensorC* t, Log* log,
                      Arg* out) noexcept nogil:
    cdef Py_ssize_t pos
    cdef Arg source
    cdef int rc
    if _keyed_index(&r.indexed, t.id) >= 0:
        return R_INDEXED
    pos = _keyed_index(&b.local_inputs, t.id)
    if pos >= 0:
        out[0] = (<Keyed*>b.local_inputs.data)[pos].arg
        return 0
    pos = _local_index(b, t.ty, t.id)
    if pos >= 0:
        out[0] = _local_arg(b, pos)
        return _regs_update(&r.inputs, t, log)
    if _regs_index(&r.outputs, t.id) >= 0:
        # produced by an earlier block of this trace: read back from its buffer
        pos = _keyed_index(&r.registers, t.id)
        if pos >= 0:
            out[0] = (<Keyed*>r.registers.data)[pos].arg
            return 0
        rc = _regs_insert(r, &r.buffers, t.ty, t, log, &pos)
        source = _arg(ARG_OUTPUT, t.ty, pos)
    else:
        rc = _regs_insert(r, &r.inputs, t.ty, t, log, &pos)
        source = _arg(ARG_INPUT, t.ty, pos)
    if rc != 0:
        return rc
    rc = _locals_create(b, t.ty, t.id, log, out)
    if rc != 0:
        return rc
    return _push_assign(&b.reads, t.id, &source, out, log)


cdef int _block_view_original(Block* b, Resources* r, const TensorC* t, Log* log,
                              Arg* out) noexcept nogil:
    """The input a fused view reads: ``t`` must be a global input already read here."""
    cdef Py_ssize_t index
    if _local_index(b, t.ty, t.id) < 0:
        return R_VIEW  # a lone view runs eagerly instead (burn #5134)
    if _regs_index(&r.outputs, t.id) >= 0:
        return R_VIEW
    index = _regs_index(&r.inputs, t.id)
    if index < 0:
        return R_VIEW
    out[0] = _arg(ARG_INPUT, t.ty, index)
    return _regs_update(&r.inputs, t, log)


cdef int _block_input_swap_dims(Block* b, Resources* r, const TensorC* t,
                                const TensorC* output, int64_t d0, int64_t d1, Log* log,
                                Arg* out) noexcept nogil:
    cdef Arg original, source
    cdef ViewRec* view
    cdef int rc = _block_view_original(b, r, t, log, &original)
    if rc != 0:
        return rc
    rc = _block_output(b, r, output, log, out)
    if rc != 0:
        return rc
    view = <ViewRec*>vec_push(&r.views, log)
    if view == NULL:
        return E_NOMEM
    view.kind = VIEW_SWAP
    view.a = output.id
    view.b = t.id
    view.d1 = d0
    view.d2 = d1
    if output.rank == 0:
        return E_INDEX  # refimpl: output.shape[-1] of an empty shape
    source = original
    source.kind = ARG_SWAPPED
    source.b = d0
    source.c = d1
    source.broadcasted = output.shape[output.rank - 1] == 0
    return _push_assign(&b.reads, t.id, &source, out, log)


cdef int _block_input_reshaped(Block* b, Resources* r, const TensorC* t, const TensorC* output,
                               Log* log, Arg* out) noexcept nogil:
    cdef Arg original, source
    cdef ViewRec* view
    cdef Py_ssize_t off
    cdef int64_t index, next_index
    cdef int rc = _block_view_original(b, r, t, log, &original)
    if rc != 0:
        return rc
    rc = _block_output(b, r, output, log, out)
    if rc != 0:
        return rc
    index = r.num_reshaped
    next_index = index + 1
    if field_set(<char*>&r.num_reshaped, &next_index, sizeof(int64_t), log) < 0:
        return E_NOMEM
    if _dims_append(r, output.shape, output.rank, log, &off) != 0:
        return E_NOMEM
    view = <ViewRec*>vec_push(&r.views, log)
    if view == NULL:
        return E_NOMEM
    view.kind = VIEW_RESHAPE
    view.a = output.id
    view.b = t.id
    view.pos = index
    view.dims_off = off
    view.rank = output.rank
    if output.rank == 0:
        return E_INDEX
    source = original
    source.kind = ARG_RESHAPED
    source.b = index * output.rank
    source.c = output.rank
    source.broadcasted = output.shape[output.rank - 1] == 0
    return _push_assign(&b.reads, t.id, &source, out, log)


cdef inline Py_ssize_t _latest_output(const Block* b, const Resources* r,
                                      Py_ssize_t i) noexcept nogil:
    """Where block output ``i`` is in the resources' outputs (the hint, checked), or -1."""
    cdef BlockOut* e = &(<BlockOut*>b.outputs.data)[i]
    if 0 <= e.hint < r.outputs.len and (<RegT*>r.outputs.data)[e.hint].id == e.id:
        return e.hint
    return _regs_index(&r.outputs, e.id)


cdef int _block_tensor_writes(const Block* b, const Resources* r, Vec* buffers, Vec* result,
                              int64_t* count) noexcept nogil:
    """The outputs of this block that must reach global memory: their positions in the
    resources' outputs go to ``result`` (unless NULL); ``buffers`` collects the buffer
    tensors already written by an earlier block."""
    cdef Py_ssize_t i, pos
    cdef RegT* latest
    cdef Py_ssize_t* slot
    cdef bint write
    count[0] = 0
    for i in range(b.outputs.len):
        pos = _latest_output(b, r, i)
        if pos < 0:
            continue
        latest = &(<RegT*>r.outputs.data)[pos]
        write = latest.status != READ_WRITE
        if not write and _regs_index(&r.buffers, latest.id) >= 0 \
                and _ids_index(buffers, latest.id) < 0:
            write = True
            if _push_id(buffers, latest.id, NULL) != 0:
                return E_NOMEM
        if write:
            count[0] += 1
            if result != NULL:
                slot = <Py_ssize_t*>vec_push(result, NULL)
                if slot == NULL:
                    return E_NOMEM
                slot[0] = pos
    return 0


cdef Py_ssize_t _out_insert(Vec* outputs, int64_t tid, uint8_t ty, Py_ssize_t pos,
                            uint8_t from_buffers) noexcept nogil:
    """RegisteredTensors.insert on finish's ``outputs``: the position (-1: out of memory)."""
    cdef OutEntry* e = <OutEntry*>outputs.data
    cdef Py_ssize_t i
    for i in range(outputs.len):
        if e[i].id == tid:
            return i
    e = <OutEntry*>vec_push(outputs, NULL)
    if e == NULL:
        return -1
    e.id = tid
    e.ty = ty
    e.pos = pos
    e.from_buffers = from_buffers
    return outputs.len - 1


cdef int _block_build_writes(const Block* b, const Resources* r, Vec* outputs, Vec* buffers,
                             Vec* writes) noexcept nogil:
    """The writes of the finished block (multi-block writes, then one per written tensor);
    registers the written tensors in ``outputs``."""
    cdef Vec written
    cdef Py_ssize_t i, pos, local, target
    cdef int64_t count
    cdef RegT* entry
    cdef Arg src, dst
    cdef int rc
    if vec_copy(writes, &b.writes) < 0:
        return E_NOMEM
    vec_init(&written, sizeof(Py_ssize_t))
    rc = _block_tensor_writes(b, r, buffers, &written, &count)
    for i in range(written.len if rc == 0 else 0):
        pos = (<Py_ssize_t*>written.data)[i]
        entry = &(<RegT*>r.outputs.data)[pos]
        local = _local_index_any(b, entry.id)
        if local < 0:
            continue
        target = _out_insert(outputs, entry.id, entry.ty, pos, 0)
        if target < 0:
            rc = E_NOMEM
            break
        src = _local_arg(b, local)
        dst = _arg(ARG_OUTPUT, entry.ty, target)
        rc = _push_assign(writes, entry.id, &src, &dst, NULL)
        if rc != 0:
            break
    vec_free(&written)
    return rc


# --- TraceFuser cores ----------------------------------------------------------------------------


cdef inline Block* _previous(const Trace* t, Py_ssize_t i) noexcept nogil:
    return (<Block**>t.previous.data)[i]


cdef Py_ssize_t trace_num_ops_fused(const Trace* t) noexcept nogil:
    """Data ops in every block (reads, writes and drops are not counted)."""
    cdef Py_ssize_t i, n = t.current.ops.len
    for i in range(t.previous.len):
        n += _previous(t, i).ops.len
    return n


cdef int trace_estimate_bindings(Trace* t, int64_t* estimate) noexcept nogil:
    """1 (metadata) + tensors written + tensors read; may over-count, never under-count."""
    cdef Vec buffers
    cdef Py_ssize_t i
    cdef int64_t count, written = 0
    cdef int rc = 0
    vec_init(&buffers, sizeof(int64_t))
    for i in range(t.previous.len):
        rc = _block_tensor_writes(_previous(t, i), t.res, &buffers, NULL, &count)
        written += count
    if rc == 0:
        rc = _block_tensor_writes(t.current, t.res, &buffers, NULL, &count)
        written += count
    vec_free(&buffers)
    estimate[0] = 1 + written + t.res.inputs.len
    return rc


cdef int trace_io_counts(Trace* t, int64_t* reads, int64_t* writes,
                         int64_t* penalty) noexcept nogil:
    """What ``Scoring.evaluate`` counts on the finished trace, without finishing it: global
    reads (all reads), written tensors, and reads through a view."""
    cdef Vec buffers
    cdef Py_ssize_t i, j
    cdef Block* b
    cdef Assign* read
    cdef int64_t count
    cdef int rc = 0
    reads[0] = 0
    writes[0] = 0
    penalty[0] = 0
    vec_init(&buffers, sizeof(int64_t))
    for i in range(t.previous.len + 1):
        b = _previous(t, i) if i < t.previous.len else t.current
        reads[0] += b.reads.len
        read = <Assign*>b.reads.data
        for j in range(b.reads.len):
            if read[j].src.kind == ARG_RESHAPED or read[j].src.kind == ARG_SWAPPED:
                penalty[0] += 1
        rc = _block_tensor_writes(b, t.res, &buffers, NULL, &count)
        if rc != 0:
            break
        writes[0] += count
    vec_free(&buffers)
    return rc


cdef int64_t trace_num_mb_local_inputs(const Trace* t) noexcept nogil:
    cdef Keyed* e = <Keyed*>t.current.local_inputs.data
    cdef Py_ssize_t i
    cdef int64_t n = 0
    for i in range(t.current.local_inputs.len):
        n += e[i].arg.kind == ARG_MB_LOCAL
    return n


cdef int trace_fuse_dropped(Trace* t, const TensorC* tensor) noexcept nogil:
    """Record a ``Drop``: the tensor's latest status becomes its (``ReadWrite``) status."""
    cdef int rc = _regs_update(&t.res.outputs, tensor, &t.log)
    if rc == 0:
        rc = _regs_update(&t.res.inputs, tensor, &t.log)
    if rc == 0 and _ids_index(&t.res.dropped, tensor.id) < 0:
        rc = _push_id(&t.res.dropped, tensor.id, &t.log)
    return rc


cdef int trace_fuse_operation(Trace* t, const FOp* op, const Arg* cat,
                              Py_ssize_t n_cat) noexcept nogil:
    cdef Block* b = t.current
    cdef Py_ssize_t i, off = b.cat.len
    cdef FOp* slot
    for i in range(n_cat):
        if _push_arg(&b.cat, &cat[i], &t.log) != 0:
            return E_NOMEM
    slot = <FOp*>vec_push(&b.ops, &t.log)
    if slot == NULL:
        return E_NOMEM
    slot[0] = op[0]
    slot.cat_off = off
    slot.cat_len = n_cat
    return 0


cdef int trace_input(Trace* t, const TensorC* tensor, Arg* out) noexcept nogil:
    cdef int rc = _regs_update(&t.res.outputs, tensor, &t.log)
    if rc != 0:
        return rc
    return _block_input(t.current, t.res, tensor, &t.log, out)


cdef int trace_output(Trace* t, const TensorC* tensor, Arg* out) noexcept nogil:
    return _block_output(t.current, t.res, tensor, &t.log, out)


cdef int trace_input_unhandled(Trace* t, const TensorC* tensor, Arg* out) noexcept nogil:
    """An input the runner reads itself (matmul/reduce operand, indexed input)."""
    cdef Py_ssize_t pos
    cdef int rc
    if _keyed_index(&t.res.indexed, tensor.id) >= 0:
        t.err_a = tensor.id
        return E_INPUT_INDEXED
    rc = _regs_update(&t.res.outputs, tensor, &t.log)
    if rc == 0:
        rc = _regs_insert(t.res, &t.res.inputs, tensor.ty, tensor, &t.log, &pos)
    if rc != 0:
        return rc
    out[0] = _arg(ARG_INPUT, tensor.ty, pos)
    return _push_id(&t.res.inputs_unhandled, tensor.id, &t.log)


cdef int trace_output_unhandled(Trace* t, const TensorC* tensor, Arg* out) noexcept nogil:
    """An output the runner writes itself (matmul/reduce result)."""
    cdef int rc = trace_output(t, tensor, out)
    if rc > 0:
        t.err_a = tensor.id
        return E_OUTPUT_INDEXED
    if rc == 0:
        rc = _push_arg(&t.res.outputs_unhandled, out, &t.log)
    if rc == 0:
        rc = _push_arg(&t.current.outputs_unhandled, out, &t.log)
    return rc


cdef int trace_input_indexed(Trace* t, const TensorC* tensor, Arg* out) noexcept nogil:
    """An input read by index (gather/select/cat): unvectorized, never also a plain
    input or an output of the trace."""
    cdef Py_ssize_t pos = _keyed_index(&t.res.indexed, tensor.id)
    cdef int rc
    cdef Keyed* slot
    if pos >= 0:
        out[0] = (<Keyed*>t.res.indexed.data)[pos].arg
        return _regs_update(&t.res.outputs, tensor, &t.log)
    if _regs_index(&t.res.inputs, tensor.id) >= 0:
        return R_INDEXED
    if _regs_index(&t.res.outputs, tensor.id) >= 0:
        return R_INDEXED
    rc = trace_input_unhandled(t, tensor, out)
    if rc != 0:
        return rc
    slot = <Keyed*>vec_push(&t.res.indexed, &t.log)
    if slot == NULL:
        return E_NOMEM
    slot.tid = tensor.id
    slot.arg = out[0]
    return 0


cdef int trace_input_swap_dims(Trace* t, const TensorC* tensor, const TensorC* output,
                               int64_t d0, int64_t d1, Arg* out) noexcept nogil:
    cdef int rc = _regs_update(&t.res.outputs, tensor, &t.log)
    if rc != 0:
        return rc
    return _block_input_swap_dims(t.current, t.res, tensor, output, d0, d1, &t.log, out)


cdef int trace_input_reshaped(Trace* t, const TensorC* tensor, const TensorC* output,
                              Arg* out) noexcept nogil:
    cdef int rc = _regs_update(&t.res.outputs, tensor, &t.log)
    if rc != 0:
        return rc
    return _block_input_reshaped(t.current, t.res, tensor, output, &t.log, out)


cdef int trace_scalar(Trace* t, int64_t placeholder, bint is_int, uint8_t ty,
                      Arg* out) noexcept nogil:
    """A scalar operand; ``placeholder`` is the relative op's scalar id (never deduped)."""
    cdef ScalarRec* slot
    if not is_int:
        return E_SCALAR_TYPE
    slot = <ScalarRec*>vec_push(&t.res.scalars, &t.log)
    if slot == NULL:
        return E_NOMEM
    slot.placeholder = placeholder
    slot.ty = ty
    out[0] = _arg(ARG_SCALAR, ty, t.res.scalars.len - 1)
    return 0


cdef int _set_shape(Vec* v, const int64_t* shape, Py_ssize_t rank) noexcept nogil:
    cdef Py_ssize_t i
    v.len = 0
    if vec_reserve(v, rank) < 0:
        return E_NOMEM
    for i in range(rank):
        (<int64_t*>v.data)[i] = shape[i]
    v.len = rank
    return 0


cdef int trace_next_block(Trace* t, const int64_t* shape_ref, Py_ssize_t rank,
                          int32_t settings) noexcept nogil:
    """Close the current block with ``shape_ref`` and open one with ``settings`` (never
    inside a trial: blocks are not undone)."""
    cdef Block* opened
    cdef Block** slot
    if _set_shape(&t.current.shape_ref, shape_ref, rank) != 0:
        return E_NOMEM
    opened = block_new(settings)
    if opened == NULL:
        return E_NOMEM
    slot = <Block**>vec_push(&t.previous, NULL)
    if slot == NULL:
        block_decref(opened)
        return E_NOMEM
    slot[0] = t.current
    t.current = opened
    t.settings = settings
    return 0


cdef int trace_block_local_input(Trace* t, const TensorC* tensor, int64_t block_pos,
                                 bint global_, Arg* out) noexcept nogil:
    """Hand ``tensor`` from block ``block_pos`` to the current block."""
    cdef int64_t index = block_pos + t.previous.len if block_pos < 0 else block_pos
    cdef Block* b
    cdef Arg scratch
    cdef bint found
    cdef int rc
    if index < 0 or index >= t.previous.len:
        return E_BLOCK_POS
    b = _previous(t, index)
    rc = _block_multi_block_variable(b, block_pos, tensor, global_, &t.log, out, &found)
    if rc == 0 and not found:
        rc = _block_input(b, t.res, tensor, &t.log, &scratch)  # read it there first
        if rc != 0:
            return rc
        rc = _block_multi_block_variable(b, block_pos, tensor, global_, &t.log, out, &found)
        if rc == 0 and not found:
            t.err_a = tensor.id
            t.err_b = block_pos
            return E_NO_VALUE
    if rc == 0:
        rc = _regs_update(&t.res.outputs, tensor, &t.log)
    if rc == 0 and global_:
        rc = _keyed_set(&t.res.registers, tensor.id, out, &t.log)
    if rc == 0:
        rc = _keyed_set(&t.current.local_inputs, tensor.id, out, &t.log)
    return rc


cdef int trace_output_nhwc_layout(Trace* t, int64_t tensor_id, const int64_t* permutation,
                                  Py_ssize_t rank) noexcept nogil:
    """Ask for ``tensor`` to be written channels-last when it is written."""
    cdef Py_ssize_t off
    cdef ViewRec* view
    if _dims_append(t.res, permutation, rank, &t.log, &off) != 0:
        return E_NOMEM
    view = <ViewRec*>vec_push(&t.res.views, &t.log)
    if view == NULL:
        return E_NOMEM
    view.kind = VIEW_NHWC
    view.a = tensor_id
    view.dims_off = off
    view.rank = <int32_t>rank
    return 0


# --- boundary: C -> refimpl objects ------------------------------------------------------------
# Objects are built with ``make_frozen`` (no Python-level ``__init__``), and the common FuseArgs
# (locals, inputs, outputs, scalars at small positions) and the FuseOps made only of them are
# interned: they are immutable, so sharing them changes nothing but the time (docs/fastplan.md).

# Each class built here has its slot offsets found once (``_Frozen``): ``_make`` fills a new
# instance at them, as ``make_frozen`` does, without looking the class up in a dict (twice: the
# field names here, the layout in fastplan.stream.relative), most of the cost of a small object.
cdef enum:
    _MAX_SLOTS = 12  # fields of the largest class built here (FuseResources: 11)


ctypedef struct _Frozen:
    PyObject* cls  # borrowed: the class is held by this module's globals
    Py_ssize_t n
    Py_ssize_t off[_MAX_SLOTS]


cdef int _frozen_init(_Frozen* f, type cls) except -1:
    cdef Py_ssize_t i
    names = tuple([field.name for field in dataclasses.fields(cls)])
    if len(names) > _MAX_SLOTS:  # (a __post_init__ is not run: make_frozen ran none either)
        raise TypeError(f"fastplan.engine.builder cannot build {cls.__name__} by its slots")
    f.cls = <PyObject*>cls
    f.n = len(names)
    for i in range(f.n):
        f.off[i] = field_offset(cls, names[i])  # TypeError where a field is no slot
    return 0


cdef _Frozen _F_BLOCK_LOCAL, _F_INPUT, _F_OUTPUT, _F_SCALAR, _F_SCALAR_SHAPE, _F_LITERAL
cdef _Frozen _F_MB_LOCAL, _F_MB_GLOBAL, _F_MB_POS, _F_RESHAPED, _F_SWAPPED, _F_FUSE_OP
cdef _Frozen _F_BLOCK, _F_TRACE, _F_RESOURCES, _F_REGT, _F_RESHAPE_VIEW, _F_SWAP_VIEW
cdef _Frozen _F_NHWC_VIEW
cdef _Frozen _F_ARGS[7]  # by _ARGS_* kind
_frozen_init(&_F_BLOCK_LOCAL, BlockLocal)
_frozen_init(&_F_INPUT, Input)
_frozen_init(&_F_OUTPUT, Output)
_frozen_init(&_F_SCALAR, Scalar)
_frozen_init(&_F_SCALAR_SHAPE, ScalarShape)
_frozen_init(&_F_LITERAL, Literal)
_frozen_init(&_F_MB_LOCAL, MultiBlockLocal)
_frozen_init(&_F_MB_GLOBAL, MultiBlockGlobal)
_frozen_init(&_F_MB_POS, MultiBlockPos)
_frozen_init(&_F_RESHAPED, InputReshaped)
_frozen_init(&_F_SWAPPED, InputSwapDims)
_frozen_init(&_F_FUSE_OP, FuseOp)
_frozen_init(&_F_BLOCK, FuseBlock)
_frozen_init(&_F_TRACE, FuseTrace)
_frozen_init(&_F_RESOURCES, FuseResources)
_frozen_init(&_F_REGT, RegisteredTensor)
_frozen_init(&_F_RESHAPE_VIEW, ReshapeView)
_frozen_init(&_F_SWAP_VIEW, SwapDimsView)
_frozen_init(&_F_NHWC_VIEW, NhwcStridesView)
for _k, _cls in enumerate(_ARGS_CLASSES):
    _frozen_init(&_F_ARGS[_k], _cls)
# the classes _make2 builds
assert _F_REGT.n == _F_TRACE.n == _F_FUSE_OP.n == _F_BLOCK_LOCAL.n == _F_SCALAR.n == 2

# FuseType members by code, read without a module-global lookup (held by _FT)
cdef PyObject* _FT_PTR[NUM_FUSE_TYPES]
for _k in range(NUM_FUSE_TYPES):
    _FT_PTR[_k] = <PyObject*>_FT[_k]


cdef inline object _fuse_type(uint8_t ty):
    if ty >= NUM_FUSE_TYPES:
        raise SystemError(f"fastplan: unknown FuseType code {ty}")
    return <object>_FT_PTR[ty]

cdef enum:
    ARG_CACHE_POS = 256  # interned positions per kind and type
    ARG_CACHE_SIZE = 4 * NUM_FUSE_TYPES * ARG_CACHE_POS  # BlockLocal, Input, Output, Scalar
    OP_CACHE_BITS = 16  # interned FuseOps: a direct-mapped table of 2**16 entries
    OP_CACHE_SIZE = 1 << OP_CACHE_BITS

cdef PyObject* _ARG_CACHE[ARG_CACHE_SIZE]  # owned references, filled on first use
cdef int64_t _OP_KEYS[OP_CACHE_SIZE]  # the key of each entry (0: empty; keys are > 0)
cdef PyObject* _OP_VALUES[OP_CACHE_SIZE]  # owned references


cdef inline Py_ssize_t _arg_slot(const Arg* arg) noexcept nogil:
    """The interning slot of ``arg``, or -1 if it is not interned."""
    cdef Py_ssize_t kind
    if arg.kind == ARG_LOCAL:
        kind = 0
    elif arg.kind == ARG_SCALAR:
        kind = 3
    elif (arg.kind == ARG_INPUT or arg.kind == ARG_OUTPUT) and arg.layout == LAYOUT_UNKNOWN:
        kind = 1 if arg.kind == ARG_INPUT else 2
    else:
        return -1
    if arg.a < 0 or arg.a >= ARG_CACHE_POS or arg.ty >= NUM_FUSE_TYPES:
        return -1
    return (kind * NUM_FUSE_TYPES + arg.ty) * ARG_CACHE_POS + arg.a


cdef object _make(const _Frozen* f, tuple values):
    """An instance of ``f``'s class with these field values (``make_frozen``'s result)."""
    cdef Py_ssize_t i
    if len(values) != f.n:
        raise SystemError("fastplan.engine.builder: a frozen object's fields and values differ")
    obj = new_instance(<PyTypeObject*>f.cls)
    for i in range(f.n):
        set_slot(obj, f.off[i], values[i])
    return obj


cdef inline object _make2(const _Frozen* f, object a, object b):
    """``_make`` of a two-field class, without the values' tuple."""
    obj = new_instance(<PyTypeObject*>f.cls)
    set_slot(obj, f.off[0], a)
    set_slot(obj, f.off[1], b)
    return obj


cdef object _make_arg(const Arg* arg):
    cdef uint8_t kind = arg.kind
    cdef int64_t i
    ty = _FT[arg.ty]
    if kind == ARG_LOCAL:
        return _make(&_F_BLOCK_LOCAL, (arg.a, ty))
    if kind == ARG_INPUT:
        return _make(&_F_INPUT, (arg.a, ty, _LAYOUTS[arg.layout]))
    if kind == ARG_OUTPUT:
        return _make(&_F_OUTPUT, (arg.a, ty, _LAYOUTS[arg.layout]))
    if kind == ARG_SCALAR:
        return _make(&_F_SCALAR, (arg.a, ty))
    if kind == ARG_MB_LOCAL or kind == ARG_MB_GLOBAL:
        pos = _make(&_F_MB_POS, (arg.a, arg.b))
        return _make(&_F_MB_LOCAL if kind == ARG_MB_LOCAL else &_F_MB_GLOBAL, (pos, ty))
    if kind == ARG_LITERAL:
        return _make(&_F_LITERAL, (arg.a, ty))
    if kind == ARG_SCALAR_SHAPE:
        return _make(&_F_SCALAR_SHAPE, (arg.a,))
    original = _make(&_F_INPUT, (arg.a, ty, _LAYOUTS[arg.layout]))
    if kind == ARG_RESHAPED:
        shape = tuple([_make(&_F_SCALAR_SHAPE, (arg.b + i,)) for i in range(arg.c)])
        return _make(&_F_RESHAPED, (original, shape, bool(arg.broadcasted)))
    if kind == ARG_SWAPPED:
        return _make(&_F_SWAPPED, (original, (arg.b, arg.c), bool(arg.broadcasted)))
    raise SystemError(f"fastplan: unknown FuseArg kind {kind}")


cdef object arg_to_py(const Arg* arg):
    """The refimpl ``FuseArg`` an ``Arg`` stands for."""
    cdef Py_ssize_t slot = _arg_slot(arg)
    cdef PyObject* cached
    cdef object value
    if slot < 0:
        return _make_arg(arg)
    cached = _ARG_CACHE[slot]
    if cached != NULL:
        return <object>cached
    value = _make_arg(arg)
    Py_INCREF(value)
    _ARG_CACHE[slot] = <PyObject*>value
    return value


cdef object _fuse_op_py(uint8_t name, int kind, const Arg* args, Py_ssize_t nargs,
                        object extra):
    """``FuseOp(FUSE_OP_NAMES[name], <args struct>(args..., extra))``, interned when every
    arg is and there is no ``extra`` (Gather/Select dim, Cat inputs)."""
    cdef Py_ssize_t i, slot, entry = 0
    cdef int64_t key = name + 1
    cdef uint64_t mixed
    cdef bint interned = extra is None
    for i in range(nargs):
        slot = _arg_slot(&args[i]) if interned else -1
        interned = slot >= 0
        key = key * ARG_CACHE_SIZE + slot
    if interned:
        mixed = <uint64_t>key * <uint64_t>0x9E3779B97F4A7C15  # Fibonacci hashing
        entry = <Py_ssize_t>(mixed >> (64 - OP_CACHE_BITS))
        if _OP_KEYS[entry] == key:
            return <object>_OP_VALUES[entry]
    values = [arg_to_py(&args[i]) for i in range(nargs)]
    if kind == _ARGS_CAT:
        values.insert(0, extra[0])
        values.append(extra[1])
    elif extra is not None:
        values.append(extra)
    op = _make2(&_F_FUSE_OP, FUSE_OP_NAMES[name], _make(&_F_ARGS[kind], tuple(values)))
    if interned:  # the entry's previous FuseOp (another key) is let go
        Py_INCREF(op)
        Py_XDECREF(_OP_VALUES[entry])
        _OP_VALUES[entry] = <PyObject*>op
        _OP_KEYS[entry] = key
    return op


cdef int _input_from_py(object value, Arg* out) except -1:
    if type(value) is not Input:
        raise TypeError(f"expected an Input, not {type(value).__name__}")
    out.a = value.pos
    out.ty = int(value.ty)
    out.layout = _LAYOUT_CODE[value.layout]
    return 0


cdef int arg_from_py(object value, Arg* out) except -1:
    """The ``Arg`` of a refimpl ``FuseArg`` (the ``def`` twins that take FuseOps)."""
    cdef type kind = type(value)
    cdef Py_ssize_t i
    out[0] = _arg(ARG_NONE, 0, 0)
    if kind is BlockLocal or kind is Scalar or kind is Literal:
        out.kind = ARG_LOCAL if kind is BlockLocal else ARG_SCALAR if kind is Scalar \
            else ARG_LITERAL
        out.a = value.pos if kind is BlockLocal else value.index if kind is Scalar \
            else value.value
        out.ty = int(value.ty)
    elif kind is Input or kind is Output:
        _input_from_py(Input(value.pos, value.ty, value.layout), out)
        out.kind = ARG_INPUT if kind is Input else ARG_OUTPUT
    elif kind is MultiBlockLocal or kind is MultiBlockGlobal:
        out.kind = ARG_MB_LOCAL if kind is MultiBlockLocal else ARG_MB_GLOBAL
        out.a = value.pos.block_pos
        out.b = value.pos.block_local_pos
        out.ty = int(value.ty)
    elif kind is ScalarShape:
        out.kind = ARG_SCALAR_SHAPE
        out.a = value.index
        out.ty = FT_U32
    elif kind is InputReshaped:
        _input_from_py(value.original, out)
        out.kind = ARG_RESHAPED
        shape = value.shape
        out.c = len(shape)
        out.b = shape[0].index if len(shape) else 0
        for i in range(len(shape)):
            if type(shape[i]) is not ScalarShape or shape[i].index != out.b + i:
                raise ValueError("fastplan holds an InputReshaped shape as consecutive "
                                 "ScalarShape indices")
        out.broadcasted = bool(value.broadcasted)
    elif kind is InputSwapDims:
        _input_from_py(value.original, out)
        out.kind = ARG_SWAPPED
        out.b, out.c = value.dims
        out.broadcasted = bool(value.broadcasted)
    else:
        raise TypeError(f"expected a FuseArg, not {kind.__name__}")
    return 0


cdef object _fop_to_py(const FOp* f, const Block* b):
    cdef int kind = _ARGS_OF[f.name]
    cdef const Arg* cat = <const Arg*>b.cat.data
    cdef Py_ssize_t i
    if kind == _ARGS_GATHER or kind == _ARGS_SELECT:
        return _fuse_op_py(f.name, kind, f.args, 3, f.dim)
    if kind == _ARGS_CAT:
        inputs = tuple([arg_to_py(&cat[f.cat_off + i]) for i in range(f.cat_len)])
        return _fuse_op_py(f.name, kind, f.args, 1, (inputs, f.dim))
    return _fuse_op_py(f.name, kind, f.args, _NARGS[kind], None)


cdef int fop_from_py(object op, FOp* out, list cat) except -1:
    """The ``FOp`` of a refimpl ``FuseOp``; a Cat's inputs (FuseArgs) are appended to
    ``cat`` for the caller to convert."""
    cdef Py_ssize_t i
    cdef int kind
    if type(op) is not FuseOp:
        raise TypeError(f"expected a FuseOp, not {type(op).__name__}")
    memset(out, 0, sizeof(FOp))
    code = FUSE_OP_CODE.get(op.name)
    if code is None:
        raise ValueError(f"unknown FuseOp {op.name!r}")
    out.name = code
    kind = _ARGS_OF[code]
    out.nargs = _NARGS[kind]
    out.dim = 0
    args = op.args
    if kind == _ARGS_UNARY:
        fields = (args.input, args.out)
    elif kind == _ARGS_BINARY:
        fields = (args.lhs, args.rhs, args.out)
    elif kind == _ARGS_CLAMP:
        fields = (args.input, args.min, args.max, args.out)
    elif kind == _ARGS_COND:
        fields = (args.cond, args.lhs, args.rhs, args.out)
    elif kind == _ARGS_CAT:
        fields = (args.output,)
        out.dim = args.dim
        cat.extend(args.inputs)
    else:
        fields = (args.input, args.indices, args.output)
        out.dim = args.dim
    for i in range(len(fields)):
        arg_from_py(fields[i], &out.args[i])
    return 0


cdef object _regt_to_py(const RegT* e, const Resources* r):
    cdef const int64_t* dims = <const int64_t*>r.dims.data
    cdef object tid = e.id
    tensor = new_tensor(tid, shape_tuple(&dims[e.dims_off], e.rank), dtype_of(e.dtype),
                        status_of(e.status))
    return _make2(&_F_REGT, tensor, _fuse_type(e.ty))


cdef tuple _regs_to_py(const Vec* v, const Resources* r):
    cdef Py_ssize_t i
    return tuple([_regt_to_py(&(<RegT*>v.data)[i], r) for i in range(v.len)])


cdef object _view_to_py(const ViewRec* v, const Resources* r):
    cdef const int64_t* dims = <const int64_t*>r.dims.data
    if v.kind == VIEW_SWAP:
        return _make(&_F_SWAP_VIEW, (v.a, v.b, (v.d1, v.d2)))
    shape = shape_tuple(&dims[v.dims_off], v.rank)
    if v.kind == VIEW_RESHAPE:
        return _make(&_F_RESHAPE_VIEW, (v.a, v.b, v.pos, shape))
    return _make(&_F_NHWC_VIEW, (v.a, shape))


cdef tuple _keyed_sorted(const Vec* v):
    cdef Keyed* e = <Keyed*>v.data
    cdef Py_ssize_t i
    if v.len == 0:
        return ()
    items = [(e[i].tid, arg_to_py(&e[i].arg)) for i in range(v.len)]
    return tuple(sorted(items, key=_first))


def _first(item):
    return item[0]


cdef tuple _args_to_py(const Vec* v):
    cdef Py_ssize_t i
    return tuple([arg_to_py(&(<Arg*>v.data)[i]) for i in range(v.len)])


cdef object _out_entry_to_py(const OutEntry* e, const Resources* r):
    cdef const Vec* source = &r.buffers if e.from_buffers == 1 else &r.outputs
    return _regt_to_py(&(<RegT*>source.data)[e.pos], r)


cdef object _resources_to_py(const Resources* r, object outputs):
    """``ResourcesBuilder.freeze``: ``outputs`` is the tuple of written tensors."""
    cdef ScalarRec* s = <ScalarRec*>r.scalars.data
    cdef Py_ssize_t i
    return _make(&_F_RESOURCES, (
        outputs,
        _regs_to_py(&r.inputs, r),
        tuple([(_fuse_type(s[i].ty), s[i].placeholder) for i in range(r.scalars.len)]),
        tuple([_view_to_py(&(<ViewRec*>r.views.data)[i], r) for i in range(r.views.len)]),
        _keyed_sorted(&r.indexed),
        tuple([(<int64_t*>r.inputs_unhandled.data)[i] for i in range(r.inputs_unhandled.len)]),
        _args_to_py(&r.outputs_unhandled),
        r.num_reshaped,
        tuple(sorted([(<int64_t*>r.dropped.data)[i] for i in range(r.dropped.len)])),
        _regs_to_py(&r.buffers, r),
        _keyed_sorted(&r.registers),
    ))


cdef void _stable_order(const Assign* e, Py_ssize_t n, Py_ssize_t* order) noexcept nogil:
    """``order``: 0..n-1 sorted by tensor id, registration order among equal ids."""
    cdef Py_ssize_t i, j, moving
    for i in range(n):
        moving = i
        j = i
        while j > 0 and e[order[j - 1]].tid > e[moving].tid:
            order[j] = order[j - 1]
            j -= 1
        order[j] = moving


cdef tuple _sorted_ops(const Vec* assigns):
    """burn's BTreeMap order: by tensor id, then registration."""
    cdef const Assign* e = <const Assign*>assigns.data
    cdef Py_ssize_t i, j, k, n = assigns.len
    cdef Py_ssize_t* order
    cdef Arg pair[2]
    cdef list groups = []
    if n == 0:
        return ()
    order = <Py_ssize_t*>mem_calloc(n, sizeof(Py_ssize_t))
    if order == NULL:
        raise MemoryError()
    try:
        _stable_order(e, n, order)
        i = 0
        while i < n:
            j = i
            while j < n and e[order[j]].tid == e[order[i]].tid:
                j += 1
            if j == i + 1:  # one op for the id (most groups): its tuple without a list
                pair[0] = e[order[i]].src
                pair[1] = e[order[i]].dst
                ops = (_fuse_op_py(_ASSIGN, _ARGS_UNARY, pair, 2, None),)
            else:
                ops_list = []
                for k in range(i, j):
                    pair[0] = e[order[k]].src
                    pair[1] = e[order[k]].dst
                    ops_list.append(_fuse_op_py(_ASSIGN, _ARGS_UNARY, pair, 2, None))
                ops = tuple(ops_list)
            groups.append((e[order[i]].tid, ops))
            i = j
        return tuple(groups)
    finally:
        mem_free(order)


cdef object _block_to_py(const Block* b, const Vec* writes):
    cdef Py_ssize_t i
    ops = tuple([_fop_to_py(&(<FOp*>b.ops.data)[i], b) for i in range(b.ops.len)])
    return _make(&_F_BLOCK, (settings_object(b.settings), ops,
                             shape_tuple(<int64_t*>b.shape_ref.data, b.shape_ref.len),
                             _sorted_ops(&b.reads), _sorted_ops(writes)))


cdef object _build_block(Block* b, Resources* r, Vec* outputs, Vec* buffers):
    cdef Vec writes
    cdef int rc
    vec_init(&writes, sizeof(Assign))
    rc = _block_build_writes(b, r, outputs, buffers, &writes)
    try:
        if rc != 0:
            raise_error(rc, 0, 0)
        return _block_to_py(b, &writes)
    finally:
        vec_free(&writes)


cdef object trace_finish(Trace* t, const int64_t* shape_ref, Py_ssize_t rank):
    """The trace: every block built, outputs = buffers then each block's written tensors."""
    cdef Vec outputs, buffers
    cdef Py_ssize_t i
    cdef Resources* r = t.res
    vec_init(&outputs, sizeof(OutEntry))
    vec_init(&buffers, sizeof(int64_t))
    try:
        for i in range(r.buffers.len):
            if _out_insert(&outputs, (<RegT*>r.buffers.data)[i].id,
                           (<RegT*>r.buffers.data)[i].ty, i, 1) < 0:
                raise MemoryError()
        blocks = [_build_block(_previous(t, i), r, &outputs, &buffers)
                  for i in range(t.previous.len)]
        _check(_set_shape(&t.current.shape_ref, shape_ref, rank), t)
        blocks.append(_build_block(t.current, r, &outputs, &buffers))
        written = tuple([_out_entry_to_py(&(<OutEntry*>outputs.data)[i], r)
                         for i in range(outputs.len)])
        return _make2(&_F_TRACE, tuple(blocks), _resources_to_py(r, written))
    finally:
        vec_free(&outputs)
        vec_free(&buffers)


# --- def twins -----------------------------------------------------------------------------------


cdef class LocalVariablePool:
    """burn ``LocalVariablePool``: block-local registers, numbered per kernel type.

    Mirrors refimpl.planner.engine.builder.LocalVariablePool.
    """

    def __cinit__(self):
        self.b = NULL

    def __init__(self, values=None):
        cdef Local* slot
        self.b = block_new(0)
        if self.b == NULL:
            raise MemoryError()
        if values is None:
            return
        for ty, ids in values.items():
            for tid, pos in ids.items():
                slot = <Local*>vec_push(&self.b.locals, NULL)
                if slot == NULL:
                    raise MemoryError()
                slot.tid, slot.pos, slot.ty = tid, pos, FuseType(ty)
            self.b.counts[FuseType(ty)] = len(ids)

    def __dealloc__(self):
        block_decref(self.b)

    def clone(self):
        other = LocalVariablePool()
        memcpy((<LocalVariablePool>other).b.counts, self.b.counts, sizeof(self.b.counts))
        vec_free(&(<LocalVariablePool>other).b.locals)
        if vec_copy(&(<LocalVariablePool>other).b.locals, &self.b.locals) < 0:
            raise MemoryError()
        return other

    def get(self, ty, tensor_id):
        cdef Py_ssize_t pos
        if ty not in _FT:
            return None  # refimpl: no dict for that type
        pos = _local_index(self.b, FuseType(ty), tensor_id)
        return None if pos < 0 else BlockLocal((<Local*>self.b.locals.data)[pos].pos, ty)

    def get_any_precision(self, tensor_id):
        """The local of ``tensor_id`` in any type, types visited in ``FuseType`` order."""
        cdef Py_ssize_t pos = _local_index_any(self.b, tensor_id)
        cdef Arg local
        if pos < 0:
            return None
        local = _local_arg(self.b, pos)
        return arg_to_py(&local)

    def create(self, ty, tensor_id):
        cdef Arg out
        _check(_locals_create(self.b, FuseType(ty), tensor_id, NULL, &out), NULL)
        return BlockLocal(out.a, ty)


cdef LocalVariablePool _pool_view(Block* b):
    cdef LocalVariablePool view = LocalVariablePool.__new__(LocalVariablePool)
    b.refs += 1
    view.b = b
    return view


cdef class ResourcesBuilder:
    """burn ``FuseResources`` while a trace is being built (mutable); ``freeze`` gives the
    trace's ``FuseResources``.

    Mirrors refimpl.planner.engine.builder.ResourcesBuilder.
    """

    def __cinit__(self):
        self.r = NULL

    def __init__(self):
        self.r = res_new()
        if self.r == NULL:
            raise MemoryError()

    def __dealloc__(self):
        res_decref(self.r)

    def clone(self):
        cdef ResourcesBuilder other = ResourcesBuilder.__new__(ResourcesBuilder)
        other.r = res_clone(self.r)
        if other.r == NULL:
            raise MemoryError()
        return other

    def freeze(self, outputs):
        """The finished trace's resources, with ``outputs`` = the tensors actually written."""
        return _resources_to_py(self.r, outputs.freeze())

    @property
    def num_reshaped(self):
        return self.r.num_reshaped


cdef ResourcesBuilder _resources_view(Resources* r):
    cdef ResourcesBuilder view = ResourcesBuilder.__new__(ResourcesBuilder)
    r.refs += 1
    view.r = r
    return view


cdef Resources* _resources_of(object resources) except NULL:
    return (<ResourcesBuilder?>resources).r


cdef object _result(int rc, const Arg* out, Trace* t):
    if rc != 0:
        _check(rc, t)
    return arg_to_py(out)


cdef int _buffers_in(object buffers, Vec* v) except -1:
    for tid in buffers:
        if _push_id(v, tid, NULL) != 0:
            raise MemoryError()
    return 0


cdef object _buffers_out(object buffers, const Vec* v, Py_ssize_t start):
    cdef Py_ssize_t i
    for i in range(start, v.len):
        buffers.append((<int64_t*>v.data)[i])


cdef class FuseBlockBuilder:
    """burn ``FuseBlockBuilder``: the locals, ops, reads and writes of one block.

    Mirrors refimpl.planner.engine.builder.FuseBlockBuilder.
    """

    def __cinit__(self):
        self.b = NULL

    def __init__(self, settings):
        self.b = block_new(settings_code(settings))
        if self.b == NULL:
            raise MemoryError()

    def __dealloc__(self):
        block_decref(self.b)

    def clone(self):
        cdef FuseBlockBuilder other = FuseBlockBuilder.__new__(FuseBlockBuilder)
        other.b = block_clone(self.b)
        if other.b == NULL:
            raise MemoryError()
        return other

    @property
    def settings(self):
        return settings_object(self.b.settings)

    @property
    def shape_ref(self):
        return shape_tuple(<int64_t*>self.b.shape_ref.data, self.b.shape_ref.len)

    @property
    def locals(self):
        return _pool_view(self.b)

    def output(self, tensor, resources):
        """The local an op writes ``tensor`` into (created, and registered as an output)."""
        cdef EncodedTensor t = encode_tensor(tensor)
        cdef Arg out
        return _result(_block_output(self.b, _resources_of(resources), &t.c, NULL, &out), &out,
                       NULL)

    def multi_block_variable(self, block_pos, tensor, global_):
        """Share this block's value of ``tensor`` with later blocks (``None``: no local)."""
        cdef EncodedTensor t = encode_tensor(tensor)
        cdef Arg out
        cdef bint found
        _check(_block_multi_block_variable(self.b, block_pos, &t.c, global_, NULL, &out,
                                           &found), NULL)
        return arg_to_py(&out) if found else None

    def input(self, tensor, resources):
        """The local holding ``tensor``'s value, adding a global read on first use."""
        cdef EncodedTensor t = encode_tensor(tensor)
        cdef Arg out
        return _result(_block_input(self.b, _resources_of(resources), &t.c, NULL, &out), &out,
                       NULL)

    def input_swap_dims(self, tensor, output, dims, resources):
        """Read ``tensor`` a second time, with two dims swapped, into ``output``'s local."""
        cdef EncodedTensor t = encode_tensor(tensor)
        cdef EncodedTensor o = encode_tensor(output)
        cdef Arg out
        d0, d1 = dims
        return _result(_block_input_swap_dims(self.b, _resources_of(resources), &t.c, &o.c,
                                              d0, d1, NULL, &out), &out, NULL)

    def input_reshaped(self, tensor, output, resources):
        """Read ``tensor`` a second time, reshaped, into ``output``'s local."""
        cdef EncodedTensor t = encode_tensor(tensor)
        cdef EncodedTensor o = encode_tensor(output)
        cdef Arg out
        return _result(_block_input_reshaped(self.b, _resources_of(resources), &t.c, &o.c,
                                             NULL, &out), &out, NULL)

    def tensor_writes(self, resources, buffers):
        """The outputs of this block that must reach global memory (latest snapshots).

        ``buffers`` collects the buffer tensors already written by an earlier block.
        """
        cdef Resources* r = _resources_of(resources)
        cdef Vec ids, written
        cdef int64_t count
        cdef Py_ssize_t i, start
        vec_init(&ids, sizeof(int64_t))
        vec_init(&written, sizeof(Py_ssize_t))
        try:
            _buffers_in(buffers, &ids)
            start = ids.len
            _check(_block_tensor_writes(self.b, r, &ids, &written, &count), NULL)
            _buffers_out(buffers, &ids, start)
            result = RegisteredTensors()
            for i in range(written.len):
                entry = _regt_to_py(&(<RegT*>r.outputs.data)[(<Py_ssize_t*>written.data)[i]], r)
                result.insert(entry.ty, entry.tensor)
            return result
        finally:
            vec_free(&ids)
            vec_free(&written)

    def build(self, resources, outputs, buffers):
        """The finished block; registers its written tensors in ``outputs``."""
        cdef Resources* r = _resources_of(resources)
        cdef Vec ids, entries
        cdef OutEntry* e
        cdef Py_ssize_t i, start, known
        vec_init(&ids, sizeof(int64_t))
        vec_init(&entries, sizeof(OutEntry))
        try:
            _buffers_in(buffers, &ids)
            start = ids.len
            for entry in outputs:
                if _out_insert(&entries, entry.tensor.id, int(entry.ty), -1, 2) < 0:
                    raise MemoryError()
            known = entries.len
            block = _build_block(self.b, r, &entries, &ids)
            _buffers_out(buffers, &ids, start)
            for i in range(known, entries.len):
                e = &(<OutEntry*>entries.data)[i]
                entry = _out_entry_to_py(e, r)
                outputs.insert(entry.ty, entry.tensor)
            return block
        finally:
            vec_free(&ids)
            vec_free(&entries)


cdef FuseBlockBuilder _block_view(Block* b):
    cdef FuseBlockBuilder view = FuseBlockBuilder.__new__(FuseBlockBuilder)
    b.refs += 1
    view.b = b
    return view


cdef object trace_handle(Trace* t):
    """A ``TraceFuser`` showing ``t`` (it holds a reference)."""
    cdef TraceFuser view = TraceFuser.__new__(TraceFuser)
    t.refs += 1
    view.t = t
    return view


cdef int64_t* _shape_in(object shape, Vec* v) except NULL:
    """A Python shape tuple as int64 values in ``v``."""
    if vec_reserve(v, len(shape) + 1) < 0:
        raise MemoryError()
    for d in shape:
        (<int64_t*>v.data)[v.len] = d
        v.len += 1
    return <int64_t*>v.data


cdef class TraceFuser:
    """burn ``TraceFuser``: the current block, the closed blocks and the shared resources.

    Mirrors refimpl.planner.engine.builder.TraceFuser.
    """

    def __cinit__(self):
        self.t = NULL

    def __init__(self, settings):
        self.t = trace_new(settings_code(settings))
        if self.t == NULL:
            raise MemoryError()

    def __dealloc__(self):
        trace_decref(self.t)

    def clone(self):
        cdef TraceFuser other = TraceFuser.__new__(TraceFuser)
        other.t = trace_clone(self.t)
        if other.t == NULL:
            raise MemoryError()
        return other

    @property
    def settings(self):
        return settings_object(self.t.settings)

    @property
    def block_current(self):
        return _block_view(self.t.current)

    @property
    def blocks_previous(self):
        cdef Py_ssize_t i
        return [_block_view(_previous(self.t, i)) for i in range(self.t.previous.len)]

    @property
    def resources(self):
        return _resources_view(self.t.res)

    def num_previous_blocks(self):
        return self.t.previous.len

    def fuse_dropped(self, tensor):
        """Record a ``Drop``: the tensor's latest status becomes its (``ReadWrite``) status."""
        cdef EncodedTensor t = encode_tensor(tensor)
        _check(trace_fuse_dropped(self.t, &t.c), self.t)

    def fuse_operation(self, op):
        cdef FOp f
        cdef list cat = []
        cdef Arg* args = NULL
        cdef Py_ssize_t i
        fop_from_py(op, &f, cat)
        args = <Arg*>mem_calloc(len(cat) + 1, sizeof(Arg))
        if args == NULL:
            raise MemoryError()
        try:
            for i in range(len(cat)):
                arg_from_py(cat[i], &args[i])
            _check(trace_fuse_operation(self.t, &f, args, len(cat)), self.t)
        finally:
            mem_free(args)

    def num_ops_fused(self):
        """Data ops in every block (reads, writes and drops are not counted)."""
        return trace_num_ops_fused(self.t)

    def next_block(self, shape_ref, settings):
        """Close the current block with ``shape_ref`` and open one with ``settings``."""
        cdef Vec shape
        cdef int32_t code = settings_code(settings)
        vec_init(&shape, sizeof(int64_t))
        try:
            _check(trace_next_block(self.t, _shape_in(shape_ref, &shape), len(shape_ref), code),
                   self.t)
        finally:
            vec_free(&shape)

    def estimate_bindings(self):
        """1 (metadata) + tensors written + tensors read; may over-count, never under-count."""
        cdef int64_t estimate
        _check(trace_estimate_bindings(self.t, &estimate), self.t)
        return estimate

    def num_multi_block_local_inputs(self):
        return trace_num_mb_local_inputs(self.t)

    def block_local_input(self, tensor, block_pos, global_):
        """Hand ``tensor`` from block ``block_pos`` to the current block."""
        cdef EncodedTensor t = encode_tensor(tensor)
        cdef Arg out
        return _result(trace_block_local_input(self.t, &t.c, block_pos, global_, &out), &out,
                       self.t)

    def output_nhwc_layout(self, tensor, permutation):
        """Ask for ``tensor`` to be written channels-last when it is written."""
        cdef Vec perm
        vec_init(&perm, sizeof(int64_t))
        try:
            _check(trace_output_nhwc_layout(self.t, tensor.id, _shape_in(permutation, &perm),
                                            len(permutation)), self.t)
        finally:
            vec_free(&perm)

    def output_unhandled(self, tensor):
        """An output the runner writes itself (matmul/reduce result)."""
        cdef EncodedTensor t = encode_tensor(tensor)
        cdef Arg out
        return _result(trace_output_unhandled(self.t, &t.c, &out), &out, self.t)

    def input_unhandled(self, tensor):
        """An input the runner reads itself (matmul/reduce operand, indexed input)."""
        cdef EncodedTensor t = encode_tensor(tensor)
        cdef Arg out
        return _result(trace_input_unhandled(self.t, &t.c, &out), &out, self.t)

    def input(self, tensor):
        cdef EncodedTensor t = encode_tensor(tensor)
        cdef Arg out
        return _result(trace_input(self.t, &t.c, &out), &out, self.t)

    def output(self, tensor):
        cdef EncodedTensor t = encode_tensor(tensor)
        cdef Arg out
        return _result(trace_output(self.t, &t.c, &out), &out, self.t)

    def input_indexed(self, tensor):
        """An input read by index (gather/select/cat): unvectorized, never also a plain
        input or an output of the trace."""
        cdef EncodedTensor t = encode_tensor(tensor)
        cdef Arg out
        return _result(trace_input_indexed(self.t, &t.c, &out), &out, self.t)

    def input_swap_dims(self, tensor, output, dims):
        cdef EncodedTensor t = encode_tensor(tensor)
        cdef EncodedTensor o = encode_tensor(output)
        cdef Arg out
        d0, d1 = dims
        return _result(trace_input_swap_dims(self.t, &t.c, &o.c, d0, d1, &out), &out, self.t)

    def input_reshaped(self, tensor, output):
        cdef EncodedTensor t = encode_tensor(tensor)
        cdef EncodedTensor o = encode_tensor(output)
        cdef Arg out
        return _result(trace_input_reshaped(self.t, &t.c, &o.c, &out), &out, self.t)

    def scalar(self, placeholder, dtype):
        """A scalar operand; ``placeholder`` is the relative op's scalar id (never deduped)."""
        cdef Arg out
        if type(placeholder) is not int:
            raise_error(E_SCALAR_TYPE, 0, 0)
        _check(trace_scalar(self.t, placeholder, True, _fuse_type_code(dtype), &out), self.t)
        return arg_to_py(&out)

    def finish(self, shape_ref):
        """The trace: every block built, outputs = buffers then each block's written tensors."""
        cdef Vec shape
        vec_init(&shape, sizeof(int64_t))
        try:
            return trace_finish(self.t, _shape_in(shape_ref, &shape), len(shape_ref))
        finally:
            vec_free(&shape)


cdef uint8_t _fuse_type_code(object dtype) except 255:
    return int(fuse_type_of(dtype))
