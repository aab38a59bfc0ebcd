# cython: language_level=3
"""C-level declarations of fastplan.stream.relative: relative ops as C structs
(``OpC``/``TensorC``).

Every fastplan core reads an op through an ``EncodedOp``: the ``OperationIr`` it came from
(``source``) plus its tensors, INT fields and scalar placeholders as C values. The layout of
``tensors`` is the operand struct's SCHEMA order (``out`` included where it stands), e.g.
``BinaryOpIr`` -> [lhs, rhs, out], ``CatOpIr`` -> [t0, ..., tn-1, out], ``FullOpIr`` -> [out].
"""

from libc.stdint cimport int32_t, int64_t, uint8_t

cdef enum:
    # TensorC.status: the position in tuple(refimpl.ir.TensorStatus)
    NOT_INIT = 0
    READ_ONLY = 1
    READ_WRITE = 2
    MAX_INTS = 2  # INT fields of one struct (SwapDimsOpIr: dim1, dim2)
    MAX_SCALARS = 2  # SCALAR fields of one struct (ClampOpIr: min, max)
    SMALL_TENSORS = 4  # tensors stored inline in an EncodedOp
    SMALL_DIMS = 24  # dims stored inline in an EncodedOp / EncodedTensor


ctypedef struct TensorC:
    int64_t id  # relative tensor id
    int64_t* shape  # rank relative shape ids (owned by the EncodedOp / EncodedTensor)
    int32_t rank  # len(shape)
    uint8_t dtype  # position in tuple(refimpl.dtypes.DType)
    uint8_t ty  # int(refimpl.planner.engine.fuse_ir.fuse_type_of(dtype))
    uint8_t status  # NOT_INIT / READ_ONLY / READ_WRITE


ctypedef struct OpC:
    int32_t code  # Op.code: the row of fastplan.opinfo.OP_TABLE
    uint8_t kind  # OpKindC of the op
    uint8_t struct_code  # index into refimpl.ir.OP_IR_STRUCTS
    int32_t n_inputs  # len(operation.inputs())
    int32_t n_outputs  # len(operation.outputs())
    TensorC* tensors  # TENSOR / TENSORS fields in SCHEMA order
    int32_t n_tensors  # entries of tensors
    int64_t ints[MAX_INTS]  # INT fields in SCHEMA order (axis, dim, dim1, dim2)
    int64_t scalars[MAX_SCALARS]  # SCALAR fields in SCHEMA order (placeholders)
    uint8_t scalar_ok[MAX_SCALARS]  # 1 when that placeholder is an ``int`` (relative op)


cdef class EncodedOp:
    cdef OpC c  # the op as C values
    cdef readonly object source  # the OperationIr it encodes
    cdef TensorC small_tensors[SMALL_TENSORS]  # storage for c.tensors when it fits
    cdef int64_t small_dims[SMALL_DIMS]  # storage for the shapes when they fit
    cdef void* heap  # otherwise one allocation holding tensors then dims


cdef class EncodedTensor:
    cdef TensorC c  # one TensorIr as C values
    cdef readonly object source  # the TensorIr it encodes
    cdef int64_t small_dims[SMALL_DIMS]  # storage for the shape when it fits
    cdef int64_t* heap  # otherwise its allocation


cdef EncodedOp encode(object operation)
cdef EncodedOp encode_cached(object operation)
cdef EncodedOp encode_key(bytes key, object operation)
cdef void remember_encoded(EncodedOp encoded) except *
cdef EncodedTensor encode_tensor(object tensor)
cdef object tensor_ir(int64_t tensor_id, const int64_t* shape, int32_t rank, uint8_t dtype,
                      uint8_t status)
cdef object shape_tuple(const int64_t* shape, Py_ssize_t rank)
cdef object make_frozen(type cls, tuple names, tuple values)
cdef object new_frozen(type cls, tuple values)
