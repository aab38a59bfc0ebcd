# cython: language_level=3
"""Input and output planning of a launch: handles, in-place candidates, output layouts, the
reference layout of every block.

burn counterpart: ``burn-cubecl-fusion``'s ``engine/launch/{input,output,plan}.rs``.
Mirrors ``refimpl/planner/launch/launch_planners.py``: same names, same order, same results. The
working state (``PlanningState``, ``BlockPlan``, ``ReferenceSelection``, ``HandleInput``,
``HandleOutput``) is made of ``cdef class`` twins of refimpl's dataclasses, with the same
fields and constructors, read and written at their struct offsets by the launch twins
(``fastplan.launch.launch``, ``fastplan.launch.launch_vectorize``). The per-tensor layout rules are
fastplan.launch.layout's C cores. Split along burn's seam: the output planner (``output.rs``) is
``fastplan.launch.launch_planners_output``, which ``plan_outputs`` and ``may_permute_layout``
call.

Differs from refimpl:

* frozen values are built with their constructors, not ``dataclasses.replace``; an input
  whose shape is not unsqueezed keeps the context's exact ``TensorIr`` as its ``glob``
  (refimpl's ``replace`` makes an equal one);
* the state's entries are read by inline accessors (``input_at``, ``output_at``,
  ``block_at`` in launch_planners.pxd), anything unexpected indexed as Python does;
* the outputs' order sums shapes of one-digit ints and sorts up to 16 positions in C;
* for the stream walk (``state.walk``) the output planners mark no block op, and an input
  with nothing to unsqueeze keeps its shape and strides as they are.
"""

cimport cython

from dataclasses import replace

from cpython.object cimport PyTypeObject
from cpython.ref cimport PyObject

from fastplan._keys cimport FieldRead, field, field_read

cdef extern from *:
    # fastplan._keys' ``compact_int`` on a borrowed pointer (its C function, emitted with the
    # cimport)
    int _compact_at "fastplan_compact_int"(PyObject* o, long long* v) noexcept
    PyTypeObject PyLong_Type
from fastplan.launch.handles cimport Memory as PlanningMemory
from fastplan.launch.launch_planners_output cimport may_permute, plan_outputs_c
from fastplan.stream.relative cimport new_frozen

from refimpl.dtypes import DType
from refimpl.ir import TensorIr, TensorStatus
from refimpl.planner.engine.settings import RefLayoutMode
from refimpl.planner.engine.trace import (
    Input, LayoutInfo, Output, ReshapeView, SwapDimsView, UnaryFuseArgs,
)
from refimpl.planner.launch.handles import Handle, Memory

__all__ = ["PlanningState", "BlockPlan", "ReferenceSelection", "plan_inputs", "plan_outputs",
           "may_permute_layout"]

