# cython: language_level=3
"""The ``nogil`` cores of trace building: refimpl's builder methods on the C structs.

burn counterpart: ``crates/burn-cubecl-fusion/src/engine/trace/block.rs``
(``FuseBlockBuilder``, ``LocalVariablePool``) and ``engine/trace/fuser.rs`` (``TraceFuser``);
notes §3.3, §3.6–§3.8.
Part of fastplan's twin of ``refimpl/planner/engine/builder.py`` (the split:
``fastplan/engine/builder_structs.pxd``): each core is the refimpl method of the same name on
the structs of ``builder_structs.pxd``, with its conventions (return codes, undo log).
refimpl's dicts keyed by tensor id are vectors searched by id here.

Invariants (shared with refimpl):

* A tensor produced in a block is a ``BlockLocal``; it is written to global memory iff its latest
  status in the trace is not ``ReadWrite`` (or a later block reads it back from a buffer).
* Reads and writes are kept per tensor id and emitted sorted by id (burn's BTreeMaps).
* ``estimate_bindings() = 1 + written outputs + inputs``; scalars are not counted.
"""

from libc.stdint cimport int32_t, int64_t, uint8_t
from libc.string cimport memcpy

from fastplan._vec cimport (
    Log, Vec, field_set, log_record, vec_copy, vec_free, vec_init, vec_push, vec_reserve,
    vec_set,
)
from fastplan.engine.builder_alloc cimport block_decref, block_new
from fastplan.engine.builder_structs cimport (
    R_INDEXED, R_VIEW, E_NOMEM, E_SCALAR_TYPE, E_INDEX, E_NO_VALUE, E_OUTPUT_INDEXED,
    E_INPUT_INDEXED, E_BLOCK_POS, ARG_INPUT, ARG_OUTPUT, ARG_LOCAL, ARG_MB_LOCAL, ARG_MB_GLOBAL,
    ARG_SCALAR, ARG_RESHAPED, ARG_SWAPPED, VIEW_RESHAPE, VIEW_SWAP, VIEW_NHWC, Arg, FOp, Assign,
    RegT, Local, Keyed, ScalarRec, ViewRec, BlockOut, OutEntry, Resources, Block, Trace,
    _regs_index, _keyed_index, _ids_index, _local_index, _local_index_any, _arg, _local_arg,
    _previous,
)
from fastplan.stream.relative cimport READ_WRITE, TensorC


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
