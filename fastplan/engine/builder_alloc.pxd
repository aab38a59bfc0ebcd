# cython: language_level=3
"""C-level declarations of fastplan.engine.builder_alloc (the lifecycle of a trace's structs;
NULL when memory runs out)."""

from libc.stdint cimport int32_t

from fastplan.engine.builder_structs cimport Block, Resources, Trace

cdef Block* block_new(int32_t settings) noexcept nogil
cdef Block* block_clone(const Block* b) noexcept nogil
cdef void block_decref(Block* b) noexcept nogil
cdef Resources* res_new() noexcept nogil
cdef Resources* res_clone(const Resources* r) noexcept nogil
cdef void res_decref(Resources* r) noexcept nogil
cdef Trace* trace_new(int32_t settings) noexcept nogil
cdef Trace* trace_clone(const Trace* t) noexcept nogil
cdef void trace_decref(Trace* t) noexcept nogil
cdef int trace_clear(Trace* t, int32_t settings) noexcept nogil