# Attribute reads of the hot paths, served from the slot of the type last read (_keys.field).
cdef FieldRead _ID = field_read("id")
cdef FieldRead _SHAPE = field_read("shape")
cdef FieldRead _DTYPE = field_read("dtype")
cdef FieldRead _STATUS = field_read("status")
cdef FieldRead _BUFFER = field_read("buffer")
cdef FieldRead _STRIDES = field_read("strides")
cdef FieldRead _TENSOR = field_read("tensor")
cdef FieldRead _TY = field_read("ty")
cdef FieldRead _SHAPE_REF = field_read("shape_ref")
cdef FieldRead _NAME = field_read("name")
cdef FieldRead _SETTINGS = field_read("settings")
cdef FieldRead _OPS = field_read("ops")
cdef FieldRead _OFFSET = field_read("offset")  # a Handle's
cdef FieldRead _RESOURCES = field_read("resources")  # a FuseTrace's
cdef FieldRead _BLOCKS = field_read("blocks")
cdef FieldRead _INPUTS = field_read("inputs")  # its resources'
cdef FieldRead _OUTPUTS = field_read("outputs")
cdef FieldRead _VIEWS = field_read("views")
cdef FieldRead _INDEXED = field_read("indexed")
cdef FieldRead _UNHANDLED = field_read("inputs_unhandled")
cdef FieldRead _DROPPED = field_read("dropped")
cdef FieldRead _TENSORS = field_read("tensors")  # the launch context's
cdef FieldRead _INPLACE = field_read("inplace")  # a FuseBlock's settings'
cdef FieldRead _REF_LAYOUT = field_read("ref_layout")
cdef FieldRead _REF_MODE = field_read("mode")  # the ref_layout setting's
cdef FieldRead _REF_BLOCK_POS = field_read("block_pos")
cdef FieldRead _CHOOSE_OUTPUT = field_read("choose_output_layout")
cdef object _READ_WRITE = TensorStatus.ReadWrite
cdef object _ANY = RefLayoutMode.Any
cdef object _SAME_AS_BLOCK = RefLayoutMode.SameAsBlock
cdef object _ONLY_CONTIGUOUS = RefLayoutMode.OnlyContiguous
cdef object _IS_REF = LayoutInfo.IsRef
cdef object _SAME_AS_REF = LayoutInfo.SameAsRef
cdef object _UNKNOWN = LayoutInfo.Unknown
cdef tuple _INDEXING = ("Gather", "Select", "Cat")
cdef frozenset _INDEXING_NAMES = frozenset(_INDEXING)  # one hash probe for an exact str
cdef tuple _FUSE_OP_FIELDS = ("name", "args")
# Input, Output, UnaryFuseArgs, Handle and TensorIr are frozen slots dataclasses whose
# ``__init__`` only assigns: built with ``new_frozen`` (the same objects, without the frozen
# ``__init__``'s ``object.__setattr__`` per field).
# DType.storage_bytes by member identity (the property goes through numpy and enum hashing;
# a scan of the few members by pointer makes no int object, as a dict keyed by id() would)
cdef tuple _DTYPES = tuple(DType)
cdef tuple _STORAGE_BYTES = tuple([d.storage_bytes for d in _DTYPES])


cdef object storage_bytes(object dtype):
    cdef Py_ssize_t i
    for i in range(len(_DTYPES)):
        if (<tuple>_DTYPES)[i] is dtype:
            return (<tuple>_STORAGE_BYTES)[i]
    return dtype.storage_bytes


# --- working state (burn LaunchPlan / BlockPlan / handles) --------------------------------------


@cython.freelist(64)  # the launch working state: made and dropped per launch
cdef class HandleInput:
    """burn ``HandleInput``: an input's handle as the launch fetched it.

    Mirrors refimpl.planner.launch.launch_planners.HandleInput.
    """

    def __init__(self, relative, glob, precision, handle, strides, vector_size=1,
                 broadcasted=False):
        self.relative, self.glob, self.precision, self.handle = relative, glob, precision, handle
        self.strides, self.vector_size, self.broadcasted = strides, vector_size, broadcasted


@cython.freelist(64)
cdef class HandleOutput:
    """burn ``HandleOutput``: an output's handle as the launch placed it.

    Mirrors refimpl.planner.launch.launch_planners.HandleOutput.
    """

    def __init__(self, relative, glob, precision, handle, kind, input_pos=None,
                 vectorization=1):
        self.relative, self.glob, self.precision, self.handle = relative, glob, precision, handle
        self.kind, self.input_pos, self.vectorization = kind, input_pos, vectorization


@cython.freelist(64)
cdef class ReferenceSelection:
    """burn ``ReferenceSelection``; ``kind`` names the variant.

    Mirrors refimpl.planner.launch.launch_planners.ReferenceSelection.
    """

    def __init__(self, kind="Searching", arg=None, shape=(), strides=(), dims=(0, 0), pos=0):
        self.kind, self.arg, self.shape, self.strides = kind, arg, shape, strides
        self.dims, self.pos = dims, pos

    def found(self):
        return self.kind != "Searching"

    def concrete(self):
        return (self.shape, self.strides) if self.kind == "Concrete" else None

    def __repr__(self):
        return (f"ReferenceSelection(kind={self.kind!r}, arg={self.arg!r}, shape={self.shape!r}, "
                f"strides={self.strides!r}, dims={self.dims!r}, pos={self.pos!r})")


cdef tuple _NO_DIMS = (0, 0)


