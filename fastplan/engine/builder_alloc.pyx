# cython: language_level=3
"""The lifecycle of a trace's C structs: new, clone, release, and the pool of traces.

burn counterpart: none (Rust owns and drops burn's builders; refimpl's are Python objects).
Part of fastplan's twin of ``refimpl/planner/engine/builder.py`` (see
``fastplan/engine/builder_structs.pxd`` for the split): ``Block``, ``Resources`` and ``Trace``
are reference counted; a trace whose last reference goes is cleared (``trace_clear``) and
pooled, up to 64 traces with their buffers (none holding more than 16 KiB), for ``trace_new``
and ``trace_clone``: the search makes and drops traces by the thousand. Only memory is kept,
never a trace's contents.
"""

from libc.stdint cimport int32_t, int64_t
from libc.string cimport memcpy, memset

from fastplan._vec cimport (
    UndoRec, Vec, mem_calloc, mem_free, vec_assign, vec_free, vec_init, vec_reserve,
)
from fastplan.engine.builder_structs cimport (
    E_NOMEM, Arg, FOp, Assign, RegT, Local, Keyed, ScalarRec, ViewRec, BlockOut, Resources,
    Block, Trace, _previous,
)


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
