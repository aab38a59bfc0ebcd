# cython: language_level=3
"""C-level declarations of fastplan.launch_planners shared with the other launch twins: the
working state of one launch, read and written at its struct offsets."""

# ``dtype.storage_bytes`` from the DType members by pointer (refimpl's property otherwise).
cdef object storage_bytes(object dtype)


cdef class HandleInput:
    cdef public object relative, glob, precision, handle
    cdef public tuple strides
    cdef public Py_ssize_t vector_size
    cdef public bint broadcasted


cdef class HandleOutput:
    cdef public object relative, glob, precision, handle
    cdef public str kind
    cdef public object input_pos
    cdef public Py_ssize_t vectorization


cdef class ReferenceSelection:
    cdef public str kind
    cdef public object arg, shape, strides, dims, pos


cdef class BlockPlan:
    cdef public dict reads, writes
    cdef public ReferenceSelection reference
    cdef public Py_ssize_t width
    cdef public list inplaces
    cdef public object potential_ref
    cdef object permute_of  # the FuseBlock whose may_permute_layout ``permute`` holds
    cdef bint permute


cdef class PlanningState:
    cdef public object trace, context, memory
    cdef public Py_ssize_t rank
    cdef public list blocks, inputs, outputs, runtime_layouts
    cdef public dict vectorizations
    cdef bint walk  # planned for the stream walk only: no layout marks on the block ops


# A state's entries, type-checked (a state is public: its lists may hold anything).
cdef HandleInput input_at(list inputs, Py_ssize_t i)
cdef HandleOutput output_at(list outputs, Py_ssize_t i)
cdef BlockPlan block_at(list blocks, Py_ssize_t i)
# ``ReferenceSelection(kind, arg, shape, strides, dims, pos)`` without the call.
cdef ReferenceSelection new_reference(str kind, object arg, object shape, object strides,
                                      object dims, object pos)
# The input and output passes (``plan_inputs`` / ``plan_outputs``) as C calls.
cdef int plan_inputs_c(PlanningState state) except -1
cdef int plan_outputs_c(PlanningState state) except -1
