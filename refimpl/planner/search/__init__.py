"""The search room of refimpl's planner: blocks of ops, their merging, the stream optimizer.

burn counterpart: ``crates/burn-fusion/src/search/`` (block.rs, merging.rs, graph/,
optimization/).
"""
