# cython: language_level=3
"""C structs of a trace under construction, and the lookups every builder module inlines
(declarations only: no module of its own).

burn counterpart: the state of ``FuseBlockBuilder``, ``LocalVariablePool`` and ``TraceFuser``
(``crates/burn-cubecl-fusion/src/engine/trace/{block,fuser}.rs``).
Mirrors the state of refimpl/planner/engine/builder.py (``FuseBlockBuilder``, ``ResourcesBuilder``,
``LocalVariablePool``, ``TraceFuser``) field by field; burn's BTreeMaps / refimpl's dicts
become vectors searched by tensor id and sorted by id when the trace is finished.

The builder is split along its seams: ``builder_alloc`` (the structs' lifecycle),
``builder_cores`` (the ``nogil`` cores: refimpl's methods on these structs),
``builder_boundary`` (codes and refimpl objects at the GIL boundary) and ``builder`` (the ``def``
twins of refimpl's classes). Conventions of the cores:

* they return 0 on success, a positive ``R_*`` reason when the op is refused (refimpl raises
  ``Refusal``), and a negative ``E_*`` error when refimpl raises another exception;
* a ``Log*`` argument (may be NULL) records every change so that a trial can be undone;
* ``Trace``, ``Block`` and ``Resources`` are reference counted (``refs``): the ``def`` classes
  that show them to Python hold a count, so a view never outlives its memory.
"""

from libc.stdint cimport int32_t, int64_t, uint8_t

from fastplan._vec cimport Log, Vec
from fastplan.stream.relative cimport TensorC

cdef enum:
    NUM_FUSE_TYPES = 13  # len(refimpl.planner.engine.fuse_ir.FuseType)
    FT_U32 = 10  # FuseType.U32 (the precision of a ScalarShape)
    LAYOUT_UNKNOWN = 2  # position of LayoutInfo.Unknown in tuple(LayoutInfo)

# refusal reasons (>0) and errors (<0) returned by the cores
cdef enum:
    R_NONE = 0
    R_INDEXED = 1  # "indexed input" (REFUSED_INDEXED)
    R_VIEW = 2  # "view" (REFUSED_VIEW)
    R_MAX_OPS = 3  # trace_fuser.REASON_MAX_OPS
    R_SHAPE = 4  # trace_fuser.REASON_SHAPE
    R_UNSUPPORTED_OP = 5  # trace_fuser.REASON_UNSUPPORTED_OP
    R_UNSUPPORTED_VARIANT = 6  # trace_fuser.REASON_UNSUPPORTED_VARIANT
    R_DROP_FIRST = 7  # trace_fuser.REASON_DROP_FIRST
    R_RESHAPE_RANK = 8  # trace_fuser.REASON_RESHAPE_RANK
    R_MAX_BINDINGS = 9  # trace_fuser.max_bindings_reason(est, max)
    R_NOT_MATMUL = 10  # matmul.REASON_NOT_MATMUL
    R_REDUCE_SHAPE = 11  # reduce.REASON_REDUCE_SHAPE
    R_REDUCE_CAPTURED = 12  # "reduce captured"
    E_NOMEM = -1  # MemoryError
    E_SCALAR_TYPE = -2  # TypeError: a scalar placeholder that is not an int
    E_INDEX = -3  # IndexError: output.shape[-1] of a rank-0 view output
    E_NO_VALUE = -4  # RuntimeError: tensor has no value in block
    E_OUTPUT_INDEXED = -5  # RuntimeError: output is already an indexed input
    E_INPUT_INDEXED = -6  # RuntimeError: input is already an indexed input
    E_BLOCK_POS = -7  # IndexError: no such previous block

# the FuseArg variants
cdef enum:
    ARG_NONE = 0
    ARG_INPUT = 1  # Input(a, ty, layout)
    ARG_OUTPUT = 2  # Output(a, ty, layout)
    ARG_LOCAL = 3  # BlockLocal(a, ty)
    ARG_MB_LOCAL = 4  # MultiBlockLocal(MultiBlockPos(a, b), ty)
    ARG_MB_GLOBAL = 5  # MultiBlockGlobal(MultiBlockPos(a, b), ty)
    ARG_SCALAR = 6  # Scalar(a, ty)
    ARG_SCALAR_SHAPE = 7  # ScalarShape(a)
    ARG_LITERAL = 8  # Literal(a, ty)
    ARG_RESHAPED = 9  # InputReshaped(Input(a, ty, layout), ScalarShape(b .. b+c-1), bc)
    ARG_SWAPPED = 10  # InputSwapDims(Input(a, ty, layout), (b, c), broadcasted)

# the TensorView variants
cdef enum:
    VIEW_RESHAPE = 0  # ReshapeView(a, b, pos, dims)
    VIEW_SWAP = 1  # SwapDimsView(a, b, (d1, d2))
    VIEW_NHWC = 2  # NhwcStridesView(a, dims)


