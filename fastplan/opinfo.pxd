# cython: language_level=3
"""C-level declarations of fastplan.opinfo: the op table every fastplan core reads."""

cimport cython
from libc.stdint cimport uint8_t


# Mirrors refimpl.ops.OpKind member for member (checked by tests/fastplan/test_opinfo_parity.py),
# so that cores can switch on an op's kind in C.
cpdef enum OpKindC:
    ELEMENTWISE = 0  # one output element per (broadcast) input element
    VIEW = 1  # reshape / swap_dims
    INDEXED = 2  # gather / select / cat
    REDUCE_DIM = 3  # per-axis reduction (ReduceFuser)
    REDUCE_FULL = 4  # reduction to shape [1]: never fused
    MATMUL = 5  # Float.Matmul
    MOVEMENT = 6  # permute, flip, expand, slice
    MODULE = 7  # pooling / interpolate
    INIT = 8  # tensor from host data
    DROP = 9  # release without a ReadWrite use
    OTHER = 10  # computed, but no fuser takes it


@cython.final
cdef class OpTable:
    cdef readonly Py_ssize_t size  # number of ops: len(refimpl.ops.OPS)
    cdef readonly const uint8_t[::1] kind  # OpKindC of each op, indexed by Op.code
    cdef readonly const uint8_t[::1] fuses  # 1 when the element-wise fuser emits a FuseOp
    cdef readonly const uint8_t[::1] struct_code  # index into refimpl.ir.OP_IR_STRUCTS
    cdef readonly const uint8_t[::1] family  # index into fastplan._pure.FAMILIES, or NO_FAMILY
