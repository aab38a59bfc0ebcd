"""The launch room of refimpl's planner: launch planning and the one walk over a plan's steps.

burn counterpart: ``crates/burn-cubecl-fusion/src/engine/launch/`` (base.rs, input.rs,
output.rs, layout.rs, vectorization/), with burn-fusion's handle container
(``crates/burn-fusion/src/handle.rs``) as the simulated memory launch planning uses.
"""
