# cython: language_level=3
"""C-level declarations of fastplan.engine.builder_boundary (GIL): codes <-> Python objects."""

from libc.stdint cimport int32_t, int64_t

from fastplan._vec cimport Vec
from fastplan.engine.builder_structs cimport Arg, Block, FOp, OutEntry, RegT, Resources, Trace

cdef int32_t settings_code(object settings) except -1
cdef object settings_object(int32_t code)
cdef int settings_flags(int32_t code) except -1
cdef int32_t reason_code(object text) except -1
cdef object reason_text(int32_t code, int64_t estimate, int64_t max_bindings)
cdef int raise_error(int code, int64_t a, int64_t b) except -1
cdef int _check(int rc, Trace* t) except -1
cdef object arg_to_py(const Arg* arg)
cdef int arg_from_py(object value, Arg* out) except -1
cdef int fop_from_py(object op, FOp* out, list cat) except -1
cdef object _regt_to_py(const RegT* e, const Resources* r)
cdef object _out_entry_to_py(const OutEntry* e, const Resources* r)
cdef object _resources_to_py(const Resources* r, object outputs)
cdef object _build_block(Block* b, Resources* r, Vec* outputs, Vec* buffers)
cdef object trace_finish(Trace* t, const int64_t* shape_ref, Py_ssize_t rank)