@cython.freelist(64)
cdef class BlockPlan:
    """burn ``BlockPlan``: one block's reads and writes, reference layout and width.

    Mirrors refimpl.planner.launch.launch_planners.BlockPlan.
    """

    def __init__(self, reads, writes, reference=None, width=0, inplaces=None,
                 potential_ref=None):
        self.reads, self.writes = reads, writes
        self.reference = ReferenceSelection() if reference is None else reference
        self.width = width
        self.inplaces = [] if inplaces is None else inplaces
        self.potential_ref = potential_ref


@cython.freelist(64)
cdef class PlanningState:
    """burn ``LaunchPlan`` while it is planned: the trace, its context and memory, the blocks.

    Mirrors refimpl.planner.launch.launch_planners.PlanningState.
    """

    def __init__(self, trace, context, memory, rank, blocks, inputs=None, outputs=None,
                 runtime_layouts=None, vectorizations=None):
        self.trace, self.context, self.memory = trace, context, memory
        self.rank, self.blocks = rank, blocks
        self.inputs = [] if inputs is None else inputs
        self.outputs = [] if outputs is None else outputs
        self.runtime_layouts = [] if runtime_layouts is None else runtime_layouts
        self.vectorizations = {} if vectorizations is None else vectorizations


cdef object entry_at(list entries, Py_ssize_t i, type kind, str name):
    """``entries[i]`` as Python indexes it (negative from the end; past the end an
    ``IndexError``), checked to be a ``kind``: the state's lists are public."""
    cdef Py_ssize_t n = len(entries)
    if i < 0:
        i += n
    if not 0 <= i < n:
        raise IndexError("list index out of range")
    found = entries[i]
    if type(found) is not kind:
        raise TypeError(f"PlanningState.{name}[{i}]: expected a {kind.__name__}, "
                        f"got {type(found).__name__}")
    return found


cdef tuple _unsqueezed(tuple shape, tuple strides, Py_ssize_t rank):
    cdef Py_ssize_t missing = rank - len(shape)
    if missing <= 0:
        return shape, strides
    numel = 1
    for d in shape:
        numel *= d
    return (1,) * missing + shape, (numel,) * missing + strides


# --- InputPlanner ------------------------------------------------------------------------------


def plan_inputs(PlanningState state):
    """burn ``InputPlanner::run``: fetch every input's handle, find in-place and reference

    Mirrors refimpl.planner.launch.launch_planners.plan_inputs.
    """
    plan_inputs_c(state)


cdef int plan_inputs_c(PlanningState state) except -1:
    """``plan_inputs`` as a C call (``fastplan.launch.launch`` chains the passes without Python's
    calling convention)."""
    cdef Py_ssize_t pos
    cdef HandleInput item
    resources = field(state.trace, &_RESOURCES)
    memory = state.memory
    cdef bint fast_memory = type(memory) is PlanningMemory
    handles = None if fast_memory else memory.handles  # refimpl's: the live dict itself
    tensors = field(state.context, &_TENSORS)
    unhandled = field(resources, &_UNHANDLED)
    cdef list inputs = state.inputs
    cdef list fetched = []
    cdef Py_ssize_t rank = state.rank
    pos = 0
    for entry in field(resources, &_INPUTS):
        relative = field(entry, &_TENSOR)
        rid = field(relative, &_ID)
        glob = tensors[rid]
        gid = field(glob, &_ID)
        if fast_memory:
            handle = (<PlanningMemory>memory).take(gid, field(relative, &_STATUS))
        else:
            handle = memory.take(gid, field(relative, &_STATUS))
        buffer = field(handle, &_BUFFER)
        # burn ``can_mut``: no live handle and no input fetched before shares the buffer
        if fast_memory:
            can_mut = (<PlanningMemory>memory).users(buffer) == 0
        else:
            can_mut = True
            for other in handles.values():
                if other.buffer == buffer:
                    can_mut = False
                    break
        if can_mut:
            for other in fetched:
                if other.buffer == buffer:
                    can_mut = False
                    break
        fetched.append(handle)
        if rid not in unhandled:
            _analyze(state, pos, relative, handle, can_mut)
        glob_shape = field(glob, &_SHAPE)
        if type(glob_shape) is tuple and len(<tuple>glob_shape) >= rank:
            shape, strides = glob_shape, field(handle, &_STRIDES)  # none missing: as they are
            if strides is not None and type(strides) is not tuple:  # _unsqueezed's check
                raise TypeError(f"Argument 'strides' has incorrect type (expected tuple, got "
                                f"{type(strides).__name__})")
        else:
            shape, strides = _unsqueezed(glob_shape, field(handle, &_STRIDES), rank)
        item = HandleInput.__new__(HandleInput)
        item.relative = relative
        if shape is glob_shape and type(glob) is TensorIr:
            item.glob = glob  # refimpl's replace(glob, shape=shape): an equal frozen TensorIr
        else:
            item.glob = new_frozen(TensorIr, (gid, shape, field(glob, &_DTYPE),
                                              field(glob, &_STATUS)))
        item.precision, item.handle, item.strides = field(entry, &_TY), handle, strides
        item.vector_size, item.broadcasted = 1, False
        inputs.append(item)
        pos += 1
    return 0


