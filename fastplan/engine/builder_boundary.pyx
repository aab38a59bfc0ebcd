# cython: language_level=3
"""The GIL boundary of trace building: codes for refimpl's values, and the finished trace,
block and resources as refimpl's objects.

burn counterpart: none (burn's trace is its own Rust value; refimpl builds its dataclasses
directly). Part of fastplan's twin of ``refimpl/planner/engine/builder.py`` (the split:
``fastplan/engine/builder_structs.pxd``): FuseArgs, FuseOps, blocks and resources are refimpl's
dataclasses, built only here (``arg_to_py``, ``trace_finish``) and filled at their slot offsets
(``_Frozen``, ``_make``); the emitted order (sorted by id, then registration) is rebuilt by
``trace_finish`` exactly as refimpl's ``_sorted_ops`` does. Settings and refusal reasons are
interned as codes the cores carry.
"""

from libc.stdint cimport int32_t, int64_t, uint8_t, uint64_t
from libc.string cimport memset

from fastplan._vec cimport Vec, mem_calloc, mem_free, vec_free, vec_init
from cpython.object cimport PyTypeObject
from cpython.ref cimport Py_INCREF, Py_XDECREF, PyObject

from fastplan._keys cimport (
    dtype_of, field_offset, new_instance, new_tensor, set_slot, status_of,
)
from fastplan.engine.builder_cores cimport _out_insert, _block_build_writes, _set_shape
from fastplan.engine.builder_structs cimport (
    NUM_FUSE_TYPES, FT_U32, LAYOUT_UNKNOWN, R_NONE, R_MAX_BINDINGS, E_NOMEM, E_SCALAR_TYPE,
    E_INDEX, E_NO_VALUE, E_OUTPUT_INDEXED, E_INPUT_INDEXED, E_BLOCK_POS, ARG_NONE, ARG_INPUT,
    ARG_OUTPUT, ARG_LOCAL, ARG_MB_LOCAL, ARG_MB_GLOBAL, ARG_SCALAR, ARG_SCALAR_SHAPE,
    ARG_LITERAL, ARG_RESHAPED, ARG_SWAPPED, VIEW_RESHAPE, VIEW_SWAP, Arg, FOp, Assign, RegT,
    Keyed, ScalarRec, ViewRec, OutEntry, Resources, Block, Trace, _arg, _previous,
)
from fastplan.stream.relative cimport shape_tuple

import dataclasses

from refimpl.planner.engine import builder as _ref
from refimpl.planner.engine import trace_fuser as _ref_trace_fuser
from refimpl.planner.engine.builder import Refusal
from refimpl.planner.engine.trace import (
    BINARY_FUSE_OPS, UNARY_FUSE_OPS, BinaryFuseArgs, BlockLocal, CatArgs, ClampArgs,
    ConditionalAssignArgs, FuseBlock, FuseOp, FuseResources, FuseTrace, FuseType, GatherArgs,
    Input, InputReshaped, InputSwapDims, LayoutInfo, Literal, MultiBlockGlobal, MultiBlockLocal,
    MultiBlockPos, NhwcStridesView, Output, RegisteredTensor, ReshapeView, Scalar, ScalarShape,
    SelectArgs, SwapDimsView, UnaryFuseArgs,
)


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
