"""WGSL code generation: the source text of every kernel, printed from tables into skeletons.

Shared by every kernel family:

* ``types`` (``WGSL_TYPE``), ``literals`` (typed literals, ``ExprCtx``), ``ops`` (the
  expression table ``WGSL_EXPR``/``FUSE_EXPR``) and ``helpers`` (multi-statement WGSL
  functions);
* ``render``: kernel rendering (bindings, the metadata word layout, index math, filling
  ``skeletons/*.wgsl``).

The kernel families:

* fused element-wise: ``emit`` (``emit_block``), ``fuse_io`` (its body) and
  ``fused_signature`` (what a fused kernel is specialised on);
* fused matmul: ``matmul_fused`` (the forms; the epilogue is ``emit``'s block), ``matmul_tiled``
  (the register-tiled main loop) and ``matmul_body`` (what they share);
* standalone, one per op (``gpu.runtime.unfused`` launches them): ``elementwise``, ``movement``,
  ``reduce``, ``matmul`` and ``module_ops``.
"""
