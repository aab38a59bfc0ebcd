"""The stream room of refimpl's planner: the queue, its processor, the plan cache, the plan.

burn counterpart: ``crates/burn-fusion/src/stream/`` (queue/, execution/, store/,
context.rs).
"""
