# cython: language_level=3
"""C-level declarations of fastplan.launch.launch_planners shared with the other launch twins: the
working state of one launch, read and written at its struct offsets."""

from cpython.list cimport PyList_GET_SIZE
from cpython.object cimport PyTypeObject
from cpython.ref cimport PyObject

from fastplan._keys cimport _list_item

cdef extern from *:
    PyTypeObject* _type_of "Py_TYPE"(PyObject* o) noexcept

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


# A state's entries, type-checked (a state is public: its lists may hold anything). Inline:
# an entry in range and of its class is read through the list's borrowed pointer; anything
# else goes through ``entry_at`` (Python's indexing, from the end when negative, and its
# errors).
cdef object entry_at(list entries, Py_ssize_t i, type kind, str name)


cdef inline HandleInput input_at(list inputs, Py_ssize_t i):
    cdef PyObject* found
    if inputs is not None and 0 <= i < PyList_GET_SIZE(inputs):
        found = _list_item(<PyObject*>inputs, i)
        if _type_of(found) == <PyTypeObject*>HandleInput:
            return <HandleInput>found
    return <HandleInput>entry_at(inputs, i, HandleInput, "inputs")


cdef inline HandleOutput output_at(list outputs, Py_ssize_t i):
    cdef PyObject* found
    if outputs is not None and 0 <= i < PyList_GET_SIZE(outputs):
        found = _list_item(<PyObject*>outputs, i)
        if _type_of(found) == <PyTypeObject*>HandleOutput:
            return <HandleOutput>found
    return <HandleOutput>entry_at(outputs, i, HandleOutput, "outputs")


cdef inline BlockPlan block_at(list blocks, Py_ssize_t i):
    cdef PyObject* found
    if blocks is not None and 0 <= i < PyList_GET_SIZE(blocks):
        found = _list_item(<PyObject*>blocks, i)
        if _type_of(found) == <PyTypeObject*>BlockPlan:
            return <BlockPlan>found
    return <BlockPlan>entry_at(blocks, i, BlockPlan, "blocks")


cdef inline ReferenceSelection new_reference(str kind, object arg, object shape, object strides,
                                             object dims, object pos):
    """``ReferenceSelection(kind, arg, shape, strides, dims, pos)`` without the call."""
    cdef ReferenceSelection found = ReferenceSelection.__new__(ReferenceSelection)
    found.kind, found.arg, found.shape, found.strides = kind, arg, shape, strides
    found.dims, found.pos = dims, pos
    return found


# The input pass (``plan_inputs``) as a C call (the output pass: launch_planners_output.pxd).
cdef int plan_inputs_c(PlanningState state) except -1
