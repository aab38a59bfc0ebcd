"""The fusers room of refimpl's planner: the five built-in fusers and the registry.

burn counterpart: ``crates/burn-cubecl-fusion/src/optim/`` (elemwise/, matmul/, reduce/,
reduce_broadcasted/, nhwc_relayout/) and ``crates/burn-cubecl/src/fusion/registry.rs``.
"""
