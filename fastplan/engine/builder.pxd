# cython: language_level=3
"""C-level declarations of fastplan.engine.builder: the ``def`` twins of refimpl's builder
classes, each showing C structs of ``builder_structs.pxd`` (where the builder's split and the
cores' conventions are described)."""

from fastplan.engine.builder_structs cimport Block, Resources, Trace


cdef object trace_handle(Trace* t)


cdef class LocalVariablePool:
    cdef Block* b  # the block whose ``locals`` and ``counts`` this pool shows (counted ref)


cdef class ResourcesBuilder:
    cdef Resources* r  # counted ref


cdef class FuseBlockBuilder:
    cdef Block* b  # counted ref


cdef class TraceFuser:
    cdef Trace* t  # counted ref