cdef void _analyze(PlanningState state, Py_ssize_t pos, object relative, object handle,
                   bint can_mut) except *:
    cdef bint is_a_view = False
    cdef Py_ssize_t i
    cdef list blocks = state.blocks
    fuse_blocks = field(state.trace, &_BLOCKS)
    for view in field(field(state.trace, &_RESOURCES), &_VIEWS):
        for i in range(min(len(blocks), len(fuse_blocks))):  # zip's pairs
            if not is_a_view:
                is_a_view = _analyze_view(pos, relative, field(fuse_blocks[i], &_SHAPE_REF),
                                          block_at(blocks, i), view)
    if not is_a_view:
        _analyze_normal(state, pos, relative, handle, can_mut)


cdef bint _analyze_view(Py_ssize_t pos, object relative, tuple shape_ref, BlockPlan block,
                        object view) except -1:
    cdef type t = type(view)
    if t is ReshapeView:
        if relative.id == view.original or relative.id == view.reshaped:
            if block.potential_ref is None and view.shape_relative == shape_ref:
                block.potential_ref = ("Reshaped", view.reshape_pos)
            return True
    elif t is SwapDimsView:
        if view.swapped == relative.id:
            return True
        if view.original == relative.id:
            shape = list(relative.shape)
            a, b = view.dims
            shape[a], shape[b] = shape[b], shape[a]
            if block.potential_ref is None and tuple(shape) == shape_ref:
                block.potential_ref = ("SwapDims", pos, view.dims)
            return True
    return False


cdef void _analyze_normal(PlanningState state, Py_ssize_t pos, object relative, object handle,
                          bint can_mut) except *:
    cdef Py_ssize_t i, idx = -1, count = 0
    cdef list blocks = state.blocks
    cdef BlockPlan block
    rid = field(relative, &_ID)
    for i in range(len(blocks)):
        if rid in block_at(blocks, i).reads:
            idx = i
            count += 1
    if count != 1:
        return
    fuse_block = field(state.trace, &_BLOCKS)[idx]
    if field(fuse_block, &_SHAPE_REF) != field(relative, &_SHAPE):
        return
    block = block_at(blocks, idx)
    if field(relative, &_STATUS) is _READ_WRITE and \
            field(field(fuse_block, &_SETTINGS), &_INPLACE) and can_mut:
        block.inplaces.append((pos, relative, field(handle, &_STRIDES)))
    block.potential_ref = ("Normal", pos)


# --- OutputPlanner (``fastplan.launch.launch_planners_output``: burn's ``output.rs``) ---------


def may_permute_layout(settings, ops):
    """burn ``may_permute_layout``: a free reference, an opted-in runner, no indexing op.

    Mirrors refimpl.planner.launch.launch_planners.may_permute_layout.
    """
    return may_permute(settings, ops)


def plan_outputs(PlanningState state):
    """burn ``OutputPlanner::run``: place every output (fresh, in place or a view), then pick

    Mirrors refimpl.planner.launch.launch_planners.plan_outputs.
    """
    plan_outputs_c(state)