ctypedef struct Arg:
    uint8_t kind  # ARG_*
    uint8_t ty  # FuseType (views: the original input's)
    uint8_t layout  # Input/Output (views: the original's): position in tuple(LayoutInfo)
    uint8_t broadcasted  # views: the output's last dim is size 1
    int64_t a  # pos / index / value / block_pos / the original input's pos
    int64_t b  # block_local_pos / first ScalarShape index / dims[0]
    int64_t c  # reshape rank / dims[1]


ctypedef struct FOp:
    uint8_t name  # position in FUSE_OP_NAMES
    uint8_t nargs  # entries of args in use
    int64_t dim  # Gather / Select / Cat
    Py_ssize_t cat_off  # Cat: its inputs are cat_len entries of the block's ``cat``
    Py_ssize_t cat_len
    Arg args[4]  # the args struct's FuseArg fields in order (Cat: the output only)


ctypedef struct Assign:
    int64_t tid  # the tensor read or written (the key of burn's BTreeMap)
    Arg src  # FuseOp.assign(src, dst)
    Arg dst


ctypedef struct RegT:
    int64_t id  # RegisteredTensor.tensor.id
    Py_ssize_t dims_off  # its shape: rank entries of the resources' ``dims``
    int32_t rank
    uint8_t ty  # RegisteredTensor.ty
    uint8_t dtype  # the snapshot's DType (position in tuple(DType))
    uint8_t status  # the latest status (RegisteredTensors.update)


ctypedef struct Local:
    int64_t tid  # LocalVariablePool: tensor id -> pos, per type
    int64_t pos
    uint8_t ty


ctypedef struct Keyed:
    int64_t tid  # a dict entry tensor id -> FuseArg (indexed, registers, local_inputs)
    Arg arg


ctypedef struct ScalarRec:
    int64_t placeholder  # FuseResources.scalars: (ty, placeholder)
    uint8_t ty


ctypedef struct ViewRec:
    uint8_t kind  # VIEW_*
    int64_t a  # reshaped / swapped / id
    int64_t b  # original
    int64_t pos  # ReshapeView.reshape_pos
    int64_t d1  # SwapDimsView.dims
    int64_t d2
    Py_ssize_t dims_off  # shape_relative / stride_relayout in the resources' dims
    int32_t rank


ctypedef struct BlockOut:
    int64_t id  # a tensor this block produces (FuseBlockBuilder.outputs)
    Py_ssize_t hint  # where it last was in the resources' outputs (checked before use)
    uint8_t ty


ctypedef struct OutEntry:
    int64_t id  # an entry of the ``outputs`` RegisteredTensors built by finish
    Py_ssize_t pos  # its snapshot: resources.outputs[pos] or resources.buffers[pos]
    uint8_t from_buffers  # 1: pos is in resources.buffers; 2: given by Python (def build)
    uint8_t ty


ctypedef struct Resources:
    int refs
    Vec outputs  # RegT: every tensor an op of the trace produced
    Vec inputs  # RegT: every tensor read from global memory
    Vec dims  # int64: shapes of the RegTs and views
    Vec scalars  # ScalarRec
    Vec views  # ViewRec
    Vec indexed  # Keyed: tensors read by index (gather/select/cat)
    Vec inputs_unhandled  # int64 ids
    Vec outputs_unhandled  # Arg
    int64_t num_reshaped
    Vec dropped  # int64 ids, insertion order (an ordered set)
    Vec buffers  # RegT: outputs of earlier blocks read back by a later one
    Vec registers  # Keyed


ctypedef struct Block:
    int refs
    int32_t settings  # settings code (builder.settings_object)
    Vec locals  # Local
    int64_t counts[NUM_FUSE_TYPES]  # locals per type: len(LocalVariablePool._values[ty])
    Vec ops  # FOp
    Vec cat  # Arg: the inputs of the block's Cat ops
    Vec reads  # Assign, registration order
    Vec writes  # Assign: multi-block writes, registration order
    int64_t write_keys  # distinct ids in writes: len(FuseBlockBuilder.writes)
    Vec outputs  # BlockOut
    Vec outputs_unhandled  # Arg
    Vec local_inputs  # Keyed: values received from earlier blocks
    Vec shape_ref  # int64


ctypedef struct Trace:
    int refs
    int32_t settings  # settings code of the current block
    Block* current
    Vec previous  # Block*
    Resources* res
    Log log  # the open trials' undo records
    int64_t err_a  # details of the last E_* error
    int64_t err_b


# --- lookups (inline in every module that reads the structs) ------------------------------------


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


cdef inline Block* _previous(const Trace* t, Py_ssize_t i) noexcept nogil:
    return (<Block**>t.previous.data)[i]
