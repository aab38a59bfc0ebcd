"""The engine room of refimpl's planner: how one fuser builds a fused trace.

burn counterpart: ``crates/burn-cubecl-fusion/src/engine/`` (its trace/ and codegen/ir.rs,
fuser.rs, settings.rs, scoring.rs), and the ``OperationFuser`` protocol of
``crates/burn-fusion/src/backend.rs``.
"""
