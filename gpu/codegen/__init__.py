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
* standalone, one per op (``gpu.runtime.unfused`` launches them): ``elementwise``, ``movement``,
  ``reduce`` and ``matmul``.
"""
