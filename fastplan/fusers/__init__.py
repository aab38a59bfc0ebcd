"""The fusers room of fastplan: the five built-in fusers and the registry.

Mirrors ``refimpl/planner/fusers/``: every module under the same name.

burn counterpart: ``crates/burn-cubecl-fusion/src/optim/`` and
``crates/burn-cubecl/src/fusion/registry.rs``.
"""
