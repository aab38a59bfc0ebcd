"""The engine room of fastplan: how one fuser builds a fused trace, in C structs.

Mirrors ``refimpl/planner/engine/``: ``builder``, ``trace_fuser`` and ``scoring`` under the
same names; ``trace``, ``fuse_ir``, ``settings`` and ``fuser`` are plain data both sides share.

burn counterpart: ``crates/burn-cubecl-fusion/src/engine/`` (its trace/, fuser.rs,
scoring.rs).
"""
