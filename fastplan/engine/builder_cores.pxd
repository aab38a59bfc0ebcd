# cython: language_level=3
"""C-level declarations of fastplan.engine.builder_cores (the ``nogil`` cores; conventions:
``builder_structs.pxd``)."""

from libc.stdint cimport int32_t, int64_t, uint8_t

from fastplan._vec cimport Log, Vec
from fastplan.engine.builder_structs cimport Arg, Block, FOp, Resources, Trace
from fastplan.stream.relative cimport TensorC

# the block cores (refimpl FuseBlockBuilder / LocalVariablePool methods)
cdef int _push_id(Vec* v, int64_t tid, Log* log) noexcept nogil
cdef int _locals_create(Block* b, uint8_t ty, int64_t tid, Log* log, Arg* out) noexcept nogil
cdef int _block_output(Block* b, Resources* r, const TensorC* t, Log* log,
                       Arg* out) noexcept nogil
cdef int _block_multi_block_variable(Block* b, int64_t block_pos, const TensorC* t,
                                     bint global_, Log* log, Arg* out,
                                     bint* found) noexcept nogil
cdef int _block_input(Block* b, Resources* r, const TensorC* t, Log* log,
                      Arg* out) noexcept nogil
cdef int _block_input_swap_dims(Block* b, Resources* r, const TensorC* t,
                                const TensorC* output, int64_t d0, int64_t d1, Log* log,
                                Arg* out) noexcept nogil
cdef int _block_input_reshaped(Block* b, Resources* r, const TensorC* t, const TensorC* output,
                               Log* log, Arg* out) noexcept nogil
cdef int _block_tensor_writes(const Block* b, const Resources* r, Vec* buffers, Vec* result,
                              int64_t* count) noexcept nogil
cdef Py_ssize_t _out_insert(Vec* outputs, int64_t tid, uint8_t ty, Py_ssize_t pos,
                            uint8_t from_buffers) noexcept nogil
cdef int _block_build_writes(const Block* b, const Resources* r, Vec* outputs, Vec* buffers,
                             Vec* writes) noexcept nogil
cdef int _set_shape(Vec* v, const int64_t* shape, Py_ssize_t rank) noexcept nogil

# the trace cores (refimpl TraceFuser methods)
cdef Py_ssize_t trace_num_ops_fused(const Trace* t) noexcept nogil
cdef int trace_estimate_bindings(Trace* t, int64_t* estimate) noexcept nogil
cdef int trace_io_counts(Trace* t, int64_t* reads, int64_t* writes,
                         int64_t* penalty) noexcept nogil
cdef int64_t trace_num_mb_local_inputs(const Trace* t) noexcept nogil
cdef int trace_fuse_dropped(Trace* t, const TensorC* tensor) noexcept nogil
cdef int trace_fuse_operation(Trace* t, const FOp* op, const Arg* cat,
                              Py_ssize_t n_cat) noexcept nogil
cdef int trace_input(Trace* t, const TensorC* tensor, Arg* out) noexcept nogil
cdef int trace_output(Trace* t, const TensorC* tensor, Arg* out) noexcept nogil
cdef int trace_input_unhandled(Trace* t, const TensorC* tensor, Arg* out) noexcept nogil
cdef int trace_output_unhandled(Trace* t, const TensorC* tensor, Arg* out) noexcept nogil
cdef int trace_input_indexed(Trace* t, const TensorC* tensor, Arg* out) noexcept nogil
cdef int trace_input_swap_dims(Trace* t, const TensorC* tensor, const TensorC* output,
                               int64_t d0, int64_t d1, Arg* out) noexcept nogil
cdef int trace_input_reshaped(Trace* t, const TensorC* tensor, const TensorC* output,
                              Arg* out) noexcept nogil
cdef int trace_scalar(Trace* t, int64_t placeholder, bint is_int, uint8_t ty,
                      Arg* out) noexcept nogil
cdef int trace_next_block(Trace* t, const int64_t* shape_ref, Py_ssize_t rank,
                          int32_t settings) noexcept nogil
cdef int trace_block_local_input(Trace* t, const TensorC* tensor, int64_t block_pos,
                                 bint global_, Arg* out) noexcept nogil
cdef int trace_output_nhwc_layout(Trace* t, int64_t tensor_id, const int64_t* permutation,
                                  Py_ssize_t rank) noexcept nogil
