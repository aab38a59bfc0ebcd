# cython: language_level=3
"""Building a trace: ``FuseBlockBuilder`` (one block) and ``TraceFuser`` (blocks + resources).

burn counterpart: ``crates/burn-cubecl-fusion/src/engine/trace/block.rs``
(``FuseBlockBuilder``, ``LocalVariablePool``) and ``engine/trace/fuser.rs`` (``TraceFuser``);
notes §3.3, §3.6–§3.8.
Mirrors ``refimpl/planner/engine/builder.py``: same names, same order, same results. The ``def``
classes here are thin converters around the ``nogil`` cores of ``builder_cores``, which work on
the C structs of ``builder_structs.pxd``; ``builder_alloc`` holds the structs' lifecycle and
``builder_boundary`` the codes and refimpl objects at the GIL boundary.

Differs from refimpl:

* refimpl's dicts keyed by tensor id are vectors searched by id; the emitted order (sorted by
  id, then registration) is rebuilt by ``trace_finish`` exactly as ``_sorted_ops`` does;
* a refusal is a positive return code (refimpl raises ``Refusal``); the ``def`` twins raise
  the very same ``Refusal`` class;
* FuseArgs, FuseOps, blocks and resources are refimpl's dataclasses, built only at the
  boundary (``arg_to_py``, ``trace_finish``) and filled at their slot offsets;
* a trace whose last reference goes is cleared and pooled (``builder_alloc``): the search makes
  and drops traces by the thousand. Only memory is kept, never a trace's contents.

Invariants (shared with refimpl): ``builder_cores``.
"""

from libc.stdint cimport int32_t, int64_t, uint8_t
from libc.string cimport memcpy

from fastplan._vec cimport (
    Vec, mem_calloc, mem_free, vec_copy, vec_free, vec_init, vec_push, vec_reserve,
)

from fastplan.engine.builder_alloc cimport (
    block_new, block_clone, block_decref, res_new, res_clone, res_decref, trace_new,
    trace_clone, trace_decref,
)
from fastplan.engine.builder_boundary cimport (
    settings_code, settings_object, raise_error, _check, arg_to_py, arg_from_py, fop_from_py,
    _regt_to_py, _out_entry_to_py, _resources_to_py, _build_block, trace_finish,
)
from fastplan.engine.builder_cores cimport (
    _push_id, _locals_create, _block_output, _block_multi_block_variable, _block_input,
    _block_input_swap_dims, _block_input_reshaped, _block_tensor_writes, _out_insert,
    trace_num_ops_fused, trace_estimate_bindings, trace_num_mb_local_inputs, trace_fuse_dropped,
    trace_fuse_operation, trace_input, trace_output, trace_input_unhandled,
    trace_output_unhandled, trace_input_indexed, trace_input_swap_dims, trace_input_reshaped,
    trace_scalar, trace_next_block, trace_block_local_input, trace_output_nhwc_layout,
)
from fastplan.engine.builder_structs cimport (
    E_SCALAR_TYPE, Arg, FOp, RegT, Local, OutEntry, Resources, Block, Trace, _local_index,
    _local_index_any, _local_arg, _previous,
)
from fastplan.stream.relative cimport EncodedTensor, encode_tensor, shape_tuple

from refimpl.planner.engine.builder import Refusal
from refimpl.planner.engine.fuse_ir import fuse_type_of
from refimpl.planner.engine.trace import BlockLocal, FuseType, RegisteredTensors

__all__ = [
    "Refusal", "REFUSED_INDEXED", "REFUSED_VIEW", "LocalVariablePool", "ResourcesBuilder",
    "FuseBlockBuilder", "TraceFuser",
]

REFUSED_INDEXED = "indexed input"  # a tensor both indexed (gather/select/cat) and read/written
REFUSED_VIEW = "view"  # a view whose original is not an input already read in this block
_FT = tuple(FuseType)  # FuseType by value


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
